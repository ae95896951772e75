import { Confidence as ProtoConfidence, SafetyVerdict } from '@ratchet/contracts';
import { Confidence, Verdict } from '../domain/findings';

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
