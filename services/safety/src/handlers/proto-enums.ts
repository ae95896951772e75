import { Confidence as ProtoConfidence, SafetyVerdict, Severity as ProtoSeverity } from '@ratchet/contracts';
import { Confidence, Severity, Verdict } from '../domain/findings';

/** A finding's severity as the contract spells it; code, command and dependency checks report in the same terms. */
export const severityToProto: Readonly<Record<Severity, ProtoSeverity>> = {
  [Severity.INFO]: ProtoSeverity.SEVERITY_INFO,
  [Severity.LOW]: ProtoSeverity.SEVERITY_LOW,
  [Severity.MEDIUM]: ProtoSeverity.SEVERITY_MEDIUM,
  [Severity.HIGH]: ProtoSeverity.SEVERITY_HIGH,
  [Severity.CRITICAL]: ProtoSeverity.SEVERITY_CRITICAL,
};

/** A finding's confidence as the contract spells it. */
export const confidenceToProto: Readonly<Record<Confidence, ProtoConfidence>> = {
  [Confidence.LOW]: ProtoConfidence.CONFIDENCE_LOW,
  [Confidence.MEDIUM]: ProtoConfidence.CONFIDENCE_MEDIUM,
  [Confidence.HIGH]: ProtoConfidence.CONFIDENCE_HIGH,
};

/** A verdict, or a finding's action, as the contract spells it. */
export const verdictToProto: Readonly<Record<Verdict, SafetyVerdict>> = {
  [Verdict.ALLOW]: SafetyVerdict.SAFETY_VERDICT_ALLOW,
  [Verdict.WARN]: SafetyVerdict.SAFETY_VERDICT_WARN,
  [Verdict.BLOCK]: SafetyVerdict.SAFETY_VERDICT_BLOCK,
};
