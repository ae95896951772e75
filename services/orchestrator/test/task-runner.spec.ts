import { describe, expect, it } from '@jest/globals';
import { LogLevel, Phase, StopReason, TaskStatus, type TaskEvent } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { withSpan } from '@ratchet/telemetry';
import { installInMemoryTracing } from '@ratchet/telemetry/testing';
import type { Decision } from '../src/domain/decide';
import { InputKind, type TaskInput } from '../src/domain/inputs';
import { Effect } from '../src/domain/next-action';
import type { IterationRecord, TaskRecord, TaskState } from '../src/domain/records';
import { DependencyError, phaseRunners, type AgentClients, type PhaseRunner } from '../src/runner/phases';
import { handOver, TaskRunner, type RunnerStore } from '../src/runner/task-runner';
import { at, iteration, phaseSettings, policy, reflection, sampleInput, start, task } from './fixtures';

/** The store the runner sees, in memory: versions checked like the real one, every write recorded. */
class MemoryStore implements RunnerStore {
  readonly writes: Decision[] = [];
  private record: TaskRecord;
  private readonly iterationsByNumber = new Map<number, IterationRecord>();
  private readonly log: TaskEvent[] = [];
  /** Set to make the next writes fail with this error. */
  failWrites?: AppError;
  /** With `failWrites`, how many writes fail before they succeed again; unset: all of them. */
  failingWrites?: number;
  /** How many reads of the task fail as a database that is gone does (each noted in `timeline`). */
  failingReads = 0;
  readonly timeline: string[] = [];

  constructor(initial: TaskRecord) {
    this.record = initial;
  }

  readonly tasks = {
    get: async (id: string) => {
      if (this.failingReads > 0) {
        this.failingReads -= 1;
        this.timeline.push('read failed');
        throw new AppError(ErrorCode.UNAVAILABLE, 'connect ECONNREFUSED');
      }
      return id === this.record.id ? this.record : Promise.reject(new AppError(ErrorCode.NOT_FOUND, `no task ${id}`));
    },
  };
  readonly iterations = { list: async () => [...this.iterationsByNumber.values()].sort((left, right) => left.number - right.number) };
  readonly transitions = {
    save: async (before: TaskRecord, decision: Decision) => {
      if (this.failWrites !== undefined && (this.failingWrites === undefined || this.failingWrites-- > 0)) throw this.failWrites;
      if (before.version !== this.record.version) throw new AppError(ErrorCode.ABORTED, 'changed by someone else');
      const events = decision.events.map((event, index): TaskEvent => ({ ...event, taskId: before.id, sequence: before.version + index + 1 }));
      this.writes.push(decision);
      this.record = { ...decision.task, version: before.version + events.length };
      for (const iteration of decision.iterations) this.iterationsByNumber.set(iteration.number, iteration);
      this.log.push(...events);
      return { events, version: this.record.version };
    },
  };

  get events(): readonly TaskEvent[] {
    return this.log;
  }
}

/** Phase runners that answer from a script, one input per call, and record which effects ran. */
function scripted(script: Partial<Record<Effect, ((state: TaskState) => TaskInput | Promise<TaskInput>)[]>>) {
  const ran: Effect[] = [];
  const phases: Partial<Record<Effect, PhaseRunner>> = {};
  for (const [effect, replies] of Object.entries(script) as [Effect, ((state: TaskState) => TaskInput | Promise<TaskInput>)[]][]) {
    phases[effect] = async (state) => {
      ran.push(effect);
      const reply = replies.shift();
      if (reply === undefined) throw new Error(`the script has no more replies for ${effect}`);
      return reply(state);
    };
  }
  return { phases, ran };
}

const reply = (kind: InputKind) => () => sampleInput(kind);
let clock = 0;
const now = () => at((clock += 1));

