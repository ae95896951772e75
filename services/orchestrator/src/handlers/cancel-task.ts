import { isTerminal, statusName } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { CancelTaskRequest, CancelTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { toTaskProto } from '../domain/records';
import type { HandlerContext } from './context';
import { taskIdOf } from './task-id';

/** Longest cancel reason accepted, in characters: it becomes the task's status reason. */
const maxReasonChars = 10_000;

/**
 * CancelTask: a task running here is stopped by its runner; one that waits
 * (for a slot or a person) is taken and cancelled here; one another replica
 * drives gets a cancel request, which that replica acts on when it renews
 * its lease.
 */
export function cancelTask(context: HandlerContext) {
  return async (request: CancelTaskRequest, call: Pick<CallContext, 'deadline'>): Promise<CancelTaskResponse> => {
    const taskId = taskIdOf(request.taskId);
    const reason = request.reason.trim() === '' ? 'cancelled by the user' : request.reason.trim();
    if (reason.length > maxReasonChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `reason is ${reason.length} characters; at most ${maxReasonChars} are accepted`);
    if (reason.includes('\0')) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'reason contains a NUL character; send plain text');
    const { store, scheduler } = context;
    const task = await store.tasks.get(taskId);
    if (isTerminal(task.status)) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} already ended (${statusName(task.status)}); nothing to cancel`);
    const active = scheduler.runningTask(task.id);
    if (active !== undefined) {
      active.controller.abort(reason);
      return { task: toTaskProto(await active.done, false) };
    }
    if (scheduler.dequeue(task.id) || (await store.leases.claim({ ids: [task.id] }, context.leaseMs)).length > 0) {
      const controller = new AbortController();
      controller.abort(reason);
      return { task: toTaskProto((await context.runner.drive(task.id, controller.signal)).task, false) };
    }
    await store.leases.requestCancel(task.id, reason);
    const deadline = Math.min(call.deadline, Date.now() + context.leaseMs * 2);
    for (;;) {
      const latest = await store.tasks.get(task.id);
      if (isTerminal(latest.status)) return { task: toTaskProto(latest, false) };
      if (Date.now() >= deadline) {
        throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `task ${task.id} is driven by another orchestrator, which has not stopped it yet; the cancel is recorded and will take effect`, { retryable: true });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
}
