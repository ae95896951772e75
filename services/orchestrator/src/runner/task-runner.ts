import { phaseName, phaseOfStatus, redactText, statusName } from '@ratchet/agent';
import type { TaskEvent } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { withSpan } from '@ratchet/telemetry';
import type { TaskStore } from '../adapters/store';
import type { Decision } from '../domain/decide';
import { decide } from '../domain/decide';
import { InputKind, type TaskInput } from '../domain/inputs';
import { nextAction } from '../domain/next-action';
import type { LoopPolicy } from '../domain/policy';
import type { TaskState } from '../domain/records';
import type { PhaseContext, PhaseRunner } from './phases';
import type { Effect } from '../domain/next-action';

/** Publishes stored events to live readers (the bus's task event stream). */
export type EventPublisher = (events: readonly TaskEvent[]) => Promise<void>;

/**
 * Abort reason that stops a runner without recording anything: the task is
 * handed to another orchestrator (shutdown, lost lease) and goes on there.
 */
export const handOver: unique symbol = Symbol('hand over');

/** First and longest pause after a retryable failure, ms. */
const pauseBaseMs = 500;
const pauseMaxMs = 15_000;

/** The part of the store the runner uses: read a task and its iterations, write a decision. */
export interface RunnerStore {
  readonly tasks: Pick<TaskStore['tasks'], 'get'>;
  readonly iterations: Pick<TaskStore['iterations'], 'list'>;
  readonly transitions: { save(before: TaskState['task'], decision: Decision): Promise<{ events: TaskEvent[]; version: number }> };
}

export interface TaskRunnerOptions {
  readonly store: RunnerStore;
  readonly phases: Readonly<Partial<Record<Effect, PhaseRunner>>>;
  readonly policy: LoopPolicy;
  readonly publish: EventPublisher;
  readonly now?: () => Date;
  /**
   * Times in a row a phase that failed with a retryable error (a service or
   * the database briefly gone) is run again after a backoff (0.5 s doubling
   * to 15 s) before the failure ends the task. Default 0: fail at once, as
   * embedded mode wants when Docker is down.
   */
  readonly maxPauses?: number;
  /** Told when a task pauses, so operators see an outage in the logs. */
  readonly logger?: { warn(details: object, message: string): void };
  /**
   * Removes secrets from an error message before it is stored, shown or sent
   * as an event (a provider may echo the API key it refused). Default: the
   * built-in redaction rules (`redactText`).
   */
  readonly redact?: (text: string) => string;
}

/**
 * The effect runner: for a task, asks `nextAction` what to do, runs that
 * phase, gives what it found to `decide`, and stores the decision (task,
 * iterations, events) in one transaction before the next phase starts.
 * Nothing else in the orchestrator writes a running task's state.
 */
export class TaskRunner {
  private readonly now: () => Date;