describe('TaskRunner with in-memory adapters', () => {
  it('runs the loop: a failed attempt, a reflection, a passing one, then learning; each decision stored before the next phase', async () => {
    const store = new MemoryStore(task());
    const { phases, ran } = scripted({
      [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED)],
      [Effect.PLAN]: [reply(InputKind.PLANNED)],
      [Effect.CODE]: [reply(InputKind.CODED), reply(InputKind.CODED)],
      [Effect.CHECK_SAFETY]: [reply(InputKind.SAFETY_PASSED), reply(InputKind.SAFETY_PASSED)],
      [Effect.WRITE_TESTS]: [reply(InputKind.TESTS_WRITTEN)],
      [Effect.RUN_TESTS]: [reply(InputKind.TESTS_FAILED), reply(InputKind.TESTS_PASSED)],
      [Effect.REFLECT]: [reply(InputKind.REFLECTED)],
      [Effect.LEARN]: [reply(InputKind.LEARNED)],
    });
    const published: TaskEvent[] = [];
    const runner = new TaskRunner({ store, phases, policy, now, publish: async (events) => void published.push(...events) });
    const final = await runner.drive('task-1', new AbortController().signal);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_SUCCEEDED, currentIteration: 2, stopReason: StopReason.STOP_REASON_TESTS_PASSED });
    expect(ran).toEqual([Effect.RETRIEVE, Effect.PLAN, Effect.CODE, Effect.CHECK_SAFETY, Effect.WRITE_TESTS, Effect.RUN_TESTS, Effect.REFLECT, Effect.CODE, Effect.CHECK_SAFETY, Effect.RUN_TESTS, Effect.LEARN]);
    // One write per input, the start included; every stored event was published, in order.
    expect(store.writes).toHaveLength(ran.length + 1);
    expect(published).toEqual(store.events);
    expect(published.map((event) => event.sequence)).toEqual(store.events.map((_, index) => index + 2));
    expect(final.iterations.map((iteration) => iteration.number)).toEqual([1, 2]);
  });

  it("runs every phase as a child of the submit's stored span, whatever span is active when the run starts", async () => {
    const tracing = installInMemoryTracing();
    try {
      const submit = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const store = new MemoryStore(task({ traceContext: { traceparent: submit } }));
      const { phases } = scripted({ [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED)], [Effect.PLAN]: [() => Promise.reject(new AppError(ErrorCode.INVALID_ARGUMENT, 'no plan'))] });
      const runner = new TaskRunner({ store, phases, policy, now, publish: async () => undefined });
      // A run started from inside another task's work (a slot freed by it) must not join that task's trace.
      await withSpan('another task', {}, () => runner.drive('task-1', new AbortController().signal));
      const phaseSpans = tracing.spans().filter((span) => span.name.startsWith('phase '));
      expect(phaseSpans.map((span) => span.name)).toEqual(['phase retrieving', 'phase planning']);
      for (const span of phaseSpans) {
        expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
        expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
        expect(span.attributes['ratchet.task_id']).toBe('task-1');
      }
      // The failed phase says why on its span.
      expect(phaseSpans[1]!.attributes['error.type']).toBe(ErrorCode.INVALID_ARGUMENT);
    } finally {
      await tracing.shutdown();
    }
  });

  it('checks the stop conditions before a model call: a spent token budget ends the task without calling the coder', async () => {
    const store = new MemoryStore(task({ budget: { maxIterations: 5, maxTokens: 10, maxCostUsd: 0, maxWallTime: undefined } }));
    const { phases, ran } = scripted({
      [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED)],
      [Effect.PLAN]: [reply(InputKind.PLANNED)],
      [Effect.CODE]: [reply(InputKind.CODED)],
    });
    const final = await new TaskRunner({ store, phases, policy, now, publish: async () => undefined }).drive('task-1', new AbortController().signal);
    expect(ran).toEqual([Effect.RETRIEVE, Effect.PLAN]);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_TOKEN_BUDGET, statusReason: 'used 10 of 10 tokens' });
  });

  it('pauses on a retryable failure and runs the phase again from the stored state; a lasting one ends the task', async () => {
    const store = new MemoryStore(task());
    const warnings: object[] = [];
    const { phases, ran } = scripted({
      [Effect.RETRIEVE]: [
        () => {
          throw new AppError(ErrorCode.UNAVAILABLE, 'memory is restarting', { retryable: true });
        },
        reply(InputKind.LESSONS_RETRIEVED),
      ],
      [Effect.PLAN]: [
        () => {
          throw new AppError(ErrorCode.UNAUTHENTICATED, 'bad model key');
        },
      ],
    });
    const runner = new TaskRunner({ store, phases, policy, now, publish: async () => undefined, maxWaitMs: 60_000, sleep: async () => undefined, logger: { warn: (details) => void warnings.push(details) } });
    const final = await runner.drive('task-1', new AbortController().signal);
    expect(ran).toEqual([Effect.RETRIEVE, Effect.RETRIEVE, Effect.PLAN]);
    expect(warnings).toEqual([expect.objectContaining({ status: 'RETRIEVING', code: ErrorCode.UNAVAILABLE, pause: 1 })]);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_ERROR, statusReason: 'PLANNING failed: UNAUTHENTICATED: bad model key' });
  });

  it('records a cancel, leaves a handed-over task as stored, and stops when another writer took the task', async () => {
    const cancelling = new AbortController();
    const store = new MemoryStore(task());
    const { phases } = scripted({
      [Effect.RETRIEVE]: [
        () => {
          cancelling.abort('no longer needed');
          return sampleInput(InputKind.LESSONS_RETRIEVED);
        },
      ],
    });
    const cancelled = await new TaskRunner({ store, phases, policy, now, publish: async () => undefined }).drive('task-1', cancelling.signal);
    expect(cancelled.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CANCELLED, statusReason: 'no longer needed' });

    const handing = new AbortController();
    handing.abort(handOver);
    const waiting = new MemoryStore(task());
    const handed = await new TaskRunner({ store: waiting, phases: {}, policy, now, publish: async () => undefined }).drive('task-1', handing.signal);
    expect(handed.task.status).toBe(TaskStatus.TASK_STATUS_QUEUED);
    expect(waiting.writes).toEqual([]);

    const taken = new MemoryStore(task());
    taken.failWrites = new AppError(ErrorCode.ABORTED, 'no longer leased to this orchestrator');
    await expect(new TaskRunner({ store: taken, phases: {}, policy, now, publish: async () => undefined }).drive('task-1', new AbortController().signal)).rejects.toMatchObject({ code: ErrorCode.ABORTED });
  });

  it('tells each phase when its status was entered, so TESTING is timed from before its tests were written', async () => {
    let clock = 0;
    const seen: [Effect, number][] = [];
    const store = new MemoryStore(task({ status: TaskStatus.TASK_STATUS_SAFETY_CHECK, currentIteration: 1, startedAt: at(0) }));
    await store.transitions.save(await store.tasks.get('task-1'), { task: { ...(await store.tasks.get('task-1')) }, iterations: [iteration(1)], events: [], changed: true });
    const step = (effect: Effect, seconds: number, input: () => TaskInput): PhaseRunner => async (_state, _signal, phase) => {
      seen.push([effect, phase.enteredAt.getTime()]);
      clock = seconds;
      return input();
    };
    const phases = {
      [Effect.CHECK_SAFETY]: step(Effect.CHECK_SAFETY, 10, () => ({ ...sampleInput(InputKind.SAFETY_PASSED), at: at(10) })),
      [Effect.WRITE_TESTS]: step(Effect.WRITE_TESTS, 20, () => ({ ...sampleInput(InputKind.TESTS_WRITTEN), at: at(20) })),
      [Effect.RUN_TESTS]: step(Effect.RUN_TESTS, 30, () => ({ ...sampleInput(InputKind.TESTS_PASSED), at: at(30) })),
      [Effect.LEARN]: step(Effect.LEARN, 40, () => ({ ...sampleInput(InputKind.LEARNED), at: at(40) })),
    };
    await new TaskRunner({ store, phases, policy, now: () => at(clock), publish: async () => undefined }).drive('task-1', new AbortController().signal);
    // Writing the tests does not start a new phase: running them reports when TESTING began.
    expect(seen).toEqual([
      [Effect.CHECK_SAFETY, at(0).getTime()],
      [Effect.WRITE_TESTS, at(10).getTime()],
      [Effect.RUN_TESTS, at(10).getTime()],
      [Effect.LEARN, at(30).getTime()],
    ]);
  });

  it('redacts every string a phase reports before it is stored or published, but not the code', async () => {
    const secret = 'correct-horse-battery-staple';
    const redact = (text: string) => text.replaceAll(secret, '[REDACTED:configured-secret]');
    const store = new MemoryStore(task());
    const planned = sampleInput(InputKind.PLANNED) as Extract<TaskInput, { kind: 'planned' }>;
    const coded = sampleInput(InputKind.CODED) as Extract<TaskInput, { kind: 'coded' }>;
    const failed = sampleInput(InputKind.TESTS_FAILED) as Extract<TaskInput, { kind: 'tests-failed' }>;
    const { phases } = scripted({
      [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED)],
      [Effect.PLAN]: [() => ({ ...planned, plan: { ...planned.plan, summary: `use the key ${secret}` } })],
      [Effect.CODE]: [() => ({ ...coded, files: [{ path: 'app.py', content: `KEY = "${secret}"` }], summary: `wrote ${secret}` })],
      [Effect.CHECK_SAFETY]: [reply(InputKind.SAFETY_PASSED)],
      [Effect.WRITE_TESTS]: [reply(InputKind.TESTS_WRITTEN)],
      [Effect.RUN_TESTS]: [() => ({ ...failed, output: `AssertionError: got ${secret}` })],
      [Effect.REFLECT]: [() => ({ kind: InputKind.ERRORED, at: at(50), code: 'UNAVAILABLE', message: `HTTP 401: bad key ${secret}` })],
    });
    const published: TaskEvent[] = [];
    await new TaskRunner({ store, phases, policy, now, redact, publish: async (events) => void published.push(...events) }).drive('task-1', new AbortController().signal);
    // Everything stored or published but the code files' contents.
    const stored = JSON.stringify({ writes: store.writes, published }, (key, value: unknown) => (key === 'content' ? undefined : value));
    for (const kept of ['use the key [REDACTED', 'wrote [REDACTED', 'got [REDACTED', 'bad key [REDACTED']) expect(stored).toContain(kept);
    expect(stored).not.toContain(secret);
    // The code keeps what the model wrote: redacting it would break it.
    expect(store.writes.flatMap((write) => write.iterations.flatMap((one) => one.files.map((file) => file.content)))).toContain(`KEY = "${secret}"`);
  });

  it('fails a task whose status has no phase runner yet, saying so', async () => {
    const store = new MemoryStore(task({ status: TaskStatus.TASK_STATUS_REVIEWING, currentIteration: 1 }));
    const final = await new TaskRunner({ store, phases: {}, policy, now, publish: async () => undefined }).drive('task-1', new AbortController().signal);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, statusReason: expect.stringContaining("no runner for 'review' yet") });
  });

  it('stops a task that keeps failing the same way: re-plan, then no progress', async () => {
    const store = new MemoryStore(task());
    const same = () => ({ ...sampleInput(InputKind.REFLECTED), reflection: reflection('E: same') });
    const { phases } = scripted({
      [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED)],
      [Effect.PLAN]: [reply(InputKind.PLANNED), reply(InputKind.PLANNED)],
      [Effect.CODE]: Array.from({ length: 3 }, () => reply(InputKind.CODED)),
      [Effect.CHECK_SAFETY]: Array.from({ length: 3 }, () => reply(InputKind.SAFETY_PASSED)),
      [Effect.WRITE_TESTS]: [reply(InputKind.TESTS_WRITTEN), reply(InputKind.TESTS_WRITTEN)],
      [Effect.RUN_TESTS]: Array.from({ length: 3 }, () => reply(InputKind.TESTS_FAILED)),
      [Effect.REFLECT]: Array.from({ length: 3 }, () => same),
    });
    const final = await new TaskRunner({ store, phases, policy, now, publish: async () => undefined }).drive('task-1', new AbortController().signal);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_NO_PROGRESS, replanCount: 1, currentIteration: 3 });
  });
});

