import { Severity, type ReviewFinding } from '@ratchet/contracts';
import { SeverityName, type Finding } from '../domain/findings';

/** A severity as the contract spells it. */
export const severityToProto: Readonly<Record<SeverityName, Severity>> = {
  [SeverityName.INFO]: Severity.SEVERITY_INFO,
  [SeverityName.LOW]: Severity.SEVERITY_LOW,
  [SeverityName.MEDIUM]: Severity.SEVERITY_MEDIUM,
  [SeverityName.HIGH]: Severity.SEVERITY_HIGH,
  [SeverityName.CRITICAL]: Severity.SEVERITY_CRITICAL,
};

/** A scanner finding's severity in domain terms; an unset or unknown one counts as medium (recorded, never blocking on its own). */
export function severityFromProto(severity: Severity): SeverityName {
  for (const [name, value] of Object.entries(severityToProto)) if (value === severity) return name as SeverityName;
  return SeverityName.MEDIUM;
}

/** A domain finding as the ReviewFinding message. */
export function findingToProto(finding: Finding): ReviewFinding {
  return { ...finding, severity: severityToProto[finding.severity] };
}
