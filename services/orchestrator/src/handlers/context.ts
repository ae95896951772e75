import type { ProjectProfile } from '@ratchet/contracts';
import type { TaskStore } from '../adapters/store';
import type { LoopPolicy } from '../domain/policy';
import type { TaskRunner, EventPublisher } from '../runner/task-runner';
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

/** The lease a task a handler moves on gets: this replica's if it has a slot, else nobody's (another replica takes it). */
export function leaseFor(context: HandlerContext) {
  return context.scheduler.hasSlot() ? ({ lease: 'take', leaseMs: context.leaseMs } as const) : ({ lease: 'free' } as const);
}