  constructor(private readonly options: TaskRunnerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Runs the task until it ends or waits on a person. An aborted `signal`
   * cancels it (its reason, if a string, is recorded), except with the
   * reason `handOver`, which stops running and leaves the task as stored for
   * another runner. A retryable failure pauses the task: the stored state is
   * reloaded after a backoff and the phase runs again. Errors that end the
   * task are recorded on it.
   *
   * @throws AppError ABORTED when another orchestrator took the task over
   *   (its lease was lost); CANCELLED when handed over while the database
   *   was unreachable.
   */
  async drive(taskId: string, signal: AbortSignal): Promise<TaskState> {
    let state = await this.load(taskId, signal);
    let enteredAt = this.now();
    let pauses = 0;
    for (;;) {
      const action = nextAction(state, this.options.policy, this.now());
      if (action.kind === 'done') return state;
      // A task waiting on a person is cancelled like any other; otherwise it is left as stored, and the decision starts a runner again.
      if (signal.aborted) {
        if (signal.reason === handOver) return state;
        return this.apply(state, { kind: InputKind.CANCELLED, at: this.now(), reason: cancelReason(signal) });
      }
      if (action.kind === 'wait') return state;
      try {
        // Progress of the phase (tool steps) is stored as it comes, each on the state the last one left.
        const progress = async (step: TaskInput) => {
          state = await this.apply(state, step);
        };
        const input = action.kind === 'input' ? action.input : await this.run(action.effect, state, signal, { enteredAt, progress });
        const before = state.task.status;
        state = await this.apply(state, input);
        if (state.task.status !== before) enteredAt = this.now();
        pauses = 0;
      } catch (error) {
        if (signal.aborted && signal.reason === handOver) return state;
        const appError = AppError.from(error);
        if (appError.code === ErrorCode.ABORTED) throw appError;
        // What the failed phase did was not stored, so whatever happens next starts from the stored state.
        if (signal.aborted) return this.apply(await this.load(taskId, signal), { kind: InputKind.CANCELLED, at: this.now(), reason: cancelReason(signal) });
        if (appError.isRetryable && pauses < (this.options.maxPauses ?? 0)) {
          pauses += 1;
          const waitMs = Math.min(pauseMaxMs, pauseBaseMs * 2 ** Math.min(pauses - 1, 6));
          this.options.logger?.warn({ taskId, status: statusName(state.task.status), code: appError.code, err: appError.message, pause: pauses, retryInMs: waitMs }, 'task paused');
          await sleepUnlessAborted(waitMs, signal);
          state = await this.load(taskId, signal);
          enteredAt = this.now();
          continue;
        }
        const stored = await this.load(taskId, signal);
        state = await this.apply(stored, { kind: InputKind.ERRORED, at: this.now(), code: appError.code, message: appError.message });
      }
    }
  }

  /** Decides `input` for `state`, stores the decision, publishes its events and returns the new state. */
  async apply(state: TaskState, input: TaskInput): Promise<TaskState> {
    // Every message a phase reports passes here on its way into the task's record, events and status.
    const redact = this.options.redact ?? redactText;
    const clean = 'message' in input && typeof input.message === 'string' ? ({ ...input, message: redact(input.message) } as TaskInput) : input;
    const decision = decide(state, clean, this.options.policy);
    const saved = await this.options.store.transitions.save(state.task, decision);
    if (saved.events.length > 0) await this.options.publish(saved.events);
    const changed = new Map(decision.iterations.map((iteration) => [iteration.number, iteration]));
    const known = state.iterations.filter((iteration) => !changed.has(iteration.number));
    return { task: { ...decision.task, version: saved.version }, iterations: [...known, ...changed.values()].sort((left, right) => left.number - right.number) };
  }

  private run(effect: Effect, state: TaskState, signal: AbortSignal, phase: PhaseContext): Promise<TaskInput> {
    const runner = this.options.phases[effect];
    if (runner === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${state.task.id} is ${statusName(state.task.status)}, and this orchestrator has no runner for '${effect}' yet`);
    return withSpan(`phase ${phaseName(phaseOfStatus(state.task.status))}`, { attributes: { 'ratchet.task_id': state.task.id, 'ratchet.iteration': state.task.currentIteration, 'ratchet.effect': effect } }, async (span) => {
      const input = await runner(state, signal, phase);
      const usage = 'usage' in input ? input.usage : undefined;
      span.setAttribute('ratchet.tokens', usage === undefined ? 0 : usage.promptTokens + usage.completionTokens);
      span.setAttribute('ratchet.cost_usd', usage?.costUsd ?? 0);
      return input;
    });
  }

  /** The task and its iterations as stored; waits out a database outage (retryable errors) until `signal` aborts. */
  private async load(taskId: string, signal: AbortSignal): Promise<TaskState> {
    const { store } = this.options;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const task = await store.tasks.get(taskId);
        return { task, iterations: await store.iterations.list(task.id) };
      } catch (error) {
        const appError = AppError.from(error);
        if (!appError.isRetryable || signal.aborted) {
          throw signal.aborted && appError.isRetryable ? new AppError(ErrorCode.CANCELLED, `task ${taskId} was handed over while the database was unreachable`, { cause: error }) : appError;
        }
        await sleepUnlessAborted(Math.min(pauseMaxMs, pauseBaseMs * 2 ** Math.min(attempt, 6)), signal);
      }
    }
  }
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function cancelReason(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : 'cancelled';
}
