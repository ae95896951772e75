import type { CallContext } from '@ratchet/bus';
import type { WatchTaskRequest, WatchTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { HandlerContext } from './context';
import { taskIdOf } from './task-id';

/**
 * WatchTask: the task's stored events from `from_sequence`, then new ones
 * as they are stored, ending after TaskCompleted (unless
 * `follow_after_completion`) or when the call's signal aborts. The store
 * is the source; the live stream only says when to read it again, so an
 * event whose publication was lost is still sent.
 *
 * @throws AppError INVALID_ARGUMENT without task_id; NOT_FOUND for an unknown task.
 */
export function watchTask(context: Pick<HandlerContext, 'store' | 'live'>) {
  return async function* watchTask(request: WatchTaskRequest, call: Pick<CallContext, 'signal'>): AsyncGenerator<WatchTaskResponse> {
    const taskId = taskIdOf(request.taskId);
    if (request.fromSequence < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `from_sequence is ${request.fromSequence}; use 0 for the whole history`);
    const task = await context.store.tasks.get(taskId);
    let next = Math.max(1, request.fromSequence);
    // Bursts of live events collapse into one read of the store.
    let wake: (() => void) | undefined;
    let pending = false;
    const signalNew = () => {
      pending = true;
      wake?.();
    };
    const reader = await context.live?.(task.id).catch(() => undefined);
    const pump = reader === undefined ? undefined : (async () => {
      const events = reader[Symbol.asyncIterator]();
      while (!(await events.next()).done) signalNew();
    })().catch(() => undefined);
    const onAbort = () => wake?.();
    call.signal.addEventListener('abort', onAbort);
    try {
      while (!call.signal.aborted) {
        pending = false;
        // The stream ends at a TaskCompleted that is the latest event: a resumed
        // task has an older one, followed by its new round.
        let completed = false;
        for (const event of await context.store.events.list(task.id, next)) {
          next = event.sequence + 1;
          yield { event };
          completed = event.payload?.$case === 'taskCompleted';
        }
        if (completed && !request.followAfterCompletion) return;
        if (!pending) {
          // The live stream wakes this up; the timer covers an event whose publication was lost.
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, reader === undefined ? 200 : 2_000).unref();
          });
          wake = undefined;
        }
      }
    } finally {
      call.signal.removeEventListener('abort', onAbort);
      await reader?.stop().catch(() => undefined);
      await pump;
    }
  };
}
