import { isTerminal } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { TaskStore } from './adapters/store';
import type { TaskRecord } from './domain/records';
import type { TaskInput } from './domain/inputs';
import { handOver, type Committed, type TaskRunner } from './runner/task-runner';

export interface SchedulerOptions {
  readonly store: TaskStore;
  readonly runner: TaskRunner;
  /** Tasks run at once; more wait for a slot. */
  readonly maxConcurrentTasks: number;
  /** How long a lease lasts without renewal, ms (renewed every third of it). */
  readonly leaseMs: number;
  /**
   * A replica among others: every this many ms, take over unfinished tasks
   * nobody drives (new ones, and those of a replica that died), and on
   * close hand running tasks over instead of cancelling them. 0 (embedded
   * mode) runs only tasks given to it.
   */
  readonly claimIntervalMs: number;
  /** Called every second with the pending gates whose timeout passed. */
  readonly expireGate: (taskId: string, gateId: string) => Promise<void>;
  /** Called every second with each task whose clarifying questions waited past their deadline. */
  readonly expireQuestions: (taskId: string) => Promise<void>;
  readonly logger?: { error(details: object, message: string): void };
}

interface Running {
  readonly controller: AbortController;
  readonly done: Promise<TaskRecord>;
}

/**
 * Which tasks this replica runs: slots, leases (claim, renew, release),
 * cancels asked of another replica, and the expiry of approval gates and questions.
 */
