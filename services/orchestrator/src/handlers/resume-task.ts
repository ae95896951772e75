import { durationFromMs, msOf, statusName } from '@ratchet/agent';
import { TaskStatus, type Budget, type ResumeTaskRequest, type ResumeTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { linkActiveSpan } from '@ratchet/telemetry';
import { effectiveBudget } from '../domain/budget';
import { InputKind } from '../domain/inputs';
import type { LoopPolicy } from '../domain/policy';
import { toTaskProto, type TaskRecord } from '../domain/records';
import { firstStop, StopMoment } from '../domain/stop-conditions';
import { commitInput, type HandlerContext } from './context';
import { taskIdOf } from './task-id';
import { checkBudget } from './validate-submit';

/**
 * The budget of a resumed task: its limits plus what the request adds, and
 * a fresh wall-time allowance from `now` (the added time, or the old limit).
 * 0 stays "no limit".
 */
export function resumedBudget(task: TaskRecord, add: Budget | undefined, policy: LoopPolicy, now: Date): Budget {
  const current = effectiveBudget(task.budget, policy.defaultBudget);
  const addedWallMs = msOf(add?.maxWallTime);
  const allowanceMs = addedWallMs > 0 ? addedWallMs : current.maxWallTimeMs;
  const wallMs = current.maxWallTimeMs <= 0 && addedWallMs <= 0 ? 0 : now.getTime() - (task.startedAt ?? task.createdAt).getTime() + allowanceMs;
  return {
    maxIterations: current.maxIterations + (add?.maxIterations ?? 0),
    maxTokens: current.maxTokens > 0 ? current.maxTokens + (add?.maxTokens ?? 0) : 0,
    maxCostUsd: current.maxCostUsd > 0 ? current.maxCostUsd + (add?.maxCostUsd ?? 0) : 0,
    maxWallTime: durationFromMs(wallMs),
  };
}

/**
 * ResumeTask: a FAILED task goes back to PLANNING, with the hint as the
 * re-plan reason (the planner sees it, and the coder the plan it makes),
 * the additional budget added to its limits and a fresh wall-time
 * allowance from now. Its iterations and lessons stay.
 */
export function resumeTask(context: HandlerContext) {
  return async (request: ResumeTaskRequest): Promise<ResumeTaskResponse> => {
    const taskId = taskIdOf(request.taskId);
    const add = request.additionalBudget;
    checkBudget('additional_budget', add, 'addition');
    const hint = request.hint.trim();
    if (hint.length > 10_000) throw new AppError(ErrorCode.INVALID_ARGUMENT, `hint is ${hint.length} characters; keep it under 10000`);
    if (hint.includes('\0')) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'hint contains a NUL character (\\u0000); send plain text');
    const { store, policy } = context;
    const task = await store.tasks.get(taskId);
    // The resumed phases go on in the task's own trace (its submit's); this call's trace points to it.
    linkActiveSpan(task.traceContext);
    if (task.status !== TaskStatus.TASK_STATUS_FAILED) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}; only a FAILED task can be resumed`);
    const now = context.now();
    const budget = resumedBudget(task, add, policy, now);
    const iterations = await store.iterations.list(task.id);
    // Stop conditions of a new iteration, as planning will check them: refuse a resume that would stop at once.
    const stop = firstStop(StopMoment.BEFORE_ITERATION, { task: { ...task, budget }, iterations, policy, elapsedMs: 0 });
    if (stop !== undefined) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `resuming task ${task.id} would stop at once (${stop.detail}); add to its budget, e.g. ratchet resume ${task.id} --add-iterations 3`);
    }
    const { state } = await commitInput(context, task, { kind: InputKind.RESUMED, at: now, budget, hint }, 'it was being resumed (another resume got there first?)', { clearCancelRequest: true });
    return { task: toTaskProto(state.task, false) };
  };
}