/** A clock the runner reads and its sleeps move: a wait of minutes takes no time. */
function testClock() {
  let ms = 0;
  return {
    now: () => new Date(start.getTime() + ms),
    sleep: async (waitMs: number) => void (ms += waitMs),
    advance: (byMs: number) => void (ms += byMs),
    get seconds() {
      return ms / 1000;
    },
  };
}

const noResponders = () => new AppError(ErrorCode.UNAVAILABLE, 'no responders on ratchet.v1.MemoryService.RetrieveLessons: is the service that serves it running?');

/** The real RETRIEVE phase over a memory client that answers `no responders` while `down()` holds. */
function retrieveWhile(down: () => boolean, clock: ReturnType<typeof testClock>, calls: { count: number }): PhaseRunner {
  const memory = {
    retrieveLessons: async () => {
      calls.count += 1;
      // Each attempt takes a moment, as a request that nobody answers does.
      clock.advance(50);
      if (down()) throw noResponders();
      return { lessons: [] };
    },
  };
  const runners = phaseRunners({ planner: {}, coder: {}, tester: {}, reflector: {}, safety: {}, memory } as unknown as AgentClients, phaseSettings, clock.now);
  return runners[Effect.RETRIEVE] as PhaseRunner;
}

const pauses = (events: readonly TaskEvent[]) => events.flatMap((event) => (event.payload?.$case === 'logLine' && event.payload.logLine.level === LogLevel.LOG_LEVEL_WARN ? [event.payload.logLine] : []));
const retrievingDuration = (events: readonly TaskEvent[]) =>
  events.flatMap((event) => (event.payload?.$case === 'phaseCompleted' && event.payload.phaseCompleted.phase === Phase.PHASE_RETRIEVING ? [event.payload.phaseCompleted.duration] : []));

