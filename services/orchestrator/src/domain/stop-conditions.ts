import { firstStopRule, type StopRule } from '@ratchet/agent';
import { StopReason } from '@ratchet/contracts';
import { effectiveBudget, type EffectiveBudget } from './budget';
import { InputKind, type InputOf } from './inputs';
import type { LoopPolicy } from './policy';
import { failureText, judgeProgress, ProgressVerdict, type FailureFingerprint } from './progress';
import type { IterationRecord, TaskRecord } from './records';
import { unavailableText } from './summaries';

/**
 * When stop conditions are evaluated: before a model call of a running
 * iteration, before a new iteration begins (planning), before its tests
 * run, and after a reflection, where the loop chooses between coding again,
 * re-planning and stopping (`afterReflection`).
 */
export const StopMoment = {
  BEFORE_MODEL_CALL: 'before-model-call',
  BEFORE_ITERATION: 'before-iteration',
  /** Before the tests of an iteration run (none are generated first). */
  BEFORE_TESTS: 'before-tests',
  AFTER_REFLECTION: 'after-reflection',
} as const;
export type StopMoment = (typeof StopMoment)[keyof typeof StopMoment];

/** What a stop condition looks at. */
export interface StopContext {
  readonly task: TaskRecord;
  /** The task's iterations, oldest first, the one just reflected on included. */
  readonly iterations: readonly IterationRecord[];
  readonly policy: LoopPolicy;
  /** Wall time since the task started, ms. */
  readonly elapsedMs: number;
}

/** What a stop condition checks: the task as stored, and its budget with the defaults filled in. */
export interface StopCheck extends StopContext {
  readonly budget: EffectiveBudget;
}

/**
 * One way a task stops, on the loops' shared `StopRule` shape (the coder's
 * tool loop has its own list): `check` says why the task must stop now (its
 * status reason), or undefined while it may go on.
 */
export interface StopCondition extends StopRule<StopCheck> {
  /** The stop reason the task ends with. */
  readonly reason: StopReason;
  readonly moments: readonly StopMoment[];
}

export interface StopVerdict {
  readonly condition: string;
  readonly reason: StopReason;
  readonly detail: string;
}

/**
 * The same failure in a row, as no-progress detection judges the
 * iterations so far (by signature), with the last failure as people read it.
 */
export function progressOf(context: Pick<StopContext, 'iterations' | 'policy'>): { verdict: ProgressVerdict; repeats: number; failure: string } {
  const failed = context.iterations.filter((iteration) => iteration.fingerprint !== undefined);
  const fingerprints = failed.map((iteration) => iteration.fingerprint as FailureFingerprint);
  const { replanAfter, stopAfter } = context.policy.noProgress;
  const last = failed.at(-1);
  return { ...judgeProgress(fingerprints, replanAfter, stopAfter), failure: last === undefined ? '' : failureText(last.testReport, last.error?.message ?? '') };
}

/** Whether the task may still be re-planned: the one place the re-plan limit is read. */
export function replansLeft(task: Pick<TaskRecord, 'replanCount'>, policy: Pick<LoopPolicy, 'maxReplans'>): boolean {
  return task.replanCount < policy.maxReplans;
}

const beforeAnyModelCall = [StopMoment.BEFORE_MODEL_CALL, StopMoment.BEFORE_ITERATION] as const;

/**
 * Every reason a task stops before its tests pass, in the order they are
 * checked. The first that holds at a moment ends the task.
 */
export const stopConditions: readonly StopCondition[] = [
  {
    name: 'no-progress',
    reason: StopReason.STOP_REASON_NO_PROGRESS,
    moments: [StopMoment.AFTER_REFLECTION],
    check: (context) => {
      const progress = progressOf(context);
      return progress.verdict === ProgressVerdict.STOP ? `the same failure ${progress.repeats} times in a row: ${progress.failure}` : undefined;
    },
  },
  {
    name: 'max-iterations',
    reason: StopReason.STOP_REASON_MAX_ITERATIONS,
    moments: [StopMoment.BEFORE_ITERATION, StopMoment.AFTER_REFLECTION],
    check: ({ task, budget }) => (task.currentIteration >= budget.maxIterations ? `reached the maximum of ${budget.maxIterations} iterations without passing tests` : undefined),
  },
  {
    name: 'replan-limit',
    reason: StopReason.STOP_REASON_NO_PROGRESS,
    moments: [StopMoment.AFTER_REFLECTION],
    check: (context) => {
      const progress = progressOf(context);
      if (progress.verdict !== ProgressVerdict.REPLAN || replansLeft(context.task, context.policy)) return undefined;
      return `no progress after ${context.task.replanCount} re-plan(s): the same failure twice in a row: ${progress.failure}`;
    },
  },
  {
    name: 'no-tests',
    reason: StopReason.STOP_REASON_ERROR,
    moments: [StopMoment.BEFORE_TESTS],
    check: ({ task }) =>
      task.acceptanceTests.length + task.generatedTests.length === 0 && task.testCommand.length === 0
        ? 'there are no tests to run: supply acceptance tests, a test command or allow generated tests'
        : undefined,
  },
  {
    name: 'token-budget',
    reason: StopReason.STOP_REASON_TOKEN_BUDGET,
    moments: beforeAnyModelCall,
    check: ({ task, budget }) => {
      const tokens = task.usage.promptTokens + task.usage.completionTokens;
      return budget.maxTokens > 0 && tokens >= budget.maxTokens ? `used ${tokens} of ${budget.maxTokens} tokens` : undefined;
    },
  },
  {
    name: 'cost-budget',
    reason: StopReason.STOP_REASON_COST_BUDGET,
    moments: beforeAnyModelCall,
    check: ({ task, budget }) =>
      budget.maxCostUsd > 0 && task.usage.costUsd >= budget.maxCostUsd ? `spent $${task.usage.costUsd.toFixed(4)} of the $${budget.maxCostUsd.toFixed(4)} budget` : undefined,
  },
  {
    name: 'wall-time',
    reason: StopReason.STOP_REASON_WALL_TIME,
    moments: beforeAnyModelCall,
    check: ({ elapsedMs, budget }) =>
      budget.maxWallTimeMs > 0 && elapsedMs >= budget.maxWallTimeMs ? `ran ${Math.round(elapsedMs / 1000)} s of the ${Math.round(budget.maxWallTimeMs / 1000)} s wall-time budget` : undefined,
  },
];

