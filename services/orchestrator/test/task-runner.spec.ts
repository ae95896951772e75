import { describe, expect, it } from '@jest/globals';
import { StopReason, TaskStatus, type TaskEvent } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Decision } from '../src/domain/decide';
import { InputKind, type TaskInput } from '../src/domain/inputs';
import { Effect } from '../src/domain/next-action';
import type { IterationRecord, TaskRecord, TaskState } from '../src/domain/records';
import type { PhaseRunner } from '../src/runner/phases';
import { handOver, TaskRunner, type RunnerStore } from '../src/runner/task-runner';
import { at, iteration, policy, reflection, sampleInput, task } from './fixtures';

/** The store the runner sees, in memory: versions checked like the real one, every write recorded. */
class MemoryStore implements RunnerStore {
  readonly writes: Decision[] = [];
  private record: TaskRecord;
  private readonly iterationsByNumber = new Map<number, IterationRecord>();
  private readonly log: TaskEvent[] = [];
  /** Set to make the next writes fail with this error. */
  failWrites?: AppError;

  constructor(initial: TaskRecord) {
    this.record = initial;
  }

  readonly tasks = { get: async (id: string) => (id === this.record.id ? this.record : Promise.reject(new AppError(ErrorCode.NOT_FOUND, `no task ${id}`))) };
  readonly iterations = { list: async () => [...this.iterationsByNumber.values()].sort((left, right) => left.number - right.number) };
  readonly transitions = {
    save: async (before: TaskRecord, decision: Decision) => {
      if (this.failWrites !== undefined) throw this.failWrites;
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
    const runner = new TaskRunner({ store, phases, policy, now, publish: async () => undefined, maxPauses: 3, logger: { warn: (details) => void warnings.push(details) } });
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
