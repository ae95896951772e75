import { describe, expect, it } from '@jest/globals';
import { isTerminal, statusName } from '@ratchet/agent';
import { TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { decide } from '../src/domain/decide';
import { InputKind } from '../src/domain/inputs';
import { allStatuses, allowedNext, canTransition, transitionsFrom } from '../src/domain/task-state';
import { policy, sampleInput, stateIn } from './fixtures';

const kinds = Object.values(InputKind);
const pairs = allStatuses.flatMap((status) => kinds.map((kind) => [statusName(status), kind, status] as const));

describe('the transition table, row by row', () => {
  it.each(pairs)('%s + %s: accepted and leads where the table says, or refused with a clear error', (_name, kind, status) => {
    const state = stateIn(status);
    const row = transitionsFrom(status)[kind];
    if (row === undefined) {
      expect(() => decide(state, sampleInput(kind), policy)).toThrow(expect.objectContaining({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining(`does not take '${kind}'`) }));
      return;
    }
    const decision = decide(state, sampleInput(kind), policy);
    expect(row).toContain(decision.task.status);
    // A status change is always announced; a hand-over changes and writes nothing.
    const changes = decision.events.filter((event) => event.payload?.$case === 'taskStatusChanged');
    if (kind === InputKind.HANDED_OVER) expect(decision).toMatchObject({ changed: false, events: [] });
    else expect(changes).toHaveLength(decision.task.status === status ? 0 : 1);
    if (isTerminal(decision.task.status)) {
      expect(decision.task.completedAt).toEqual(sampleInput(kind).at);
      expect(decision.events.at(-1)?.payload?.$case).toBe('taskCompleted');
    }
  });

  it('lets a terminal task take nothing but a resume of a FAILED one', () => {
    expect(Object.keys(transitionsFrom(TaskStatus.TASK_STATUS_SUCCEEDED))).toEqual([]);
    expect(Object.keys(transitionsFrom(TaskStatus.TASK_STATUS_CANCELLED))).toEqual([]);
    expect(Object.keys(transitionsFrom(TaskStatus.TASK_STATUS_FAILED))).toEqual([InputKind.RESUMED]);
    expect(() => allowedNext(TaskStatus.TASK_STATUS_SUCCEEDED, InputKind.CANCELLED)).toThrow(/it has ended/);
  });

  it('lets every live status be cancelled, stopped and fail, and names what a status takes when refusing', () => {
    for (const status of allStatuses.filter((candidate) => !isTerminal(candidate))) {
      expect(allowedNext(status, InputKind.CANCELLED)).toEqual([TaskStatus.TASK_STATUS_CANCELLED]);
      expect(allowedNext(status, InputKind.STOPPED)).toEqual([TaskStatus.TASK_STATUS_FAILED]);
      expect(allowedNext(status, InputKind.ERRORED)).toEqual([TaskStatus.TASK_STATUS_FAILED]);
    }
    expect(() => allowedNext(TaskStatus.TASK_STATUS_CODING, InputKind.TESTS_PASSED)).toThrow("a CODING task does not take 'tests-passed'; it takes 'tool-step', 'command-asked', 'coded', 'reply-invalid'");
  });

  it('lets a status whose phase runs record a pause, keeping the status; a task waiting on a person takes none', () => {
    for (const status of allStatuses.filter((candidate) => !isTerminal(candidate))) {
      if (status === TaskStatus.TASK_STATUS_AWAITING_APPROVAL || status === TaskStatus.TASK_STATUS_AWAITING_ANSWER) expect(transitionsFrom(status)[InputKind.PAUSED]).toBeUndefined();
      else expect(allowedNext(status, InputKind.PAUSED)).toEqual([status]);
    }
    expect(transitionsFrom(TaskStatus.TASK_STATUS_FAILED)[InputKind.PAUSED]).toBeUndefined();
  });

  it('has rows for the phases still to come (reprompting, answers, review, audit)', () => {
    expect(canTransition(TaskStatus.TASK_STATUS_QUEUED, TaskStatus.TASK_STATUS_REPROMPTING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_REPROMPTING, TaskStatus.TASK_STATUS_AWAITING_ANSWER)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_AWAITING_ANSWER, TaskStatus.TASK_STATUS_REPROMPTING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_SAFETY_CHECK, TaskStatus.TASK_STATUS_REVIEWING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_REVIEWING, TaskStatus.TASK_STATUS_AUDITING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_AUDITING, TaskStatus.TASK_STATUS_TESTING)).toBe(true);
    expect(canTransition(TaskStatus.TASK_STATUS_CODING, TaskStatus.TASK_STATUS_TESTING)).toBe(false);
    expect(canTransition(TaskStatus.TASK_STATUS_QUEUED, TaskStatus.TASK_STATUS_SUCCEEDED)).toBe(false);
  });
});
