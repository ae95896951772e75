import { describe, expect, it } from '@jest/globals';
import { TestCaseStatus, type TestReport } from '@ratchet/contracts';
import { baselineFailures, baselineText, judgeAgainstBaseline } from '../src/domain/baseline';

/** A parsed pytest report of `cases` (name -> passed). */
function run(cases: Record<string, boolean>): TestReport {
  const entries = Object.entries(cases);
  const failed = entries.filter(([, passed]) => !passed).length;
  return {
    framework: 'pytest',
    total: entries.length,
    passed: entries.length - failed,
    failed,
    errored: 0,
    skipped: 0,
    duration: undefined,
    parsed: true,
    parseError: '',
    cases: entries.map(([name, passed]) => ({
      name,
      suite: 'tests.test_mod',
      file: '',
      status: passed ? TestCaseStatus.TEST_CASE_STATUS_PASSED : TestCaseStatus.TEST_CASE_STATUS_FAILED,
      duration: undefined,
      failureMessage: passed ? '' : 'AssertionError',
      failureDetail: '',
    })),
  };
}

describe('judging a test run against the baseline', () => {
  const before = run({ test_goal: false, test_fixture: false, test_other: true });

  it('passes a change that fixes a failing test and breaks nothing, with the other old failure pre-existing', () => {
    const judgement = judgeAgainstBaseline(before, run({ test_goal: true, test_fixture: false, test_other: true }), false);
    expect(judgement).toEqual({ passed: true, fixed: ['tests.test_mod::test_goal'], preExisting: ['tests.test_mod::test_fixture'], newlyBroken: [], added: [] });
    expect(baselineText(judgement)).toBe('fixed 1: tests.test_mod::test_goal; 1 pre-existing failure(s), failing before the change too: tests.test_mod::test_fixture');
  });

  it('fails a change that breaks a test that passed before, whatever it fixed', () => {
    const judgement = judgeAgainstBaseline(before, run({ test_goal: true, test_fixture: false, test_other: false }), false);
    expect(judgement.passed).toBe(false);
    expect(judgement.newlyBroken).toEqual(['tests.test_mod::test_other']);
  });

  it('fails a change that fixes none of the failures, and one that adds a failing test', () => {
    expect(judgeAgainstBaseline(before, before, false).passed).toBe(false);
    expect(judgeAgainstBaseline(before, run({ test_goal: false, test_fixture: false, test_other: true, test_new: false }), false).passed).toBe(false);
    expect(judgeAgainstBaseline(before, run({ test_goal: true, test_fixture: false, test_other: true, test_new: false }), false)).toMatchObject({ passed: false, newlyBroken: ['tests.test_mod::test_new'] });
  });

  it('passes a fix of a bug no test caught yet: it breaks nothing and adds a regression test that passes, with old failures pre-existing', () => {
    const judgement = judgeAgainstBaseline(before, run({ test_goal: false, test_fixture: false, test_other: true, test_regression: true }), false);
    expect(judgement).toEqual({ passed: true, fixed: [], preExisting: ['tests.test_mod::test_fixture', 'tests.test_mod::test_goal'], newlyBroken: [], added: ['tests.test_mod::test_regression'] });
    expect(baselineText(judgement)).toContain('added 1 passing: tests.test_mod::test_regression');
  });

  it('passes a green run even when none of the old failures has a passing counterpart (a collection error the change removed)', () => {
    const collectionError = { ...run({ 'tests.test_textutils': false }), cases: run({ 'tests.test_textutils': false }).cases.map((testCase) => ({ ...testCase, suite: '' })) };
    const green = run({ test_shorten: true, test_slugify: true });
    expect(judgeAgainstBaseline(collectionError, green, true)).toEqual({ passed: true, fixed: [], preExisting: [], newlyBroken: [], added: ['tests.test_mod::test_shorten', 'tests.test_mod::test_slugify'] });
    expect(judgeAgainstBaseline(collectionError, run({ test_shorten: true, test_slugify: false }), false).passed).toBe(false);
  });

  it("keeps the run's own verdict without a baseline, with a baseline that passed, or without a parsed report", () => {
    const allPassed = run({ test_goal: true, test_other: true });
    expect(judgeAgainstBaseline(undefined, run({ test_goal: false }), false).passed).toBe(false);
    expect(judgeAgainstBaseline(allPassed, run({ test_goal: false, test_other: true }), false).passed).toBe(false);
    expect(judgeAgainstBaseline(allPassed, allPassed, true).passed).toBe(true);
    expect(judgeAgainstBaseline(before, { ...before, parsed: false, cases: [] }, false).passed).toBe(false);
    expect(baselineFailures({ ...before, parsed: false })).toEqual([]);
    expect(baselineFailures(before)).toEqual(['tests.test_mod::test_fixture', 'tests.test_mod::test_goal']);
  });
});
