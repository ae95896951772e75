import { isTerminal, isWaiting, statusName } from '@ratchet/agent';
import { TaskStatus, TestEdits } from '@ratchet/contracts';
import { InputKind, type TaskInput } from './inputs';
import { userTestsOnlyLabel, type LoopPolicy } from './policy';
import type { TaskState } from './records';
import { elapsedMs, firstStop, StopMoment } from './stop-conditions';

/** The effects a phase runner performs: each calls services and returns the input it found. */
export const Effect = {
  REPROMPT: 'reprompt',
  RETRIEVE: 'retrieve',
  /** The project's tests on the original workspace, once per workspace task, before its first plan. */
  BASELINE: 'baseline',
  PLAN: 'plan',
  /** The dependency check on the packages the stored plan declares, before its iteration starts. */
  JUDGE_PACKAGES: 'judge-packages',
  CODE: 'code',
  CHECK_SAFETY: 'check-safety',
  REVIEW: 'review',
  AUDIT: 'audit',
  WRITE_TESTS: 'write-tests',
  RUN_TESTS: 'run-tests',
  REFLECT: 'reflect',
  LEARN: 'learn',
} as const;
export type Effect = (typeof Effect)[keyof typeof Effect];

/** What to do with a task next. */
export type NextAction =
  /** Run a phase's effect, then give its input to `decide`. */
  | { readonly kind: 'run'; readonly effect: Effect }
  /** Give this input to `decide` without running anything (a start, a stop condition). */
  | { readonly kind: 'input'; readonly input: TaskInput }
  /** A person decides next (an approval gate, a question); nothing runs. */
  | { readonly kind: 'wait' }
  /** The task has ended. */
  | { readonly kind: 'done' };

/** Effects that call a model: the stop conditions are checked before each. */
const modelBacked: ReadonlySet<Effect> = new Set([Effect.REPROMPT, Effect.PLAN, Effect.CODE, Effect.REVIEW, Effect.AUDIT, Effect.WRITE_TESTS, Effect.REFLECT]);

const effectOf: Readonly<Partial<Record<TaskStatus, Effect>>> = {
  [TaskStatus.TASK_STATUS_REPROMPTING]: Effect.REPROMPT,
  [TaskStatus.TASK_STATUS_RETRIEVING]: Effect.RETRIEVE,
  [TaskStatus.TASK_STATUS_PLANNING]: Effect.PLAN,
  [TaskStatus.TASK_STATUS_CODING]: Effect.CODE,
  [TaskStatus.TASK_STATUS_SAFETY_CHECK]: Effect.CHECK_SAFETY,
  [TaskStatus.TASK_STATUS_REVIEWING]: Effect.REVIEW,
  [TaskStatus.TASK_STATUS_AUDITING]: Effect.AUDIT,
  [TaskStatus.TASK_STATUS_REFLECTING]: Effect.REFLECT,
  [TaskStatus.TASK_STATUS_LEARNING]: Effect.LEARN,
};

/**
 * Whether the task's tests are still to be written by the tester: none yet,
 * and generated tests allowed (not a workspace whose own tests, or own test
 * command, are the tests).
 */
export function needsGeneratedTests(state: TaskState): boolean {
  return state.task.generatedTests.length === 0 && state.task.labels[userTestsOnlyLabel] !== 'user' && state.task.testCommand.length === 0;
}

/**
 * Whether a workspace task's tests are still to be run on the workspace as
 * sent: once per task, before the first plan, when there are tests to run
 * (its own or the user's, or a setup and a test command). A run that gave
 * no usable report is kept too (unparsed), so it is not run again.
 */
export function needsBaseline(state: TaskState): boolean {
  const { task } = state;
  const runsTests = task.acceptanceTests.length + task.generatedTests.length > 0 || (task.setupCommand !== '' && task.testCommand.length > 0);
  return task.workspace.length > 0 && task.baselineReport === undefined && runsTests;
}

/**
 * Whether the model may edit the task's acceptance tests: when the task
 * allows it, or leaves it to the goal and the first plan read the goal as
 * asking to change them. Protected otherwise.
 */
export function testsEditable(task: TaskState['task']): boolean {
  if (task.testEdits === TestEdits.TEST_EDITS_ALLOWED) return true;
  if (task.testEdits === TestEdits.TEST_EDITS_PROTECTED) return false;
  return task.plan?.changesTests === true;
}

/**
 * What the effect runner does next for a task as stored at `now`: the
 * phase its status names, unless a stop condition holds first (checked
 * before every model-backed phase; before planning, also the iteration
 * limit, since a plan begins an iteration).
 */
export function nextAction(state: TaskState, policy: LoopPolicy, now: Date): NextAction {
  const { task } = state;
  if (isTerminal(task.status)) return { kind: 'done' };
  if (isWaiting(task.status)) return { kind: 'wait' };
  if (task.status === TaskStatus.TASK_STATUS_QUEUED) return { kind: 'input', input: { kind: InputKind.START, at: now } };
  let effect = effectOf[task.status];
  if (task.status === TaskStatus.TASK_STATUS_PLANNING && needsBaseline(state)) effect = Effect.BASELINE;
  else if (task.status === TaskStatus.TASK_STATUS_PLANNING && task.unjudgedPlan !== undefined) effect = Effect.JUDGE_PACKAGES;
  if (task.status === TaskStatus.TASK_STATUS_TESTING) {
    if (needsGeneratedTests(state)) effect = Effect.WRITE_TESTS;
    else {
      const stop = firstStop(StopMoment.BEFORE_TESTS, { task, iterations: state.iterations, policy, elapsedMs: elapsedMs(task, now) });
      if (stop !== undefined) return { kind: 'input', input: { kind: InputKind.STOPPED, at: now, reason: stop.reason, detail: stop.detail } };
      effect = Effect.RUN_TESTS;
    }
  }
  if (effect === undefined) return { kind: 'input', input: { kind: InputKind.ERRORED, at: now, code: 'FAILED_PRECONDITION', message: `no phase runs a ${statusName(task.status)} task` } };
  if (modelBacked.has(effect)) {
    const moment = effect === Effect.PLAN ? StopMoment.BEFORE_ITERATION : StopMoment.BEFORE_MODEL_CALL;
    const stop = firstStop(moment, { task, iterations: state.iterations, policy, elapsedMs: elapsedMs(task, now) });
    if (stop !== undefined) return { kind: 'input', input: { kind: InputKind.STOPPED, at: now, reason: stop.reason, detail: stop.detail } };
  }
  return { kind: 'run', effect };
}
