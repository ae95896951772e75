import { describe, expect, it } from '@jest/globals';
import { StopReason, TaskStatus, TestCaseStatus, TestEdits, type TestReport } from '@ratchet/contracts';
import { effectiveBudget, remainingTokens } from '../src/domain/budget';
import { InputKind } from '../src/domain/inputs';
import { Effect, needsGeneratedTests, nextAction, testsEditable } from '../src/domain/next-action';
import { userTestsOnlyLabel } from '../src/domain/policy';
import { failingTestsOf, failureText, judgeProgress, ProgressVerdict } from '../src/domain/progress';
import { afterReflection, firstStop, StopMoment, stopConditions } from '../src/domain/stop-conditions';
import { at, iteration, plan, policy, report, stateIn, task, usage } from './fixtures';

const budget = (maxIterations: number, maxTokens = 0, maxCostUsd = 0, seconds = 0) => ({ maxIterations, maxTokens, maxCostUsd, maxWallTime: seconds > 0 ? { seconds, nanos: 0 } : undefined });
const fingerprint = (errorSignature: string) => ({ errorSignature, failingTests: ['t'] });
const context = (overrides: Parameters<typeof task>[0], iterations = [iteration(1)], elapsedMs = 0) => ({ task: task({ currentIteration: 1, ...overrides }), iterations, policy, elapsedMs });

describe('stop conditions', () => {
  it('are one list, each with its reason and the moments it is checked at', () => {
    expect(stopConditions.map((condition) => [condition.name, condition.reason])).toEqual([
      ['no-progress', StopReason.STOP_REASON_NO_PROGRESS],
      ['max-iterations', StopReason.STOP_REASON_MAX_ITERATIONS],
      ['replan-limit', StopReason.STOP_REASON_NO_PROGRESS],
      ['no-tests', StopReason.STOP_REASON_ERROR],
      ['token-budget', StopReason.STOP_REASON_TOKEN_BUDGET],
      ['cost-budget', StopReason.STOP_REASON_COST_BUDGET],
      ['wall-time', StopReason.STOP_REASON_WALL_TIME],
    ]);
  });

  it('stop on iterations only when one would begin', () => {
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ budget: budget(1) }))).toBeUndefined();
    expect(firstStop(StopMoment.BEFORE_ITERATION, context({ budget: budget(1) }))).toEqual({ condition: 'max-iterations', reason: StopReason.STOP_REASON_MAX_ITERATIONS, detail: 'reached the maximum of 1 iterations without passing tests' });
    expect(firstStop(StopMoment.AFTER_REFLECTION, context({ budget: budget(1) }))?.condition).toBe('max-iterations');
    expect(firstStop(StopMoment.BEFORE_ITERATION, context({ budget: budget(2) }))).toBeUndefined();
  });

  it('stop on tokens, cost and wall time before any model call, with the task default when the task sets none', () => {
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ budget: budget(5, 100), usage: usage(100) }))).toMatchObject({ condition: 'token-budget', detail: 'used 100 of 100 tokens' });
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ budget: budget(5, 0, 0.01), usage: usage(1, 0.02) }))).toMatchObject({ condition: 'cost-budget', detail: 'spent $0.0200 of the $0.0100 budget' });
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ budget: budget(5, 0, 0, 60) }, [iteration(1)], 61_000))).toMatchObject({ condition: 'wall-time', detail: 'ran 61 s of the 60 s wall-time budget' });
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, { ...context({ usage: usage(1e9, 1e6) }, [iteration(1)], 1e9) })).toBeUndefined();
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, { ...context({ usage: usage(50) }), policy: { ...policy, defaultBudget: { ...policy.defaultBudget, maxTokens: 50 } } })?.condition).toBe('token-budget');
    // After a reflection only the loop's own limits apply; a spent token budget stops the next model call.
    expect(firstStop(StopMoment.AFTER_REFLECTION, context({ budget: budget(5, 100), usage: usage(100) }))).toBeUndefined();
  });

  it('stop on no progress and on the re-plan limit after a reflection', () => {
    const same = [1, 2, 3].map((number) => iteration(number, { fingerprint: fingerprint('E: x'), error: { code: 'TESTS_FAILED', message: 'the test run timed out', retryable: false, signature: 'E: x', detail: '' } }));
    expect(firstStop(StopMoment.AFTER_REFLECTION, context({ currentIteration: 3 }, same))).toMatchObject({ condition: 'no-progress', detail: 'the same failure 3 times in a row: the test run timed out' });
    expect(firstStop(StopMoment.AFTER_REFLECTION, context({ currentIteration: 2, replanCount: 2 }, same.slice(0, 2)))).toMatchObject({ condition: 'replan-limit' });
    expect(firstStop(StopMoment.AFTER_REFLECTION, context({ currentIteration: 2, replanCount: 1 }, same.slice(0, 2)))).toBeUndefined();
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ currentIteration: 3 }, same))).toBeUndefined();
  });

  it('stop before the tests when there are none to run, and only then', () => {
    expect(firstStop(StopMoment.BEFORE_TESTS, context({ acceptanceTests: [], generatedTests: [], testCommand: [] }))).toMatchObject({ condition: 'no-tests', reason: StopReason.STOP_REASON_ERROR });
    expect(firstStop(StopMoment.BEFORE_TESTS, context({ acceptanceTests: [], generatedTests: [], testCommand: ['pytest'] }))).toBeUndefined();
    expect(firstStop(StopMoment.BEFORE_MODEL_CALL, context({ acceptanceTests: [], generatedTests: [], testCommand: [] }))).toBeUndefined();
  });
});

