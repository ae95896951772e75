import { errorSignature, splitErrorMessage } from './error-signature';
import type { ErrorDetail, SafetyFinding, TestReport } from '@ratchet/contracts';
import { TestCaseStatus } from '@ratchet/contracts';

/**
 * A deterministic signature of why an attempt failed, computed from the
 * evidence rather than asked of the model, so equal failures compare equal:
 * safety findings by rule, else the first failing test's error, else the
 * phase error, else a missing or empty report.
 */
export function failureSignature(report: TestReport | undefined, error: ErrorDetail | undefined, findings: readonly SafetyFinding[]): string {
  if (findings.length > 0) return `safety: ${[...new Set(findings.map((finding) => finding.ruleId))].sort().join(', ')}`;
  const failing = report?.cases.find((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  if (failing !== undefined) {
    const { errorType, message } = splitErrorMessage(failing.failureMessage || failing.failureDetail);
    return errorSignature(errorType, message) || `test failed: ${errorSignature('', failing.name)}`;
  }
  if (error !== undefined && (error.signature !== '' || error.message !== '')) return error.signature || errorSignature(error.code, error.message);
  if (report === undefined || !report.parsed) return 'no test report';
  if (report.total === 0) return 'no tests collected';
  return 'tests did not pass';
}
