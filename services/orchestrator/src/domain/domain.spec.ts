import { describe, expect, it } from '@jest/globals';
import { StopReason, TaskStatus, TestCaseStatus, type TestReport } from '@ratchet/contracts';
import { effectiveBudget, exhaustedBudget, remainingTokens } from './budget';
import { failingTestsOf, judgeProgress, ProgressVerdict } from './progress';
import { canTransition, isTerminal, statusName, stopReasonName } from './task-state';

const usage = (tokens: number, costUsd = 0) => ({ promptTokens: tokens, completionTokens: 0, costUsd, modelCalls: 1 });
const defaults = { maxIterations: 10, maxTokens: 0, maxCostUsd: 0, maxWallTimeMs: 0 };

describe('task state machine', () => {
  it('follows the loop and allows FAILED/CANCELLED from any live state, nothing from a terminal one', () => {
    expect(canTransition(TaskStatus.TASK_STATUS_QUEUED, TaskStatus.TASK_STATUS_RETRIEVING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_SAFETY_CHECK, TaskStatus.TASK_STATUS_REFLECTING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_TESTING, TaskStatus.TASK_STATUS_LEARNING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_REFLECTING, TaskStatus.TASK_STATUS_PLANNING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_CODING, TaskStatus.TASK_STATUS_TESTING)).toBe(false);
    expect(canTransition(TaskStatus.TASK_STATUS_CODING, TaskStatus.TASK_STATUS_REFLECTING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_QUEUED, TaskStatus.TASK_STATUS_SUCCEEDED)).toBe(false);
    expect(canTransition(TaskStatus.TASK_STATUS_CODING, TaskStatus.TASK_STATUS_CANCELLED)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_FAILED)).toBe(false);
    expect(isTerminal(TaskStatus.TASK_STATUS_CANCELLED)).toBe(true);
    expect(statusName(TaskStatus.TASK_STATUS_SAFETY_CHECK)).toBe('SAFETY_CHECK');
    expect(stopReasonName(StopReason.STOP_REASON_NO_PROGRESS)).toBe('no progress');
  });
});

describe('budgets', () => {
  it('takes unset values from the defaults', () => {
    expect(effectiveBudget({ maxIterations: 3, maxTokens: 0, maxCostUsd: 0.5, maxWallTime: { seconds: 60, nanos: 0 } }, defaults)).toEqual({ maxIterations: 3, maxTokens: 0, maxCostUsd: 0.5, maxWallTimeMs: 60_000 });
    expect(effectiveBudget(undefined, defaults)).toEqual(defaults);
  });

  it('names the first exhausted budget: iterations only when a new one would start', () => {
    const budget = { maxIterations: 2, maxTokens: 1000, maxCostUsd: 0.01, maxWallTimeMs: 60_000 };
    expect(exhaustedBudget(budget, { usage: usage(10), iterations: 2, elapsedMs: 0 })).toBeUndefined();
    expect(exhaustedBudget(budget, { usage: usage(10), iterations: 2, elapsedMs: 0 }, true)?.reason).toBe(StopReason.STOP_REASON_MAX_ITERATIONS);
    expect(exhaustedBudget(budget, { usage: usage(1000), iterations: 1, elapsedMs: 0 })).toMatchObject({ reason: StopReason.STOP_REASON_TOKEN_BUDGET, detail: 'used 1000 of 1000 tokens' });
    expect(exhaustedBudget(budget, { usage: usage(1, 0.02), iterations: 1, elapsedMs: 0 })?.reason).toBe(StopReason.STOP_REASON_COST_BUDGET);
    expect(exhaustedBudget(budget, { usage: usage(1), iterations: 1, elapsedMs: 61_000 })?.reason).toBe(StopReason.STOP_REASON_WALL_TIME);
    expect(exhaustedBudget(defaults, { usage: usage(1e9, 1e6), iterations: 1, elapsedMs: 1e9 })).toBeUndefined();
  });

  it('gives a call the rest of the token budget, at least one token', () => {
    expect(remainingTokens({ ...defaults, maxTokens: 100 }, usage(30))).toBe(70);
    expect(remainingTokens({ ...defaults, maxTokens: 100 }, usage(300))).toBe(1);
    expect(remainingTokens(defaults, usage(30))).toBeUndefined();
  });
});

describe('no-progress detection', () => {
  const same = { errorSignature: 'E: x', failingTests: ['a', 'b'] };
  it('re-plans on the second identical failure in a row and stops on the third', () => {
    expect(judgeProgress([]).verdict).toBe(ProgressVerdict.CONTINUE);
    expect(judgeProgress([same]).verdict).toBe(ProgressVerdict.CONTINUE);
    expect(judgeProgress([same, same])).toEqual({ verdict: ProgressVerdict.REPLAN, repeats: 2 });
    expect(judgeProgress([same, same, same])).toEqual({ verdict: ProgressVerdict.STOP, repeats: 3 });
  });

  it('counts only an unbroken run of the same signature and the same failing tests', () => {
    const otherTests = { ...same, failingTests: ['a'] };
    const otherError = { ...same, errorSignature: 'E: y' };
    expect(judgeProgress([same, otherTests]).verdict).toBe(ProgressVerdict.CONTINUE);
    expect(judgeProgress([same, otherError]).verdict).toBe(ProgressVerdict.CONTINUE);
    expect(judgeProgress([same, same, otherError, same]).verdict).toBe(ProgressVerdict.CONTINUE);
  });

  it('lists failing and erroring tests by suite and name, sorted', () => {
    const report = {
      cases: [
        { name: 'z', suite: 's', status: TestCaseStatus.TEST_CASE_STATUS_FAILED },
        { name: 'ok', suite: 's', status: TestCaseStatus.TEST_CASE_STATUS_PASSED },
        { name: 'a', suite: '', status: TestCaseStatus.TEST_CASE_STATUS_ERRORED },
      ],
    } as TestReport;
    expect(failingTestsOf(report)).toEqual(['a', 's::z']);
    expect(failingTestsOf(undefined)).toEqual([]);
  });
});
