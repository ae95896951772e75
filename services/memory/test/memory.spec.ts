import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, MemoryServiceDefinition } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { cosine, createMemoryService, HashingEmbedder, PgVectorStore } from '../src';
import { vectorStoreContract } from './vector-store-contract';

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

vectorStoreContract('pgvector on PGlite', async () => {
  const db = await openPglite({ vector: true });
  return { store: await PgVectorStore.open(db), close: () => db.close() };
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
  });

  it('learns from a failure and its fix, and offers the lesson first to a similar goal', async () => {
    const recorded = await client.recordFailure(failure('task-1', 'Treat an empty JSON file as no items', 'json.decoder.JSONDecodeError: Expecting value: line <n> column <n> (char <n>)'));
    expect(recorded.lessonCreated).toBe(true);
    expect(recorded.lesson?.evidence[0]).toMatchObject({ taskId: 'task-1', failureSummary: 'load() parsed an empty file' });
    await client.recordFailure({
      ...failure('task-x', 'Vectorise numpy loops', 'ValueError: operands could not be broadcast'),
      goal: 'fast matrix maths',
      candidateLesson: { title: 'Vectorise numpy loops', body: 'Use array operations instead of Python loops over matrix entries.', errorSignature: 'ValueError: operands could not be broadcast', tags: [], language: Language.LANGUAGE_PYTHON },
    });

    const success = await client.recordSuccess({ taskId: 'task-1', iteration: 2, goal: 'a CLI that manages TODO items in JSON', language: Language.LANGUAGE_PYTHON, fixSummary: 'return [] for a missing or empty file', helpedLessonIds: [], resolvedFailureIds: [recorded.failureId], iterationsTaken: 2 });
    const fixed = success.updatedLessons.find((lesson) => lesson.id === recorded.lesson?.id);
    expect(fixed?.evidence.map((item) => item.fixSummary)).toContain('return [] for a missing or empty file');

    const found = await client.retrieveLessons({ taskId: 'task-2', query: 'a command-line tool to manage todo lists stored as JSON', language: Language.LANGUAGE_PYTHON, errorSignature: '', tags: [], limit: 5, minScore: 0 });
    const titles = found.lessons.map((scored) => scored.lesson?.title);
    const json = found.lessons.find((scored) => scored.lesson?.title === 'Treat an empty JSON file as no items');
    const numpy = found.lessons.find((scored) => scored.lesson?.title === 'Vectorise numpy loops');
    expect(json?.score).toBeGreaterThan(numpy?.score ?? 0);
    expect(titles).toContain('Worked: a CLI that manages TODO items in JSON');
    const again = await client.getLesson({ lessonId: recorded.lesson!.id });
    expect(again.lesson?.stats?.timesRetrieved).toBe(1);
  });

  it('attaches a repeated failure to the existing lesson instead of duplicating it, and finds it by signature', async () => {
    const signature = 'KeyError: <v>';
    const first = await client.recordFailure(failure('task-3', 'Check keys before indexing', signature));
    const second = await client.recordFailure(failure('task-4', 'Check dict keys first', signature));
    expect(second.lessonCreated).toBe(false);
    expect(second.lesson?.id).toBe(first.lesson?.id);
    expect(second.lesson?.evidence).toHaveLength(2);
    const bySignature = await client.retrieveLessons({ taskId: 't', query: '', language: Language.LANGUAGE_PYTHON, errorSignature: signature, tags: [], limit: 3, minScore: 0 });
    expect(bySignature.lessons[0]).toMatchObject({ score: 1, lesson: { id: first.lesson?.id } });
  });

  it('lists lessons in pages and filters by signature', async () => {
    const page = await client.listLessons({ pageSize: 2, pageToken: '', language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '' });
    expect(page.lessons).toHaveLength(2);
    expect(page.nextPageToken).not.toBe('');
    const rest = await client.listLessons({ pageSize: 50, pageToken: page.nextPageToken, language: Language.LANGUAGE_PYTHON, tags: [], errorSignature: '' });
    expect(new Set([...page.lessons, ...rest.lessons].map((lesson) => lesson.id)).size).toBe(page.lessons.length + rest.lessons.length);
    const tagged = await client.listLessons({ pageSize: 50, pageToken: '', language: 0, tags: ['success-pattern'], errorSignature: '' });
    expect(tagged.lessons.every((lesson) => lesson.title.startsWith('Worked:'))).toBe(true);
  });

  it('rejects bad requests naming the field', async () => {
    await expect(client.retrieveLessons({ taskId: 't', query: ' ', language: 0, errorSignature: '', tags: [], limit: 5, minScore: 0 })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('query is empty') });
    await expect(client.retrieveLessons({ taskId: 't', query: 'x', language: 0, errorSignature: '', tags: [], limit: 500, minScore: 0 })).rejects.toMatchObject({ message: expect.stringContaining('limit is 500') });
    await expect(client.retrieveLessons({ taskId: 't', query: 'x', language: 0, errorSignature: '', tags: [], limit: 5, minScore: 2 })).rejects.toMatchObject({ message: expect.stringContaining('min_score') });
    await expect(client.getLesson({ lessonId: 'nope' })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(client.listLessons({ pageSize: 10, pageToken: '!!', language: 0, tags: [], errorSignature: '' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });
});
