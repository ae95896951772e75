import { phaseName, phaseOfStatus, statusName } from '@ratchet/agent';
import { redactStrings, redactText } from '@ratchet/redaction';
import type { TaskEvent } from '@ratchet/contracts';
import { AppError, backoffDelay, ErrorCode, sleepUnlessAborted } from '@ratchet/errors';
import { restoreTraceContext, withSpan } from '@ratchet/telemetry';
import { observePhase } from '../adapters/metrics';
import type { TaskStore, TransitionOptions } from '../adapters/store';
import type { Decision } from '../domain/decide';
import { decide } from '../domain/decide';
import { InputKind, type TaskInput } from '../domain/inputs';
import { nextAction } from '../domain/next-action';
import type { LoopPolicy } from '../domain/policy';
import type { TaskRecord, TaskState } from '../domain/records';
import { waitEnded, waitLimit, type Outage } from '../domain/stop-conditions';
import { DependencyError, type PhaseContext, type PhaseRunner } from './phases';
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
  readonly transitions: { save(before: TaskState['task'], decision: Decision, options?: TransitionOptions): Promise<{ events: TaskEvent[]; version: number }> };
}

/** A stored transition: the task's state after it, and the decision it stored (with the gate it decided, if any). */
export interface Committed {
  readonly state: TaskState;
  readonly decision: Decision;
}

export interface TaskRunnerOptions {
  readonly store: RunnerStore;
  readonly phases: Readonly<Partial<Record<Effect, PhaseRunner>>>;
  readonly policy: LoopPolicy;
  readonly publish: EventPublisher;
  readonly now?: () => Date;
  /**
   * How long a phase that fails with a retryable error (no responders on a
   * service's subject, no free database connection) waits for it, ms: it is
   * run again after a backoff (0.5 s doubling to 15 s), each pause recorded
   * as a task event, until it gets through or this long has passed since
   * the first failure (or the task's wall-time budget ends, if sooner); then
   * the task fails naming what was unavailable. Default 0: fail at once, as
   * embedded mode wants when Docker is down.
   */
  readonly maxWaitMs?: number;
  /** Waits between attempts; resolves early when `signal` aborts. Default: a timer (tests pass one that moves their clock). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Told when a task pauses, so operators see an outage in the logs. */
  readonly logger?: { warn(details: object, message: string): void };
  /**
   * Removes secrets from every string a phase reports (`redactStrings`:
   * not code files, ids or a command to approve) before it is stored, shown
   * or sent as an event: a provider may echo the API key it refused, test
   * output may print a token. Default: the built-in rules (`redactText`).
   */
  readonly redact?: (text: string) => string;
}

/**
 * The effect runner: for a task, asks `nextAction` what to do, runs that
 * phase, gives what it found to `decide`, and stores the decision (task,
 * iterations, events) in one transaction before the next phase starts.
 * Input from outside a run (a person's decision or answer, a resume, a
 * timeout) is stored by `commit`, on the same path. Nothing else in the
 * orchestrator writes a task's state (a test checks it).
 */
export class TaskRunner {
  private readonly now: () => Date;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(private readonly options: TaskRunnerOptions) {
    this.now = options.now ?? (() => new Date());
    this.sleep = options.sleep ?? sleepUnlessAborted;
  }