describe('TaskRunner when a service or the database is unavailable', () => {
  it('waits for a service nobody serves, showing each pause as an event, and goes on when it is back; the phase is timed with its wait', async () => {
    const clock = testClock();
    const calls = { count: 0 };
    const store = new MemoryStore(task());
    const { phases } = scripted({
      [Effect.PLAN]: [reply(InputKind.PLANNED)],
      [Effect.CODE]: [reply(InputKind.CODED)],
      [Effect.CHECK_SAFETY]: [reply(InputKind.SAFETY_PASSED)],
      [Effect.WRITE_TESTS]: [reply(InputKind.TESTS_WRITTEN)],
      [Effect.RUN_TESTS]: [reply(InputKind.TESTS_PASSED)],
      [Effect.LEARN]: [reply(InputKind.LEARNED)],
    });
    const warnings: object[] = [];
    // Memory is back after three failed attempts (0.5 + 1 + 2 s of pauses).
    const retrieve = retrieveWhile(() => calls.count <= 3, clock, calls);
    const runner = new TaskRunner({
      store,
      phases: { ...phases, [Effect.RETRIEVE]: retrieve },
      policy,
      now: clock.now,
      sleep: clock.sleep,
      maxWaitMs: 300_000,
      publish: async () => undefined,
      logger: { warn: (details) => void warnings.push(details) },
    });
    const final = await runner.drive('task-1', new AbortController().signal);

    expect(final.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(calls.count).toBe(4);
    expect(pauses(store.events).map((line) => [line.message, line.attributes['dependency'], line.attributes['retry_in_ms']])).toEqual([
      [`memory service unavailable: ${noResponders().message}; RETRIEVING waits and tries again in 0.5s (gives up in 5m)`, 'memory', '500'],
      [`memory service unavailable: ${noResponders().message}; RETRIEVING waits and tries again in 1s (gives up in 4m59s)`, 'memory', '1000'],
      [`memory service unavailable for 1.6s: ${noResponders().message}; RETRIEVING waits and tries again in 2s (gives up in 4m58s)`, 'memory', '2000'],
    ]);
    expect(warnings).toEqual([1, 2, 3].map((pause) => expect.objectContaining({ status: 'RETRIEVING', dependency: 'memory', code: ErrorCode.UNAVAILABLE, pause })));
    // RETRIEVING lasted from its start through the pauses (3.5 s) and four attempts (0.2 s), not just the last attempt.
    expect(retrievingDuration(store.events)).toEqual([{ seconds: 3, nanos: 700_000_000 }]);
  });

  it('fails the task at the end of the wait, naming the service and how long it was gone', async () => {
    const clock = testClock();
    const calls = { count: 0 };
    const store = new MemoryStore(task());
    const runner = new TaskRunner({ store, phases: { [Effect.RETRIEVE]: retrieveWhile(() => true, clock, calls) }, policy, now: clock.now, sleep: clock.sleep, maxWaitMs: 300_000, publish: async () => undefined });
    const final = await runner.drive('task-1', new AbortController().signal);

    expect(final.task).toMatchObject({
      status: TaskStatus.TASK_STATUS_FAILED,
      stopReason: StopReason.STOP_REASON_ERROR,
      statusReason: `RETRIEVING failed: UNAVAILABLE: memory service unavailable for 5m: ${noResponders().message}`,
    });
    // Backoff 0.5 s doubling to 15 s, the last pause cut short at the deadline; one attempt after each pause.
    const waits = pauses(store.events).map((line) => Number(line.attributes['retry_in_ms']));
    expect(waits.slice(0, 7)).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
    expect(Math.max(...waits)).toBe(15_000);
    expect(calls.count).toBe(waits.length + 1);
    expect(clock.seconds).toBeGreaterThanOrEqual(300);
    expect(clock.seconds).toBeLessThan(301);
  });

  it('ends the wait when the task\'s wall-time budget runs out first', async () => {
    const clock = testClock();
    const store = new MemoryStore(task({ budget: { maxIterations: 0, maxTokens: 0, maxCostUsd: 0, maxWallTime: { seconds: 60, nanos: 0 } } }));
    const runner = new TaskRunner({ store, phases: { [Effect.RETRIEVE]: retrieveWhile(() => true, clock, { count: 0 }) }, policy, now: clock.now, sleep: clock.sleep, maxWaitMs: 300_000, publish: async () => undefined });
    const final = await runner.drive('task-1', new AbortController().signal);

    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_WALL_TIME, statusReason: `ran 60 s of the 60 s wall-time budget; memory service unavailable for 1m: ${noResponders().message}` });
    expect(clock.seconds).toBeLessThan(61);
  });

  it('waits out a database with no free connection, even when the pause itself cannot be stored', async () => {
    const clock = testClock();
    const store = new MemoryStore(task({ status: TaskStatus.TASK_STATUS_RETRIEVING, startedAt: start }));
    // The result and then the pause fail to be written; the attempt after the pause gets through.
    store.failWrites = new AppError(ErrorCode.UNAVAILABLE, 'timeout exceeded when trying to connect');
    store.failingWrites = 2;
    const warnings: [object, string][] = [];
    const { phases, ran } = scripted({ [Effect.RETRIEVE]: [reply(InputKind.LESSONS_RETRIEVED), reply(InputKind.LESSONS_RETRIEVED)], [Effect.PLAN]: [() => Promise.reject(new AppError(ErrorCode.UNAUTHENTICATED, 'bad model key'))] });
    const runner = new TaskRunner({ store, phases, policy, now: clock.now, sleep: clock.sleep, maxWaitMs: 300_000, publish: async () => undefined, logger: { warn: (details, message) => void warnings.push([details, message]) } });
    const final = await runner.drive('task-1', new AbortController().signal);

    expect(ran).toEqual([Effect.RETRIEVE, Effect.RETRIEVE, Effect.PLAN]);
    expect(warnings).toEqual([
      [expect.objectContaining({ dependency: 'database', code: ErrorCode.UNAVAILABLE, err: 'timeout exceeded when trying to connect', pause: 1 }), 'task paused'],
      [expect.objectContaining({ code: ErrorCode.UNAVAILABLE }), 'cannot record that the task paused'],
    ]);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, statusReason: 'PLANNING failed: UNAUTHENTICATED: bad model key' });
  });

  it('says the task paused as soon as the database is gone, before waiting for it to come back', async () => {
    const clock = testClock();
    const store = new MemoryStore(task({ status: TaskStatus.TASK_STATUS_RETRIEVING, startedAt: start }));
    const { phases } = scripted({
      // The phase's result cannot be written, and the reads after it fail until the database returns.
      [Effect.RETRIEVE]: [
        () => {
          store.failWrites = new AppError(ErrorCode.UNAVAILABLE, 'connect ECONNREFUSED');
          store.failingWrites = 1;
          store.failingReads = 2;
          return sampleInput(InputKind.LESSONS_RETRIEVED);
        },
        reply(InputKind.LESSONS_RETRIEVED),
      ],
      [Effect.PLAN]: [() => Promise.reject(new AppError(ErrorCode.UNAUTHENTICATED, 'bad model key'))],
    });
    const runner = new TaskRunner({ store, phases, policy, now: clock.now, sleep: clock.sleep, maxWaitMs: 300_000, publish: async () => undefined, logger: { warn: (_details, message) => void store.timeline.push(message) } });
    await runner.drive('task-1', new AbortController().signal);

    expect(store.timeline).toEqual(['task paused', 'read failed', 'read failed']);
    // Once it is back, the pause is stored as the task's event too.
    expect(pauses(store.events)).toHaveLength(1);
  });

  it('takes a service\'s ABORTED for a failure of the phase, not for the task taken over by another writer', async () => {
    const store = new MemoryStore(task());
    const { phases } = scripted({ [Effect.RETRIEVE]: [() => Promise.reject(new DependencyError('memory', new AppError(ErrorCode.ABORTED, 'the lesson store was busy')))] });
    const final = await new TaskRunner({ store, phases, policy, now, publish: async () => undefined }).drive('task-1', new AbortController().signal);
    expect(final.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, statusReason: 'RETRIEVING failed: ABORTED: the lesson store was busy' });
  });

  it('fails at once without a wait (embedded mode), with the error as it came', async () => {
    const clock = testClock();
    const store = new MemoryStore(task());
    const final = await new TaskRunner({ store, phases: { [Effect.RETRIEVE]: retrieveWhile(() => true, clock, { count: 0 }) }, policy, now: clock.now, sleep: clock.sleep, publish: async () => undefined }).drive(
      'task-1',
      new AbortController().signal,
    );
    expect(final.task.statusReason).toBe(`RETRIEVING failed: UNAVAILABLE: ${noResponders().message}`);
    expect(pauses(store.events)).toEqual([]);
  });
});