describe('afterReflection: the loop’s one choice between stopping, re-planning and coding again', () => {
  const same = [1, 2].map((number) => iteration(number, { fingerprint: fingerprint('E: x') }));
  const other = [iteration(1, { fingerprint: fingerprint('E: x') }), iteration(2, { fingerprint: fingerprint('E: y') })];
  const asks = { replanRecommended: true, rootCause: 'the plan splits the work wrongly' };
  const fine = { replanRecommended: false, rootCause: 'off by one' };
  it('stops first when a stop condition holds', () => {
    expect(afterReflection(context({ currentIteration: 2, budget: budget(2) }, other), fine)).toMatchObject({ next: 'stop', stop: { condition: 'max-iterations' } });
    expect(afterReflection(context({ currentIteration: 2, replanCount: 2 }, same), fine)).toMatchObject({ next: 'stop', stop: { condition: 'replan-limit' } });
  });
  it('re-plans on the same failure twice, or when the reflector asks and re-plans are left', () => {
    expect(afterReflection(context({ currentIteration: 2, replanCount: 1 }, same), fine)).toMatchObject({ next: 'replan', reason: expect.stringContaining('the same failure twice in a row') });
    expect(afterReflection(context({ currentIteration: 2, replanCount: 1 }, other), asks)).toEqual({ next: 'replan', reason: 'the reflector recommends a new plan: the plan splits the work wrongly' });
    // No re-plans left: the reflector's wish is not a stop, the loop codes again.
    expect(afterReflection(context({ currentIteration: 2, replanCount: 2 }, other), asks)).toEqual({ next: 'code' });
    expect(afterReflection(context({ currentIteration: 2 }, other), fine)).toEqual({ next: 'code' });
  });
});