/** The first stop condition that holds at `moment`, or undefined while the task may go on. */
export function firstStop(moment: StopMoment, context: StopContext): StopVerdict | undefined {
  const budget = effectiveBudget(context.task.budget, context.policy.defaultBudget);
  const stop = firstStopRule(
    stopConditions.filter((condition) => condition.moments.includes(moment)),
    { ...context, budget },
  );
  return stop === undefined ? undefined : { condition: stop.rule.name, reason: stop.rule.reason, detail: stop.detail };
}

/** What the loop does after a reflection. */
export type NextAfterReflection = { readonly next: 'stop'; readonly stop: StopVerdict } | { readonly next: 'replan'; readonly reason: string } | { readonly next: 'code' };

/**
 * The loop's choice after a reflection, in one place: stop when a stop
 * condition holds (no progress, the iteration limit, a re-plan wanted with
 * none left); else re-plan when the same failure came twice in a row, or
 * the reflector recommends it and re-plans are left; else code again.
 * `context.iterations` include the one just reflected on.
 */
export function afterReflection(context: StopContext, reflection: { readonly replanRecommended: boolean; readonly rootCause: string }): NextAfterReflection {
  const stop = firstStop(StopMoment.AFTER_REFLECTION, context);
  if (stop !== undefined) return { next: 'stop', stop };
  const progress = progressOf(context);
  // A REPLAN verdict with no re-plans left was a stop above ('replan-limit').
  if (progress.verdict === ProgressVerdict.REPLAN) return { next: 'replan', reason: `the same failure twice in a row: ${progress.failure}` };
  if (reflection.replanRecommended && replansLeft(context.task, context.policy)) return { next: 'replan', reason: `the reflector recommends a new plan: ${reflection.rootCause}` };
  return { next: 'code' };
}

/** Wall time of a task at `now`, ms: from its start (or submission, before it started). */
export function elapsedMs(task: Pick<TaskRecord, 'startedAt' | 'createdAt'>, now: Date): number {
  return now.getTime() - (task.startedAt ?? task.createdAt).getTime();
}

/** How long a phase may go on waiting for a service (or the database) that is gone, and what ends the wait. */
export interface WaitLimit {
  /** When the phase stops waiting and the task ends. */
  readonly until: Date;
  /** True when the task's wall-time budget runs out before the phase's own wait limit. */
  readonly wallTime: boolean;
}

/**
 * Until when a phase whose dependency has been unavailable since `since`
 * may wait for it: `maxWaitMs` after `since`, or the end of the task's
 * wall-time budget when that comes first (a wait does not stretch the budget).
 */
export function waitLimit(task: Pick<TaskRecord, 'startedAt' | 'createdAt' | 'budget'>, policy: Pick<LoopPolicy, 'defaultBudget'>, since: Date, maxWaitMs: number): WaitLimit {
  const own = since.getTime() + Math.max(0, maxWaitMs);
  const { maxWallTimeMs } = effectiveBudget(task.budget, policy.defaultBudget);
  const budgetEnd = (task.startedAt ?? task.createdAt).getTime() + maxWallTimeMs;
  return maxWallTimeMs > 0 && budgetEnd < own ? { until: new Date(budgetEnd), wallTime: true } : { until: new Date(own), wallTime: false };
}

/** What was unavailable, and since when: the input a phase gives up with when its wait reaches its limit. */
export interface Outage {
  /** A service's name (`memory`) or `database`. */
  readonly dependency: string;
  readonly code: string;
  readonly message: string;
  readonly since: Date;
}

/**
 * The input that ends a wait at its limit (`now` is at or past
 * `limit.until`): the wall-time budget stops the task; the phase's own limit
 * fails it with a reason naming the dependency ("memory service unavailable
 * for 5m: no responders on ...").
 */
export function waitEnded(limit: WaitLimit, outage: Outage, task: Pick<TaskRecord, 'startedAt' | 'createdAt' | 'budget'>, policy: Pick<LoopPolicy, 'defaultBudget'>, now: Date): InputOf<typeof InputKind.STOPPED> | InputOf<typeof InputKind.ERRORED> {
  const unavailable = `${unavailableText(outage.dependency, now.getTime() - outage.since.getTime())}: ${outage.message}`;
  if (!limit.wallTime) return { kind: InputKind.ERRORED, at: now, code: outage.code, message: unavailable };
  const { maxWallTimeMs } = effectiveBudget(task.budget, policy.defaultBudget);
  const detail = `ran ${Math.round(elapsedMs(task, now) / 1000)} s of the ${Math.round(maxWallTimeMs / 1000)} s wall-time budget; ${unavailable}`;
  return { kind: InputKind.STOPPED, at: now, reason: StopReason.STOP_REASON_WALL_TIME, detail };
}