export class Scheduler {
  private readonly running = new Map<string, Running>();
  /** Tasks leased to this replica, waiting for a free slot. */
  private readonly waiting: string[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  /**
   * Tasks whose run here stopped on an error and left them unfinished, when
   * nothing else will run them (embedded mode): `whenDone` reports the error
   * instead of waiting for an end that never comes.
   */
  private readonly failed = new Map<string, AppError>();
  private closed = false;
  private claiming = false;

  constructor(private readonly options: SchedulerOptions) {
    const { leaseMs, claimIntervalMs } = options;
    this.timers.push(setInterval(() => void this.renew(), Math.max(100, Math.floor(leaseMs / 3))));
    if (this.shared) this.timers.push(setInterval(() => void this.claimFree(), claimIntervalMs));
    this.timers.push(setInterval(() => void this.expireGates(), 1_000));
    for (const timer of this.timers) timer.unref();
    if (this.shared) void this.claimFree();
  }

  /** True for a replica among others (it claims and hands over tasks). */
  get shared(): boolean {
    return this.options.claimIntervalMs > 0;
  }

  /** Whether a task given to this replica now should be kept (leased here) rather than left to whichever replica has a slot. */
  hasSlot(): boolean {
    return !this.shared || this.running.size + this.waiting.length < this.options.maxConcurrentTasks;
  }

  /**
   * Stores a person's (or a timeout's) input for a waiting task through
   * the runner (`TaskRunner.commit`) and lets the task run on: here when a
   * slot is free (this replica takes its lease), else on whichever replica
   * claims it.
   */
  async commit(task: TaskRecord, input: TaskInput, options: { readonly clearCancelRequest?: boolean } = {}): Promise<Committed> {
    const take = this.hasSlot();
    const committed = await this.options.runner.commit(task, input, { ...options, lease: take ? { lease: 'take', leaseMs: this.options.leaseMs } : { lease: 'free' } });
    this.enqueue(take ? task.id : undefined);
    return committed;
  }

  /** Runs a task this replica holds, as soon as a slot is free; without one, only looks for work (a replica among others). */
  enqueue(taskId?: string): void {
    if (taskId !== undefined && !this.running.has(taskId) && !this.waiting.includes(taskId)) this.waiting.push(taskId);
    this.startNext();
  }

  /** The run of a task on this replica, if it is running here. */
  runningTask(taskId: string): Running | undefined {
    return this.running.get(taskId);
  }

  /** Takes a task out of the queue for a slot; true if it was there. */
  dequeue(taskId: string): boolean {
    const queued = this.waiting.indexOf(taskId);
    if (queued >= 0) this.waiting.splice(queued, 1);
    return queued >= 0;
  }

  /**
   * Resolves when the task reaches a terminal status (immediately if it has).
   *
   * @throws AppError with the code of the error its run here stopped on,
   *   when that left it unfinished and nothing else will run it (embedded mode).
   */
  async whenDone(taskId: string): Promise<TaskRecord> {
    for (;;) {
      const active = this.running.get(taskId);
      if (active !== undefined) return active.done;
      const failure = this.failed.get(taskId);
      if (failure !== undefined) {
        throw new AppError(failure.code, `task ${taskId} stopped unfinished: its runner failed: ${failure.message}`, { cause: failure, retryable: false });
      }
      const latest = await this.options.store.tasks.get(taskId);
      if (isTerminal(latest.status)) return latest;
      // Queued behind others: poll the store until a runner finishes it.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops the timers and the running tasks: handed over on a replica among others, cancelled in embedded mode. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.waiting.length = 0;
    const active = [...this.running.values()];
    for (const task of active) task.controller.abort(this.shared ? handOver : 'the orchestrator is shutting down');
    await Promise.allSettled(active.map((task) => task.done));
    if (this.shared) await this.options.store.leases.release().catch((error: unknown) => this.logError({ err: AppError.from(error).message }, 'cannot release task leases; they run out by themselves'));
  }

  private start(taskId: string): void {
    this.failed.delete(taskId);
    const controller = new AbortController();
    const done = this.options.runner
      .drive(taskId, controller.signal)
      .then((state) => state.task)
      .finally(() => {
        this.running.delete(taskId);
        this.startNext();
      });
    done.catch((error: unknown) => {
      const appError = AppError.from(error);
      // Only a replica among others goes on with the task after this run: here it stays as it was left, and whoever waits for it must hear why.
      if (!this.shared) this.failed.set(taskId, appError);
      // Another replica took the task over, or it was handed over during an outage: not a failure.
      if (appError.code === ErrorCode.ABORTED || appError.code === ErrorCode.CANCELLED) return;
      this.logError({ taskId, err: appError.message }, 'task runner failed');
    });
    this.running.set(taskId, { controller, done });
  }

  private startNext(): void {
    while (!this.closed && this.running.size < this.options.maxConcurrentTasks && this.waiting.length > 0) this.start(this.waiting.shift() as string);
    if (this.shared) void this.claimFree();
  }

  /** Takes over unfinished tasks nobody drives, as many as there are free slots. */
  private async claimFree(): Promise<void> {
    const free = this.options.maxConcurrentTasks - this.running.size - this.waiting.length;
    if (this.closed || this.claiming || free <= 0) return;
    this.claiming = true;
    try {
      const ids = await this.options.store.leases.claim({ limit: free }, this.options.leaseMs);
      // The claim also returns tasks this replica already holds: those running or waiting for a slot stay as they are.
      for (const id of ids) if (!this.running.has(id) && !this.waiting.includes(id)) this.start(id);
    } catch (error) {
      this.logError({ err: AppError.from(error).message }, 'cannot take over tasks; trying again');
    } finally {
      this.claiming = false;
    }
  }

  /** Keeps this replica's leases; stops tasks whose lease went to another and acts on cancels asked elsewhere. */
  private async renew(): Promise<void> {
    const held = [...this.running.keys(), ...this.waiting];
    if (this.closed || held.length === 0) return;
    try {
      const kept = await this.options.store.leases.renew(held, this.options.leaseMs);
      for (const id of held) {
        const cancel = kept.get(id);
        const active = this.running.get(id);
        if (cancel === undefined) {
          active?.controller.abort(handOver);
          this.dequeue(id);
        } else if (cancel !== '' && active !== undefined && !active.controller.signal.aborted) {
          active.controller.abort(cancel);
        }
      }
    } catch (error) {
      this.logError({ err: AppError.from(error).message }, 'cannot renew task leases; trying again');
    }
  }

  /** Rejects gates nobody decided within the task's approval timeout, and ends the wait of questions nobody answered in time. */
  private async expireGates(): Promise<void> {
    if (this.closed) return;
    try {
      for (const { taskId, gateId } of await this.options.store.approvals.expired()) await this.options.expireGate(taskId, gateId);
      for (const taskId of await this.options.store.tasks.unansweredPastDeadline()) await this.options.expireQuestions(taskId);
    } catch (error) {
      this.logError({ err: AppError.from(error).message }, 'cannot expire approval gates or questions; trying again');
    }
  }

  private logError(details: object, message: string): void {
    this.options.logger?.error(details, message);
  }
}
