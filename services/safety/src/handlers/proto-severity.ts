import { Severity as ProtoSeverity } from '@ratchet/contracts';
import { Severity } from '../domain/findings';

/** A finding's severity as the contract spells it; code and command checks report in the same terms. */
export const severityToProto: Readonly<Record<Severity, ProtoSeverity>> = {
  [Severity.INFO]: ProtoSeverity.SEVERITY_INFO,
  [Severity.LOW]: ProtoSeverity.SEVERITY_LOW,
  [Severity.MEDIUM]: ProtoSeverity.SEVERITY_MEDIUM,
  [Severity.HIGH]: ProtoSeverity.SEVERITY_HIGH,
  [Severity.CRITICAL]: ProtoSeverity.SEVERITY_CRITICAL,
};
