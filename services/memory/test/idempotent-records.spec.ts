import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Language, type RecordFailureRequest, type RecordSuccessRequest } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { createMemoryService, type MemoryService } from '../src';

// A phase the orchestrator runs again (its result lost to a failed save, or
// another replica taking the task over) calls memory again with the same
// idempotency key: the second call must store nothing and answer the same.
jest.setTimeout(60_000);

const python = Language.LANGUAGE_PYTHON;
const context = {} as never;

describe('record calls with an idempotency key', () => {
  let db: Database;
  let memory: MemoryService;
  beforeAll(async () => {
    db = await openPglite({ vector: true });
    memory = await createMemoryService({ db });
  });
  afterAll(async () => {
    await memory?.close();
    await db?.close();
  });

  const failure = (taskId: string, idempotencyKey: string, extra: Partial<RecordFailureRequest> = {}): RecordFailureRequest => ({
    taskId,
    iteration: 1,
    goal: 'parse a date string',
    language: python,
    error: { code: 'TESTS_FAILED', message: `ValueError: time data does not match format (${taskId})`, retryable: false, signature: '', detail: '' },
    failureSummary: 'strptime format was wrong',
    candidateLesson: { title: `Match the strptime format to the input (${taskId})`, body: 'Read the date format off the example input before parsing.', errorSignature: '', tags: [], language: python },
    retrievedLessonIds: [],
    scope: '',
    appliedLessonIds: [],
    idempotencyKey,
    ...extra,
  });
  const success = (taskId: string, idempotencyKey: string, extra: Partial<RecordSuccessRequest> = {}): RecordSuccessRequest => ({
    taskId,
    iteration: 2,
    goal: 'parse a date string',
    language: python,
    fixSummary: 'Use the ISO format for the dates the tests give.',
    helpedLessonIds: [],
    resolvedFailureIds: [],
    iterationsTaken: 2,
    scope: '',
    idempotencyKey,
    ...extra,
  });
  const count = async (table: string, taskId: string) => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM memory.${table} WHERE task_id = $1`, [taskId])).rows[0]?.n);
  const stats = async (lessonId: string) =>
    (await db.query<{ helped: number; notHelped: number }>('SELECT times_helped::int AS helped, times_not_helped::int AS "notHelped" FROM memory.lessons WHERE id = $1', [lessonId])).rows[0];

  it('stores a failure once per key, counts an applied lesson’s miss once, and answers a repeat as the first call', async () => {
    const applied = (await memory.implementation.recordFailure(failure('earlier-task', ''), context)).lesson?.id as string;
    expect(applied).toBeDefined();

    const first = await memory.implementation.recordFailure(failure('task-a', 'task-a:1:reflect', { appliedLessonIds: [applied] }), context);
    // The re-run's reflection may differ; what the first stored stands.
    const again = await memory.implementation.recordFailure(
      failure('task-a', 'task-a:1:reflect', { appliedLessonIds: [applied], failureSummary: 'another wording', candidateLesson: { title: 'Another title', body: 'Another body.', errorSignature: '', tags: [], language: python } }),
      context,
    );
    expect(again.failureId).toBe(first.failureId);
    expect(again.lesson?.id).toBe(first.lesson?.id);
    expect(again.lesson?.title).toBe(first.lesson?.title);
    expect(again.lessonCreated).toBe(true);
    expect(await count('failures', 'task-a')).toBe(1);
    expect(await count('evidence', 'task-a')).toBe(1);
    expect((await stats(applied))?.notHelped).toBe(1);
    expect(Number((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM memory.lessons WHERE title = 'Another title'")).rows[0]?.n)).toBe(0);

    // The next iteration has its own key: a second failure.
    await memory.implementation.recordFailure(failure('task-a', 'task-a:2:reflect', { iteration: 2, appliedLessonIds: [applied] }), context);
    expect(await count('failures', 'task-a')).toBe(2);
    expect((await stats(applied))?.notHelped).toBe(2);
  });

  it('answers two racing calls with one key as one', async () => {
    const [one, two] = await Promise.all([
      memory.implementation.recordFailure(failure('task-race', 'task-race:1:reflect'), context),
      memory.implementation.recordFailure(failure('task-race', 'task-race:1:reflect'), context),
    ]);
    expect(one.failureId).toBe(two.failureId);
    expect(await count('failures', 'task-race')).toBe(1);
  });

  it('stores a success once per key, counting a helpful lesson once', async () => {
    const helped = (await memory.implementation.recordFailure(failure('helper-task', ''), context)).lesson?.id as string;
    const first = await memory.implementation.recordSuccess(success('task-b', 'task-b:2:learn', { helpedLessonIds: [helped] }), context);
    const again = await memory.implementation.recordSuccess(success('task-b', 'task-b:2:learn', { helpedLessonIds: [helped] }), context);
    expect(again.successId).toBe(first.successId);
    expect(again.updatedLessons.map((lesson) => lesson.id).sort()).toEqual(first.updatedLessons.map((lesson) => lesson.id).sort());
    expect(await count('successes', 'task-b')).toBe(1);
    expect((await stats(helped))?.helped).toBe(1);
  });

  it('counts a retrieval once per key, racing repeats included, and every retrieval without one', async () => {
    const stored = (await memory.implementation.recordFailure(failure('task-r', '', { goal: 'read a YAML config file' }), context)).lesson?.id as string;
    const retrieve = (idempotencyKey: string) =>
      memory.implementation.retrieveLessons(
        { taskId: 'task-s', query: 'Match the strptime format to the input (task-r)', language: python, errorSignature: '', tags: [], limit: 5, minScore: 0, scope: '', scopeOnly: false, idempotencyKey },
        context,
      );
    const retrievedCount = async () => Number((await db.query<{ n: number }>('SELECT times_retrieved::int AS n FROM memory.lessons WHERE id = $1', [stored])).rows[0]?.n);
    const first = await retrieve('task-s:0:retrieve');
    expect(first.lessons.map((scored) => scored.lesson?.id)).toContain(stored);
    expect(await retrievedCount()).toBe(1);
    // The phase run again, twice at once: the same lessons, counted no more.
    const repeats = await Promise.all([retrieve('task-s:0:retrieve'), retrieve('task-s:0:retrieve')]);
    for (const repeat of repeats) expect(repeat.lessons.map((scored) => scored.lesson?.id)).toEqual(first.lessons.map((scored) => scored.lesson?.id));
    expect(await retrievedCount()).toBe(1);
    // Another phase's key counts again; so does every call without a key.
    await retrieve('task-s:1:reflect-lessons');
    await retrieve('');
    await retrieve('');
    expect(await retrievedCount()).toBe(4);
  });

  it('records every call without a key, as before', async () => {
    await memory.implementation.recordFailure(failure('task-c', ''), context);
    await memory.implementation.recordFailure(failure('task-c', ''), context);
    expect(await count('failures', 'task-c')).toBe(2);
  });
});
