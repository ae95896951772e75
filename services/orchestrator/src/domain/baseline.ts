import { TestCaseStatus, type TestReport } from '@ratchet/contracts';
import { failingTestsOf } from './progress';

/**
 * How an attempt's test run compares with the project's tests before any
 * change (the baseline, SWE-bench's FAIL_TO_PASS / PASS_TO_PASS): test ids
 * as `suite::name`, sorted.
 */
export interface BaselineJudgement {
  /** Whether the attempt passes, judged against the baseline. */
  readonly passed: boolean;
  /** Failed before the change and pass now. */
  readonly fixed: readonly string[];
  /** Failed before the change and still fail: pre-existing, never the attempt's failure on their own. */
  readonly preExisting: readonly string[];
  /** Fail now but did not fail before (passed, or did not exist): what the attempt broke. */
  readonly newlyBroken: readonly string[];
  /** Pass now and did not exist before: tests the attempt added (a regression test of its fix). */
  readonly added: readonly string[];
}

/** The failing tests of a baseline run, when it ran and has any; empty otherwise. */
export function baselineFailures(baseline: TestReport | undefined): string[] {
  return baseline?.parsed === true ? failingTestsOf(baseline) : [];
}

/**
 * Judges a test run against the baseline. Without a usable baseline, or
 * when every test passed before the change, the run's own verdict stands
 * (`runPassed`: all tests pass). When some failed before, the attempt
 * passes when it breaks nothing (no test fails that did not fail before)
 * and fixes at least one of the failures: the tests the goal is about are
 * among them, and the others are pre-existing, reported but never counted
 * against a correct change. When the goal's bug has no failing test yet
 * (a bug report, not "make these tests pass"), a change that breaks nothing
 * and adds tests that pass (its regression tests) passes too; a change that
 * neither fixes nor adds a test does not. A run without a parsed report
 * keeps its own verdict, and a run that passed outright always passes: the baseline only
 * forgives old failures, it never fails a green run (a collection error
 * before the change, say a test importing a function the goal adds, has no
 * passing counterpart to be "fixed" by).
 */
export function judgeAgainstBaseline(baseline: TestReport | undefined, report: TestReport | undefined, runPassed: boolean): BaselineJudgement {
  const before = new Set(baselineFailures(baseline));
  const now = report?.parsed === true ? failingTestsOf(report) : [];
  const present = new Set(report?.cases.filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_PASSED).map(idOf) ?? []);
  const fixed = [...before].filter((id) => present.has(id)).sort();
  const preExisting = now.filter((id) => before.has(id));
  const newlyBroken = now.filter((id) => !before.has(id));
  const existed = new Set(baseline?.cases.map(idOf) ?? []);
  const added = [...present].filter((id) => !existed.has(id)).sort();
  if (before.size === 0 || report?.parsed !== true) return { passed: runPassed, fixed, preExisting, newlyBroken, added };
  return { passed: runPassed || (newlyBroken.length === 0 && (fixed.length > 0 || added.length > 0) && report.total > 0), fixed, preExisting, newlyBroken, added };
}

/** One line for a phase summary and the final report: what the run fixed, what it broke, what failed before. */
export function baselineText(judgement: BaselineJudgement): string {
  const parts = [
    judgement.fixed.length > 0 ? `fixed ${judgement.fixed.length}: ${listed(judgement.fixed)}` : '',
    judgement.added.length > 0 ? `added ${judgement.added.length} passing: ${listed(judgement.added)}` : '',
    judgement.newlyBroken.length > 0 ? `newly failing ${judgement.newlyBroken.length}: ${listed(judgement.newlyBroken)}` : '',
    judgement.preExisting.length > 0 ? `${judgement.preExisting.length} pre-existing failure(s), failing before the change too: ${listed(judgement.preExisting)}` : '',
  ];
  return parts.filter((part) => part !== '').join('; ');
}

function idOf(testCase: { suite: string; name: string }): string {
  return testCase.suite ? `${testCase.suite}::${testCase.name}` : testCase.name;
}

function listed(ids: readonly string[]): string {
  return ids.length > 5 ? `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more` : ids.join(', ');
}