describe('nextAction', () => {
  it('names the effect of each status, and nothing to run for waiting and ended tasks', () => {
    const now = at(5);
    expect(nextAction({ task: task(), iterations: [] }, policy, now)).toEqual({ kind: 'input', input: { kind: InputKind.START, at: now } });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_RETRIEVING), policy, now)).toEqual({ kind: 'run', effect: Effect.RETRIEVE });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_PLANNING), policy, now)).toEqual({ kind: 'run', effect: Effect.PLAN });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_CODING), policy, now)).toEqual({ kind: 'run', effect: Effect.CODE });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK), policy, now)).toEqual({ kind: 'run', effect: Effect.CHECK_SAFETY });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [] }), policy, now)).toEqual({ kind: 'run', effect: Effect.WRITE_TESTS });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_TESTING), policy, now)).toEqual({ kind: 'run', effect: Effect.RUN_TESTS });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_REFLECTING), policy, now)).toEqual({ kind: 'run', effect: Effect.REFLECT });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_LEARNING), policy, now)).toEqual({ kind: 'run', effect: Effect.LEARN });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_REVIEWING), policy, now)).toEqual({ kind: 'run', effect: Effect.REVIEW });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_AWAITING_APPROVAL), policy, now)).toEqual({ kind: 'wait' });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_AWAITING_ANSWER), policy, now)).toEqual({ kind: 'wait' });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_SUCCEEDED), policy, now)).toEqual({ kind: 'done' });
  });

  it('checks the stop conditions before model-backed effects only', () => {
    const spent = { budget: budget(1, 10), usage: usage(10) };
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_PLANNING, { budget: budget(1) }), policy, at(5))).toMatchObject({ kind: 'input', input: { kind: InputKind.STOPPED, reason: StopReason.STOP_REASON_MAX_ITERATIONS } });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_CODING, spent), policy, at(5))).toMatchObject({ kind: 'input', input: { kind: InputKind.STOPPED, reason: StopReason.STOP_REASON_TOKEN_BUDGET } });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK, spent), policy, at(5))).toEqual({ kind: 'run', effect: Effect.CHECK_SAFETY });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_TESTING, spent), policy, at(5))).toEqual({ kind: 'run', effect: Effect.RUN_TESTS });
    expect(nextAction(stateIn(TaskStatus.TASK_STATUS_LEARNING, spent), policy, at(5))).toEqual({ kind: 'run', effect: Effect.LEARN });
  });

  it('fails a task that has no tests to run when generated tests are off', () => {
    const userOnly = stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [], labels: { [userTestsOnlyLabel]: 'user' } });
    expect(nextAction(userOnly, policy, at(5))).toMatchObject({ kind: 'input', input: { kind: InputKind.STOPPED, reason: StopReason.STOP_REASON_ERROR, detail: expect.stringContaining('no tests to run') } });
  });

  it("runs a project's own test command instead of writing tests, even with no test files", () => {
    const ownCommand = stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [], testCommand: ['npm', 'test'] });
    expect(needsGeneratedTests(ownCommand)).toBe(false);
    expect(nextAction(ownCommand, policy, at(5))).toEqual({ kind: 'run', effect: Effect.RUN_TESTS });
  });

  it('unlocks the acceptance tests only when the task allows it or the first plan read the goal as asking', () => {
    const tests = [{ path: 'tests/test_a.py', content: '' }];
    const asking = { ...plan, changesTests: true, changesTestsReason: 'update the tests' };
    expect(testsEditable(task({ acceptanceTests: tests }))).toBe(false);
    expect(testsEditable(task({ acceptanceTests: tests, plan }))).toBe(false);
    expect(testsEditable(task({ acceptanceTests: tests, plan: asking }))).toBe(true);
    expect(testsEditable(task({ acceptanceTests: tests, plan: asking, testEdits: TestEdits.TEST_EDITS_PROTECTED }))).toBe(false);
    expect(testsEditable(task({ acceptanceTests: tests, testEdits: TestEdits.TEST_EDITS_ALLOWED }))).toBe(true);
  });
});

describe('budgets and progress', () => {
  it('take unset budget values from the defaults and give a call the rest of the tokens', () => {
    const defaults = { maxIterations: 10, maxTokens: 0, maxCostUsd: 0, maxWallTimeMs: 0 };
    expect(effectiveBudget(budget(3, 0, 0.5, 60), defaults)).toEqual({ maxIterations: 3, maxTokens: 0, maxCostUsd: 0.5, maxWallTimeMs: 60_000 });
    expect(effectiveBudget(undefined, defaults)).toEqual(defaults);
    expect(remainingTokens({ ...defaults, maxTokens: 100 }, usage(30))).toBe(70);
    expect(remainingTokens({ ...defaults, maxTokens: 100 }, usage(300))).toBe(1);
    expect(remainingTokens(defaults, usage(30))).toBeUndefined();
  });

  it('judge only an unbroken run of the same signature and failing tests', () => {
    const same = fingerprint('E: x');
    expect(judgeProgress([same, same], 2, 3)).toEqual({ verdict: ProgressVerdict.REPLAN, repeats: 2 });
    expect(judgeProgress([same, same, same], 2, 3)).toEqual({ verdict: ProgressVerdict.STOP, repeats: 3 });
    expect(judgeProgress([same, { ...same, failingTests: [] }], 2, 3).verdict).toBe(ProgressVerdict.CONTINUE);
    expect(judgeProgress([same, same, fingerprint('E: y'), same], 2, 3).verdict).toBe(ProgressVerdict.CONTINUE);
  });

  it('describe a failure by its first failing test and assertion, not by the normalised signature', () => {
    expect(failureText(report(1, 3), '1/3 tests passed')).toBe('tests/test_calc.py::test_1: assert -1 == 3 (and 1 more failing test(s))');
    expect(failureText(report(2, 3), '')).toBe('tests/test_calc.py::test_2: assert -1 == 3');
    expect(failureText(undefined, 'the test run timed out')).toBe('the test run timed out');
  });

  it('list failing and erroring tests by suite and name, sorted', () => {
    const cases = {
      cases: [
        { name: 'z', suite: 's', status: TestCaseStatus.TEST_CASE_STATUS_FAILED },
        { name: 'ok', suite: 's', status: TestCaseStatus.TEST_CASE_STATUS_PASSED },
        { name: 'a', suite: '', status: TestCaseStatus.TEST_CASE_STATUS_ERRORED },
      ],
    } as TestReport;
    expect(failingTestsOf(cases)).toEqual(['a', 's::z']);
    expect(failingTestsOf(undefined)).toEqual([]);
  });
});
