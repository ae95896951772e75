import { describe, expect, it } from '@jest/globals';
import { TaskStatus, type RecordFailureRequest, type RecordSuccessRequest } from '@ratchet/contracts';
import { Effect } from '../src/domain/next-action';
import type { TaskState } from '../src/domain/records';
import { phaseRunners, type AgentClients, type PhaseRunner } from '../src/runner/phases';
import { iteration, phaseSettings, plan, reflection, report, task } from './fixtures';

// A phase whose result was lost (a failed save, a replica taking the task
// over) runs again on the same stored state. The effects it has elsewhere
// carry a key that is the same on every run, so the receiver can tell the
// repeat from a new call (memory's side: services/memory/test/idempotent-records.spec.ts).

function recordingClients() {
  const failures: RecordFailureRequest[] = [];
  const successes: RecordSuccessRequest[] = [];
  const clients = {
    planner: {},
    coder: {},
    tester: {},
    safety: {},
    // Each run of the reflector may word things differently; the key must not depend on it.
    reflector: { reflect: async () => ({ reflection: reflection('E: x', { rootCause: `cause ${Math.random()}` }), usage: undefined, replyFailure: undefined }) },
    memory: {
      retrieveLessons: async () => ({ lessons: [] }),
      recordFailure: async (request: RecordFailureRequest) => {
        failures.push(request);
        return { failureId: 'failure-1', lesson: undefined, lessonCreated: false };
      },
      recordSuccess: async (request: RecordSuccessRequest) => {
        successes.push(request);
        return { successId: 'success-1', updatedLessons: [] };
      },
    },
  } as unknown as AgentClients;
  return { clients, failures, successes };
}

const run = (runner: PhaseRunner | undefined, state: TaskState) => (runner as PhaseRunner)(state, new AbortController().signal, { enteredAt: new Date(0), progress: async () => undefined });

describe('effects that write elsewhere', () => {
  it('send the same idempotency key every time a phase runs on the same state, and another for the next iteration', async () => {
    const { clients, failures, successes } = recordingClients();
    const runners = phaseRunners(clients, phaseSettings, () => new Date(0));
    const reflecting: TaskState = { task: task({ status: TaskStatus.TASK_STATUS_REFLECTING, currentIteration: 2, plan }), iterations: [iteration(1), iteration(2, { testReport: report(1, 3) })] };
    await run(runners[Effect.REFLECT], reflecting);
    await run(runners[Effect.REFLECT], reflecting);
    expect(failures.map((request) => request.idempotencyKey)).toEqual(['task-1:2:reflect', 'task-1:2:reflect']);
    // The reflections differed; the key did not.
    expect(failures[0]?.failureSummary).not.toBe(failures[1]?.failureSummary);
    // The next iteration's reflection is a new failure: a new key.
    await run(runners[Effect.REFLECT], { task: { ...reflecting.task, currentIteration: 3 }, iterations: [...reflecting.iterations, iteration(3, { testReport: report(2, 3) })] });
    expect(failures[2]?.idempotencyKey).toBe('task-1:3:reflect');

    const learning: TaskState = { task: task({ status: TaskStatus.TASK_STATUS_LEARNING, currentIteration: 3, plan }), iterations: [iteration(1), iteration(2), iteration(3, { testReport: report(3, 3) })] };
    await run(runners[Effect.LEARN], learning);
    await run(runners[Effect.LEARN], learning);
    expect(successes.map((request) => request.idempotencyKey)).toEqual(['task-1:3:learn', 'task-1:3:learn']);
  });
});
