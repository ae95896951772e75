import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, LessonStatus, MemoryServiceDefinition } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { cosine, createMemoryService, HashingEmbedder } from '../src';

jest.setTimeout(60_000);

describe('HashingEmbedder', () => {
  const embedder = new HashingEmbedder();
  it('is deterministic, normalised, and scores similar texts above unrelated ones', async () => {
    const [todo, again, shopping, unrelated, empty] = await embedder.embed([
      'a CLI that manages TODO items in a JSON file',
      'a CLI that manages TODO items in a JSON file',
      'a command-line shopping list that keeps items in a JSON file',
      'compute the eigenvalues of a sparse matrix with numpy',
      '',
    ]);
    expect([...todo!]).toEqual([...again!]);
    expect(cosine(todo!, todo!)).toBeCloseTo(1, 5);
    expect(cosine(todo!, shopping!)).toBeGreaterThan(cosine(todo!, unrelated!) + 0.1);
    expect(empty!.every((value) => value === 0)).toBe(true);
    expect(todo!.length).toBe(512);
  });
});

describe('memory service over the in-process bus', () => {
  let db: Database;
  let running: RunningService;
  let client: ReturnType<typeof createClient<typeof MemoryServiceDefinition>>;
  beforeAll(async () => {
    db = await openPglite({ vector: true });
    const service = await createMemoryService({ db });
    const transport = new InProcessTransport();
    running = hostService({ name: 'memory', version: 'test', definition: MemoryServiceDefinition, implementation: service.implementation }, { transport });
    client = createClient(transport, MemoryServiceDefinition);
  });
  afterAll(async () => {
    await running.stop(100);
    await db.close();
  });

  const failure = (taskId: string, title: string, signature: string) => ({
    taskId,
    iteration: 1,
    goal: 'a CLI that manages TODO items in JSON',
    language: Language.LANGUAGE_PYTHON,
    error: { code: 'TESTS_FAILED', message: 'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)', retryable: false, signature: '', detail: '' },
    failureSummary: 'load() parsed an empty file',
    candidateLesson: { title, body: 'An empty or missing JSON data file means no items: check before calling json.load.', errorSignature: signature, tags: ['json'], language: Language.LANGUAGE_PYTHON },
    retrievedLessonIds: [],
    scope: '',
    appliedLessonIds: [],
    idempotencyKey: '',
  });

  it('keeps teams apart: a team lists and retrieves its own lessons and the global ones, never another team\'s', async () => {
    const inScope = (scope: string, title: string) => ({
      ...failure(`team-task-${title}`, title, `TeamError: ${title}`),
      goal: `parse invoices in CSV (${title})`,
      candidateLesson: { title, body: `Invoices: ${title}.`, errorSignature: `TeamError: ${title}`, tags: ['invoices'], language: Language.LANGUAGE_PYTHON },
      scope,
    });
    await client.recordFailure(inScope('team:payments/billing', 'payments lesson'));
    await client.recordFailure(inScope('team:web/billing', 'web lesson'));
    await client.recordFailure(inScope('billing', 'default team lesson'));
    await client.recordFailure(inScope('', 'global lesson'));
    const titles = async (team: string) =>
      (await client.listLessons({ pageSize: 500, pageToken: '', language: 0, tags: ['invoices'], errorSignature: '', scope: '', status: 0, team })).lessons.map((lesson) => lesson.title).sort();
    expect(await titles('payments')).toEqual(['global lesson', 'payments lesson']);
    expect(await titles('web')).toEqual(['global lesson', 'web lesson']);
    expect(await titles('default')).toEqual(['default team lesson', 'global lesson']);
    expect(await titles('')).toEqual(['default team lesson', 'global lesson', 'payments lesson', 'web lesson']);
    const retrieved = await client.retrieveLessons({ taskId: 'team-query', query: 'parse invoices in CSV', language: Language.LANGUAGE_PYTHON, errorSignature: '', tags: [], limit: 10, minScore: 0, scope: 'team:payments/billing', scopeOnly: false, idempotencyKey: '' });
    const found = retrieved.lessons.map((scored) => scored.lesson?.title);
    expect(found).toEqual(expect.arrayContaining(['payments lesson', 'global lesson']));
    expect(found).not.toContain('web lesson');
    expect(found).not.toContain('default team lesson');
  });

  it('learns from a failure and its fix, and offers the lesson first to a similar goal', async () => {
    const recorded = await client.recordFailure(failure('task-1', 'Treat an empty JSON file as no items', 'json.decoder.JSONDecodeError: Expecting value: line <n> column <n> (char <n>)'));
    expect(recorded.lessonCreated).toBe(true);
    // The loop's calls carry no evidence (it grows with every task filed under the lesson); GetLesson shows it.
    expect(recorded.lesson?.evidence).toEqual([]);
    const evidenceOf = async (lessonId: string | undefined) => (await client.getLesson({ lessonId: lessonId ?? '' })).lesson?.evidence ?? [];
    expect((await evidenceOf(recorded.lesson?.id))[0]).toMatchObject({ taskId: 'task-1', failureSummary: 'load() parsed an empty file' });
    await client.recordFailure({
      ...failure('task-x', 'Vectorise numpy loops', 'ValueError: operands could not be broadcast'),
      goal: 'fast matrix maths',
      candidateLesson: { title: 'Vectorise numpy loops', body: 'Use array operations instead of Python loops over matrix entries.', errorSignature: 'ValueError: operands could not be broadcast', tags: [], language: Language.LANGUAGE_PYTHON },
    });

    const success = await client.recordSuccess({ taskId: 'task-1', iteration: 2, goal: 'a CLI that manages TODO items in JSON', language: Language.LANGUAGE_PYTHON, fixSummary: 'return [] for a missing or empty file', helpedLessonIds: [], resolvedFailureIds: [recorded.failureId], iterationsTaken: 2, scope: '', idempotencyKey: '' });
    const fixed = success.updatedLessons.find((lesson) => lesson.id === recorded.lesson?.id);
    expect(fixed).toBeDefined();
    expect((await evidenceOf(fixed?.id)).map((item) => item.fixSummary)).toContain('return [] for a missing or empty file');

    const found = await client.retrieveLessons({ taskId: 'task-2', query: 'a command-line tool to manage todo lists stored as JSON', language: Language.LANGUAGE_PYTHON, errorSignature: '', tags: [], limit: 5, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' });
    const titles = found.lessons.map((scored) => scored.lesson?.title);
    const json = found.lessons.find((scored) => scored.lesson?.title === 'Treat an empty JSON file as no items');
    const numpy = found.lessons.find((scored) => scored.lesson?.title === 'Vectorise numpy loops');
    expect(json?.score).toBeGreaterThan(numpy?.score ?? 0);
    expect(titles[0]).toBe('Treat an empty JSON file as no items');
    // A success is stored as what worked, never as the goal's words (so it shares no word with this query and is not offered).
    const stored = (await client.listLessons({ language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '', pageSize: 50, pageToken: '', scope: '', status: LessonStatus.LESSON_STATUS_UNSPECIFIED, team: '' })).lessons.map((lesson) => lesson.title);
    expect(stored).toContain('Worked: return [] for a missing or empty file');
    expect([...stored, ...titles].some((title) => title?.includes('a CLI that manages TODO items'))).toBe(false);
    const again = await client.getLesson({ lessonId: recorded.lesson!.id });
    expect(again.lesson?.stats?.timesRetrieved).toBe(1);
  });

  it("offers the reflector's lesson for a failure, not the records of tasks that only shared the goal's wording", async () => {
    // The replay of what a live run showed: many successes whose goals share their wording, then a task whose failure a reflector lesson addresses.
    const goal = (name: string) => `Implement this Python function in solution.py:\n\ndef ${name}(values):\n    """Return the ${name.replace(/_/g, ' ')} of the values."""`;
    // Their approaches share no content word with the new task (one about digits would be relevant to a digit sum, not noise).
    const approaches = ['Sort the list and take the middle element', 'Walk the string once with two indices', 'Count items with a dictionary', 'Use a set to drop repeated entries', 'Fold the pairs into a running maximum', 'Build the result with a list comprehension', 'Recurse on the tail until the list is empty', 'Compare adjacent characters in one pass', 'Merge two sorted runs into one', 'Track the best window with two pointers'];
    for (const [index, approach] of approaches.entries()) {
      await client.recordSuccess({ taskId: `replay-${index}`, iteration: 1, goal: goal(`helper_${index}`), language: Language.LANGUAGE_PYTHON, fixSummary: `${approach}. (passed on the first attempt)`, helpedLessonIds: [], resolvedFailureIds: [], iterationsTaken: 1, scope: '', idempotencyKey: '' });
    }
    // The records of those tasks, by their evidence (which ListLessons shows).
    const listed = await client.listLessons({ language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '', pageSize: 500, pageToken: '', scope: '', status: LessonStatus.LESSON_STATUS_UNSPECIFIED, team: '' });
    const replayedIds = new Set(listed.lessons.filter((lesson) => lesson.evidence.some((item) => item.taskId.startsWith('replay-'))).map((lesson) => lesson.id));
    expect(replayedIds.size).toBeGreaterThan(0);
    const signRule = await client.recordFailure({
      ...failure('replay-sign', 'Keep the sign of negative inputs', 'AssertionError: assert <n> == -<n>'),
      goal: goal('digit_sum'),
      candidateLesson: { title: 'Keep the sign of negative inputs', body: 'A negative number keeps its sign in the result: compute on abs(n) and negate the answer when n < 0.', errorSignature: 'AssertionError: assert <n> == -<n>', tags: [], language: Language.LANGUAGE_PYTHON },
    });
    const query = `${goal('signed_digit_sum')}\nFAILED test_negative: AssertionError: assert 6 == -6 negative number sign`;
    const found = await client.retrieveLessons({ taskId: 'replay-new', query, language: Language.LANGUAGE_PYTHON, errorSignature: '', tags: [], limit: 5, minScore: 0.2, scope: '', scopeOnly: false, idempotencyKey: '' });
    const top3 = found.lessons.slice(0, 3).map((scored) => scored.lesson?.id);
    expect(top3).toContain(signRule.lesson?.id);
    const replayed = found.lessons.filter((scored) => replayedIds.has(scored.lesson?.id ?? ''));
    expect(replayed).toEqual([]);
  });

  it('merges a success pattern into a nearly identical one, with one-line titles', async () => {
    const summary = 'Read the whole file with a context manager and split it into lines. (passed on the first attempt)';
    const first = await client.recordSuccess({ taskId: 'merge-1', iteration: 1, goal: 'count lines', language: Language.LANGUAGE_PYTHON, fixSummary: summary, helpedLessonIds: [], resolvedFailureIds: [], iterationsTaken: 1, scope: '', idempotencyKey: '' });
    const second = await client.recordSuccess({ taskId: 'merge-2', iteration: 1, goal: 'count words', language: Language.LANGUAGE_PYTHON, fixSummary: summary, helpedLessonIds: [], resolvedFailureIds: [], iterationsTaken: 1, scope: '', idempotencyKey: '' });
    const merged = second.updatedLessons.find((lesson) => lesson.title.startsWith('Worked: Read the whole file'));
    const mergedEvidence = (await client.getLesson({ lessonId: merged?.id ?? '' })).lesson?.evidence ?? [];
    expect(mergedEvidence.map((item) => item.taskId)).toEqual(expect.arrayContaining(['merge-1', 'merge-2']));
    expect(first.successId).not.toBe(second.successId);
    const page = await client.listLessons({ pageSize: 50, pageToken: '', language: Language.LANGUAGE_PYTHON, tags: ['success-pattern'], errorSignature: '', scope: '', status: 0, team: '' });
    expect(page.lessons.filter((lesson) => lesson.title.startsWith('Worked: Read the whole file'))).toHaveLength(1);
    expect(page.lessons.every((lesson) => !lesson.title.includes('\n') && lesson.title.length <= 'Worked: '.length + 103)).toBe(true);
  });

  it('attaches a repeated failure to the existing lesson instead of duplicating it, and finds it by signature', async () => {
    const signature = 'KeyError: <v>';
    const first = await client.recordFailure(failure('task-3', 'Check keys before indexing', signature));
    const second = await client.recordFailure(failure('task-4', 'Check dict keys first', signature));
    expect(second.lessonCreated).toBe(false);
    expect(second.lesson?.id).toBe(first.lesson?.id);
    expect((await client.getLesson({ lessonId: first.lesson?.id ?? '' })).lesson?.evidence).toHaveLength(2);
    const bySignature = await client.retrieveLessons({ taskId: 't', query: '', language: Language.LANGUAGE_PYTHON, errorSignature: signature, tags: [], limit: 3, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' });
    // Relevance 1, weighted by its standing: a candidate (no later task has applied it) counts 0.75.
    expect(bySignature.lessons[0]).toMatchObject({ score: expect.closeTo(0.75, 3), lesson: { id: first.lesson?.id } });
  });

  it('lists lessons in pages and filters by signature', async () => {
    const page = await client.listLessons({ pageSize: 2, pageToken: '', language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '', scope: '', status: 0, team: '' });
    expect(page.lessons).toHaveLength(2);
    expect(page.nextPageToken).not.toBe('');
    const rest = await client.listLessons({ pageSize: 50, pageToken: page.nextPageToken, language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '', scope: '', status: 0, team: '' });
    expect(new Set([...page.lessons, ...rest.lessons].map((lesson) => lesson.id)).size).toBe(page.lessons.length + rest.lessons.length);
    const tagged = await client.listLessons({ pageSize: 50, pageToken: '', language: 0, tags: ['success-pattern'], errorSignature: '', scope: '', status: 0, team: '' });
    expect(tagged.lessons.every((lesson) => lesson.title.startsWith('Worked:'))).toBe(true);
  });

  it('rejects bad requests naming the field', async () => {
    await expect(client.retrieveLessons({ taskId: 't', query: ' ', language: 0, errorSignature: '', tags: [], limit: 5, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('query is empty') });
    await expect(client.retrieveLessons({ taskId: 't', query: 'x', language: 0, errorSignature: '', tags: [], limit: 500, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' })).rejects.toMatchObject({ message: expect.stringContaining('limit is 500') });
    await expect(client.retrieveLessons({ taskId: 't', query: 'x', language: 0, errorSignature: '', tags: [], limit: 5, minScore: 2, scope: '', scopeOnly: false, idempotencyKey: '' })).rejects.toMatchObject({ message: expect.stringContaining('min_score') });
    await expect(client.getLesson({ lessonId: 'nope' })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(client.listLessons({ pageSize: 10, pageToken: '!!', language: 0, tags: [], errorSignature: '', scope: '', status: 0, team: '' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });
});
