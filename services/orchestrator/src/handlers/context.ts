import type { ProjectProfile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { TaskStore } from '../adapters/store';
import type { TaskInput } from '../domain/inputs';
import type { LoopPolicy } from '../domain/policy';
import type { TaskRecord } from '../domain/records';
import type { Committed, TaskRunner, EventPublisher } from '../runner/task-runner';
import type { Scheduler } from '../scheduler';

/** What the RPC handlers share. */
export interface HandlerContext {
  readonly store: TaskStore;
  readonly scheduler: Scheduler;
  readonly runner: TaskRunner;
  readonly policy: LoopPolicy;
  /** The project profiles tasks may name (config/profiles/*.yaml), by name. */
  readonly profiles: readonly ProjectProfile[];
  readonly publish: EventPublisher;
  readonly now: () => Date;
  /** How long a lease lasts without renewal, ms. */
  readonly leaseMs: number;
  /**
   * Live events of a task (the bus's task event stream), used by WatchTask
   * only as a signal that new events are stored. Without it, WatchTask polls.
   */
  readonly live?: (taskId: string) => Promise<AsyncIterable<unknown> & { stop(): Promise<void> }>;
}

/**
 * Stores a handler's input for a waiting task, on the runner's write path
 * (`Scheduler.commit`). A task that changed after the handler read and
 * checked it is FAILED_PRECONDITION, saying what was under way (`doing`,
 * e.g. "it was being resumed").
 */
export async function commitInput(context: HandlerContext, task: TaskRecord, input: TaskInput, doing: string, options: { readonly clearCancelRequest?: boolean } = {}): Promise<Committed> {
  try {
    return await context.scheduler.commit(task, input, options);
  } catch (error) {
    if (AppError.from(error).code !== ErrorCode.ABORTED) throw error;
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} changed while ${doing}; \`ratchet show ${task.id}\` shows where it is`, { cause: error });
  }
}
