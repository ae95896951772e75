import { TestCaseStatus, type TestReport } from '@ratchet/contracts';

/** One failed iteration, as no-progress detection sees it. */
export interface FailureFingerprint {
  readonly errorSignature: string;
  /** Names of failing and erroring tests, sorted. */
  readonly failingTests: readonly string[];
}

export const ProgressVerdict = { CONTINUE: 'continue', REPLAN: 'replan', STOP: 'stop' } as const;
export type ProgressVerdict = (typeof ProgressVerdict)[keyof typeof ProgressVerdict];

/**
 * What failed, as people and models should read it: the first failing
 * test with the first line of its assertion, and how many failed; else the
 * error message. The normalised error signature is for matching, not this.
 */
export function failureText(report: TestReport | undefined, errorMessage: string): string {
  const failing = (report?.cases ?? []).filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const first = failing[0];
  if (first === undefined) return errorMessage.trim() === '' ? 'an unknown failure' : errorMessage.trim();
  const name = first.suite ? `${first.suite}::${first.name}` : first.name;
  const assertion = first.failureMessage.split('\n').map((line) => line.trim()).find((line) => line !== '') ?? 'failed';
  const more = failing.length > 1 ? ` (and ${failing.length - 1} more failing test(s))` : '';
  return `${name}: ${assertion.length > 300 ? `${assertion.slice(0, 299)}…` : assertion}${more}`;
}

/** Longest traceback excerpt in `failureEvidence`, characters. */
const maxEvidenceChars = 1_500;

/**
 * The failure with its evidence, for a model re-planning after it: the
 * `failureText` line, then an excerpt of the first failing test's traceback
 * (or of the run's output when there is no report).
 */
export function failureEvidence(report: TestReport | undefined, errorMessage: string, output: string): string {
  const first = (report?.cases ?? []).find((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const detail = (first === undefined ? output : first.failureDetail || first.failureMessage).trim();
  const excerpt = detail.length > maxEvidenceChars ? `…${detail.slice(-maxEvidenceChars)}` : detail;
  return [failureText(report, errorMessage), excerpt].filter((part) => part !== '').join('\n');
}

/** The failing and erroring test names of a report, sorted, as `suite::name`. */
export function failingTestsOf(report: TestReport | undefined): string[] {
  if (report === undefined) return [];
  return report.cases
    .filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED)
    .map((testCase) => (testCase.suite ? `${testCase.suite}::${testCase.name}` : testCase.name))
    .sort();
}

/**
 * No-progress detection over the failed iterations so far, oldest first:
 * the same failing tests with the same error signature in the last
 * `replanAt` iterations asks for a re-plan, in the last `stopAt` ends the
 * task (the loop's policy sets both: 2 and 3 by default).
 */
export function judgeProgress(history: readonly FailureFingerprint[], replanAt: number, stopAt: number): { verdict: ProgressVerdict; repeats: number } {
  const last = history[history.length - 1];
  if (last === undefined) return { verdict: ProgressVerdict.CONTINUE, repeats: 0 };
  let repeats = 0;
  for (let index = history.length - 1; index >= 0; index -= 1) {
    if (!sameFailure(history[index], last)) break;
    repeats += 1;
  }
  if (repeats >= stopAt) return { verdict: ProgressVerdict.STOP, repeats };
  if (repeats === replanAt) return { verdict: ProgressVerdict.REPLAN, repeats };
  return { verdict: ProgressVerdict.CONTINUE, repeats };
}

function sameFailure(left: FailureFingerprint | undefined, right: FailureFingerprint): boolean {
  if (left === undefined) return false;
  return left.errorSignature === right.errorSignature && left.failingTests.length === right.failingTests.length && left.failingTests.every((name, index) => name === right.failingTests[index]);
}