  /**
   * Runs the task until it ends or waits on a person. An aborted `signal`
   * cancels it (its reason, if a string, is recorded), except with the
   * reason `handOver`, which stops running and leaves the task as stored for
   * another runner. A retryable failure pauses the task (recorded as an
   * event): the stored state is reloaded after a backoff and the phase runs
   * again, until `maxWaitMs` after the first failure; the phase's reported
   * duration includes the wait. Errors that end the task are recorded on it.
   *
   * @throws AppError ABORTED when another orchestrator took the task over
   *   (its lease was lost); CANCELLED when handed over while the database
   *   was unreachable.
   */
  async drive(taskId: string, signal: AbortSignal): Promise<TaskState> {
    let state = await this.load(taskId, signal);
    let enteredAt = this.now();
    // The run of retryable failures the current phase is waiting out, if any; it ends when an input is stored.
    let outage: (Outage & { pauses: number }) | undefined;
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
          state = await this.store(state, step);
        };
        const input = action.kind === 'input' ? action.input : await observePhase(state.task.status, signal, () => this.run(action.effect, state, signal, { enteredAt, progress }));
        const before = state.task.status;
        state = await this.store(state, input);
        if (state.task.status !== before) enteredAt = this.now();
        outage = undefined;
      } catch (error) {
        if (signal.aborted && signal.reason === handOver) return state;
        const appError = AppError.from(error);
        // The store's ABORTED: another writer has the task. A service's (a DependencyError) is a failure like any other.
        if (appError.code === ErrorCode.ABORTED && !(appError instanceof DependencyError)) throw appError;
        // What the failed phase did was not stored, so whatever happens next starts from the stored state.
        if (signal.aborted) return this.apply(await this.load(taskId, signal), { kind: InputKind.CANCELLED, at: this.now(), reason: cancelReason(signal) });
        const maxWaitMs = this.options.maxWaitMs ?? 0;
        if (!appError.isRetryable || maxWaitMs <= 0) {
          state = await this.apply(await this.load(taskId, signal), { kind: InputKind.ERRORED, at: this.now(), code: appError.code, message: appError.message });
          continue;
        }
        const at = this.now();
        // The wait is timed from the first failure; what failed last is what the task reports.
        outage = { dependency: dependencyOf(error), code: appError.code, message: appError.message, since: outage?.since ?? at, pauses: (outage?.pauses ?? 0) + 1 };
        // The limit depends only on what a run never changes (start, budget): the state in hand will do.
        const limit = waitLimit(state.task, this.options.policy, outage.since, maxWaitMs);
        if (at.getTime() >= limit.until.getTime()) {
          const stored = await this.load(taskId, signal);
          state = await this.apply(stored, waitEnded(limit, outage, stored.task, this.options.policy, at));
          continue;
        }
        const waitMs = Math.min(backoffDelay(outage.pauses, pauseBaseMs, pauseMaxMs), limit.until.getTime() - at.getTime());
        // Said before reloading: when the database is what is gone, the reload waits for it to return.
        this.options.logger?.warn(
          { taskId, status: statusName(state.task.status), dependency: outage.dependency, code: appError.code, err: appError.message, pause: outage.pauses, waitedMs: at.getTime() - outage.since.getTime(), retryInMs: waitMs },
          'task paused',
        );
        state = await this.recordPause(await this.load(taskId, signal), {
          kind: InputKind.PAUSED,
          at,
          dependency: outage.dependency,
          code: appError.code,
          message: appError.message,
          waitedMs: at.getTime() - outage.since.getTime(),
          retryAt: new Date(at.getTime() + waitMs),
          until: limit.until,
        });
        await this.sleep(waitMs, signal);
        state = await this.load(taskId, signal);
      }
    }
  }

  /**
   * Stores `input` for a task no run here drives (it waits on a person, or
   * it failed), as read and checked by the caller: with its iterations as
   * stored, redacted and decided like a phase's input, saved only if the
   * task is still at the version read (`options` say what happens to its
   * lease), its events published. Waking a runner is the scheduler's
   * (`Scheduler.commit`).
   *
   * @throws AppError ABORTED when the task changed since it was read;
   *   FAILED_PRECONDITION when the gate it decides was decided meanwhile.
   */
  async commit(task: TaskRecord, input: TaskInput, options: TransitionOptions = {}): Promise<Committed> {
    const state = { task, iterations: await this.options.store.iterations.list(task.id) };
    return this.write(state, input, options);
  }

  /** Decides `input` for `state`, stores the decision, publishes its events and returns the new state. */
  async apply(state: TaskState, input: TaskInput): Promise<TaskState> {
    return (await this.write(state, input, {})).state;
  }

  private async write(state: TaskState, input: TaskInput, options: TransitionOptions): Promise<Committed> {
    // Everything a phase or a person reports passes here on its way into the task's record, events and status:
    // error messages, test output, plans, reflections, tool steps, answers (not the code files themselves).
    const clean = redactStrings(input, this.options.redact ?? redactText);
    const decision = decide(state, clean, this.options.policy);
    const saved = await this.options.store.transitions.save(state.task, decision, options);
    if (saved.events.length > 0) await this.options.publish(saved.events);
    const changed = new Map(decision.iterations.map((iteration) => [iteration.number, iteration]));
    const known = state.iterations.filter((iteration) => !changed.has(iteration.number));
    return {
      state: { task: { ...decision.task, version: saved.version }, iterations: [...known, ...changed.values()].sort((left, right) => left.number - right.number) },
      decision,
    };
  }

  /** `apply`, with a retryable failure of the write named as the database's, for the pause it causes (ABORTED, the task taken by another writer, stays as it is). */
  private async store(state: TaskState, input: TaskInput): Promise<TaskState> {
    try {
      return await this.apply(state, input);
    } catch (error) {
      const appError = AppError.from(error);
      throw appError.isRetryable && appError.code !== ErrorCode.ABORTED && !(appError instanceof DependencyError) ? new DependencyError('database', appError) : appError;
    }
  }

  /** Stores a pause as the task's event; one that cannot be stored (the database is what is gone) is only logged. */
  private async recordPause(state: TaskState, input: TaskInput): Promise<TaskState> {
    try {
      return await this.apply(state, input);
    } catch (error) {
      const appError = AppError.from(error);
      if (appError.code === ErrorCode.ABORTED) throw appError;
      this.options.logger?.warn({ taskId: state.task.id, code: appError.code, err: appError.message }, 'cannot record that the task paused');
      return state;
    }
  }

  private run(effect: Effect, state: TaskState, signal: AbortSignal, phase: PhaseContext): Promise<TaskInput> {
    const runner = this.options.phases[effect];
    if (runner === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${state.task.id} is ${statusName(state.task.status)}, and this orchestrator has no runner for '${effect}' yet`);
    // Every phase is a child of the task's submit, not of whatever context started this run (a
    // claim timer, or the task before it in the queue): one task, one trace, across replicas and restarts.
    const parent = restoreTraceContext(state.task.traceContext);
    return withSpan(`phase ${phaseName(phaseOfStatus(state.task.status))}`, { parent, attributes: { 'ratchet.task_id': state.task.id, 'ratchet.iteration': state.task.currentIteration, 'ratchet.effect': effect } }, async (span) => {
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
        await sleepUnlessAborted(backoffDelay(attempt + 1, pauseBaseMs, pauseMaxMs), signal);
      }
    }
  }
}

/** What a retryable failure says was unavailable: the service a phase called or the database (named where they fail), else unknown (''). */
function dependencyOf(error: unknown): string {
  return error instanceof DependencyError ? error.dependency : '';
}

function cancelReason(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : 'cancelled';
}
