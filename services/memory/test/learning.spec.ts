import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Language, LessonStatus, type Lesson, type RecordFailureRequest, type RetrieveLessonsRequest } from '@ratchet/contracts';
import { openPglite, type Database } from '@ratchet/db';
import { ErrorCode } from '@ratchet/errors';
import { createMemoryService, HashingEmbedder, LESSON_EXPORT_VERSION, standingOf, weightOf, type MemoryService } from '../src';

jest.setTimeout(60_000);

const python = Language.LANGUAGE_PYTHON;

describe('standing of a lesson (pure)', () => {
  const none = { applied: 0, appliedSucceeded: 0, appliedMeanIterations: 0, comparable: 0, comparableSucceeded: 0, comparableMeanIterations: 0 };
  it('starts as a candidate, is promoted when a later task that applied it succeeds, demoted when applying it does not help', () => {
    expect(standingOf(none).status).toBe(LessonStatus.LESSON_STATUS_CANDIDATE);
    const helped = standingOf({ applied: 2, appliedSucceeded: 2, appliedMeanIterations: 1, comparable: 4, comparableSucceeded: 3, comparableMeanIterations: 2.5 });
    expect(helped.status).toBe(LessonStatus.LESSON_STATUS_PROMOTED);
    expect(helped.helpfulness).toBeGreaterThan(0.7);
    const misleading = standingOf({ applied: 2, appliedSucceeded: 2, appliedMeanIterations: 2.5, comparable: 3, comparableSucceeded: 3, comparableMeanIterations: 1 });
    expect(misleading.status).toBe(LessonStatus.LESSON_STATUS_DEMOTED);
    expect(misleading.reasons.join('\n')).toContain('comparable tasks without it: 3');
    // One use is not enough to judge.
    expect(standingOf({ ...none, applied: 1, appliedSucceeded: 0, appliedMeanIterations: 3 }).status).toBe(LessonStatus.LESSON_STATUS_CANDIDATE);
  });
  it('decays with age, halving every half-life', () => {
    const created = new Date('2026-01-01T00:00:00Z');
    const fresh = weightOf(LessonStatus.LESSON_STATUS_PROMOTED, 1, created, created);
    const old = weightOf(LessonStatus.LESSON_STATUS_PROMOTED, 1, created, new Date(created.getTime() + 90 * 86_400_000));
    expect(fresh).toBeCloseTo(1, 5);
    expect(old).toBeCloseTo(0.5, 5);
  });
});

describe('memory that earns its place', () => {
  let db: Database;
  let memory: MemoryService;
  let clock = new Date('2026-06-01T00:00:00Z');
  const tick = () => (clock = new Date(clock.getTime() + 1_000));
  beforeAll(async () => {
    db = await openPglite({ vector: true });
    memory = await createMemoryService({ db, now: () => tick(), redact: (text) => text.replace(/sk-[A-Za-z0-9]{20,}/g, '[REDACTED:key]') });
  });
  afterAll(async () => {
    await memory.close();
    await db.close();
  });
  const api = () => memory.implementation;
  const context = {} as never;
  const failure = (taskId: string, iteration: number, extra: Partial<RecordFailureRequest> = {}): RecordFailureRequest => ({
    taskId,
    iteration,
    goal: 'parse a date string',
    language: python,
    // Each task its own error: a failure with the signature of a stored lesson becomes that lesson's evidence.
    error: { code: 'TESTS_FAILED', message: `ValueError: time data does not match format in ${taskId}`, retryable: false, signature: '', detail: '' },
    failureSummary: 'strptime format was wrong',
    candidateLesson: undefined,
    retrievedLessonIds: [],
    scope: '',
    appliedLessonIds: [],
    idempotencyKey: '',
    ...extra,
  });
  const retrieve = (query: string, extra: Partial<RetrieveLessonsRequest> = {}) =>
    api().retrieveLessons({ taskId: 'q', query, language: python, errorSignature: '', tags: [], limit: 5, minScore: 0.1, scope: '', scopeOnly: false, idempotencyKey: '', ...extra }, context);
  const ids = (lessons: { lesson?: Lesson | undefined }[]) => lessons.map((scored) => scored.lesson?.id);

  it('keeps projects apart: a task sees its project and the global scope, never another project', async () => {
    const draft = (title: string) => ({ title, body: `${title}: the database migration order matters for the schema table.`, errorSignature: '', tags: [], language: python });
    const alpha = await api().recordFailure(failure('alpha-1', 1, { scope: 'git:example/alpha', candidateLesson: draft('Run alpha migrations before seeding') }), context);
    const beta = await api().recordFailure(failure('beta-1', 1, { scope: 'git:example/beta', candidateLesson: draft('Run beta migrations before seeding') }), context);
    const global = await api().recordFailure(failure('global-1', 1, { candidateLesson: draft('Run migrations before seeding in general') }), context);
    expect(alpha.lesson?.scope).toBe('git:example/alpha');
    expect(global.lesson?.scope).toBe('global');
    const seen = ids((await retrieve('database migration order for the schema table', { scope: 'git:example/alpha' })).lessons);
    expect(seen).toEqual(expect.arrayContaining([alpha.lesson?.id, global.lesson?.id]));
    expect(seen).not.toContain(beta.lesson?.id);
    const own = ids((await retrieve('database migration order for the schema table', { scope: 'git:example/alpha', scopeOnly: true, idempotencyKey: '' })).lessons);
    expect(own).toEqual([alpha.lesson?.id]);
    await expect(retrieve('x', { scope: 'has spaces' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('project key') });
  });

  it('promotes a lesson a later task applied and succeeded with; demotes and stops offering one that misleads', async () => {
    const scope = 'standing-test';
    // Distinct signatures: a failure with the signature of a stored lesson becomes its evidence instead.
    const make = async (taskId: string, title: string, body: string) =>
      (await api().recordFailure(failure(taskId, 1, { scope, candidateLesson: { title, body, errorSignature: `E:${taskId}`, tags: [], language: python } }), context)).lesson!;
    const good = await make('origin-good', 'Use ISO 8601 with fromisoformat for date strings', 'Parse ISO 8601 date strings with datetime.fromisoformat instead of a hand-written strptime format.');
    const bad = await make('origin-bad', 'Strip the timezone suffix before parsing date strings', 'Remove any timezone suffix from date strings before parsing them with strptime.');
    expect(good.status).toBe(LessonStatus.LESSON_STATUS_CANDIDATE);
    // Comparable tasks without either lesson pass on the first attempt.
    for (const taskId of ['plain-1', 'plain-2']) {
      await api().recordSuccess({ taskId, iteration: 1, goal: 'parse dates', language: python, fixSummary: `approach ${taskId}`, helpedLessonIds: [], resolvedFailureIds: [], iterationsTaken: 1, scope, idempotencyKey: '' }, context);
    }
    // Tasks that applied the good lesson pass at once; tasks that applied the bad one fail again and need three iterations.
    for (const taskId of ['uses-good-1', 'uses-good-2']) {
      await api().recordSuccess({ taskId, iteration: 1, goal: 'parse dates', language: python, fixSummary: `good ${taskId}`, helpedLessonIds: [good.id], resolvedFailureIds: [], iterationsTaken: 1, scope, idempotencyKey: '' }, context);
    }
    for (const taskId of ['uses-bad-1', 'uses-bad-2']) {
      await api().recordFailure(failure(taskId, 1, { scope, appliedLessonIds: [bad.id] }), context);
      await api().recordFailure(failure(taskId, 2, { scope, appliedLessonIds: [bad.id] }), context);
      await api().recordSuccess({ taskId, iteration: 3, goal: 'parse dates', language: python, fixSummary: `bad ${taskId}`, helpedLessonIds: [bad.id], resolvedFailureIds: [], iterationsTaken: 3, scope, idempotencyKey: '' }, context);
    }
    const promoted = (await api().getLesson({ lessonId: good.id }, context)).lesson!;
    expect(promoted.status).toBe(LessonStatus.LESSON_STATUS_PROMOTED);
    expect(promoted.stats).toMatchObject({ timesApplied: 2, appliedSucceeded: 2, appliedMeanIterations: 1 });
    expect(promoted.weight).toBeGreaterThan(0.75);
    const demoted = (await api().getLesson({ lessonId: bad.id }, context)).lesson!;
    expect(demoted.status).toBe(LessonStatus.LESSON_STATUS_RETIRED);
    expect(demoted.stats).toMatchObject({ timesApplied: 2, appliedMeanIterations: 3 });
    expect(demoted.standing.join('\n')).toMatch(/retired[\s\S]*demoted: using it did not help/);
    const found = (await retrieve('ValueError: time data does not match format when parsing date strings with strptime', { scope })).lessons;
    const offered = ids(found);
    expect(offered).toContain(good.id);
    // Retrieval is the loop's call: it ranks by the stored standing, and leaves the outcome comparison to GetLesson.
    expect(found.find((scored) => scored.lesson?.id === good.id)?.lesson?.stats).toMatchObject({ timesApplied: 0, comparableTasks: 0 });
    expect(offered).not.toContain(bad.id);
    const retired = await api().listLessons({ pageSize: 50, pageToken: '', language: 0, tags: [], errorSignature: '', scope, status: LessonStatus.LESSON_STATUS_RETIRED, team: '' }, context);
    expect(retired.lessons.map((lesson) => lesson.id)).toEqual([bad.id]);
  });

  it('redacts secrets before storing', async () => {
    const key = `sk-${'a1B2'.repeat(8)}`;
    const recorded = await api().recordFailure(
      failure('secret-1', 1, { candidateLesson: { title: `Send the key ${key} in a header`, body: `Authorization uses ${key}.`, errorSignature: '', tags: [], language: python } }),
      context,
    );
    expect(JSON.stringify(recorded.lesson)).not.toContain(key);
    const rows = await db.query<{ text: string }>("SELECT title || body AS text FROM memory.lessons WHERE origin_task_id = 'secret-1'");
    expect(rows.rows[0]?.text).toContain('[REDACTED:key]');
  });

  it('redacts with the built-in rules when no redactor is given', async () => {
    const plain = await createMemoryService({ db, reindexOnStart: false, now: () => tick() });
    const key = `sk-proj-${'Zx9Qw2Er7Ty4'.repeat(3)}`;
    const recorded = await plain.implementation.recordFailure(
      failure('secret-builtin', 1, { candidateLesson: { title: 'Pass the key to the client', body: `client = OpenAI(api_key="${key}") failed with 401`, errorSignature: '', tags: [], language: python }, goal: `use ${key}` }),
    );
    expect(JSON.stringify(recorded.lesson)).not.toContain(key);
    expect(recorded.lesson?.body).toMatch(/api_key="?\[REDACTED:[a-z-]+\]/);
    const stored = await db.query<{ goal: string }>("SELECT goal FROM memory.failures WHERE task_id = 'secret-builtin'");
    expect(stored.rows[0]?.goal).not.toContain(key);
    await plain.close();
  });

  it('exports and imports lessons between installations, and refuses another format version', async () => {
    const page = await api().listLessons({ pageSize: 500, pageToken: '', language: 0, tags: [], errorSignature: '', scope: 'git:example/alpha', status: 0, team: '' }, context);
    expect(page.lessons.length).toBeGreaterThan(0);
    const otherDb = await openPglite({ vector: true });
    const other = await createMemoryService({ db: otherDb, now: () => tick() });
    try {
      const imported = await other.implementation.importLessons({ formatVersion: LESSON_EXPORT_VERSION, lessons: page.lessons, scope: '' }, context);
      expect(imported).toEqual({ imported: page.lessons.length, skipped: 0 });
      expect(await other.implementation.importLessons({ formatVersion: LESSON_EXPORT_VERSION, lessons: page.lessons, scope: '' }, context)).toEqual({ imported: 0, skipped: page.lessons.length });
      const found = await other.implementation.retrieveLessons({ taskId: 'q', query: 'database migration order for the schema table', language: python, errorSignature: '', tags: [], limit: 5, minScore: 0.1, scope: 'git:example/alpha', scopeOnly: true, idempotencyKey: '' }, context);
      expect(found.lessons.map((scored) => scored.lesson?.id)).toEqual(page.lessons.map((lesson) => lesson.id));
      const [first] = found.lessons;
      expect((await other.implementation.getLesson({ lessonId: first?.lesson?.id ?? '' }, context)).lesson?.evidence[0]?.taskId).toBe('alpha-1');
      await expect(other.implementation.importLessons({ formatVersion: 2, lessons: page.lessons, scope: '' }, context)).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION, message: expect.stringContaining('format 2') });
      await expect(other.implementation.importLessons({ formatVersion: 1, lessons: [{ ...page.lessons[0]!, id: 'x', title: '' }], scope: '' }, context)).rejects.toMatchObject({ message: expect.stringContaining('lesson 1 of the batch') });
    } finally {
      await other.close();
      await otherDb.close();
    }
  });

  it('re-embeds lessons when the embedder changes, never mixing vectors of two embedders', async () => {
    const wider = await createMemoryService({ db, embedder: new HashingEmbedder(256), reindexOnStart: false, now: () => tick() });
    try {
      const before = await wider.implementation.retrieveLessons({ taskId: 'q', query: 'database migration order', language: python, errorSignature: '', tags: [], limit: 5, minScore: 0.1, scope: 'git:example/alpha', scopeOnly: true, idempotencyKey: '' }, context);
      // Not yet re-embedded: found by its keywords only, its old vector never compared with the new embedder's.
      expect(before.lessons.map((scored) => scored.lesson?.embedder)).toEqual(['hashing-v1-512']);
      let progress = await wider.implementation.reindexLessons({ batchSize: 3 }, context);
      expect(progress).toMatchObject({ embedder: 'hashing-v1-256', reindexed: 3 });
      while (progress.remaining > 0) progress = await wider.implementation.reindexLessons({ batchSize: 0 }, context);
      const after = await wider.implementation.retrieveLessons({ taskId: 'q', query: 'database migration order', language: python, errorSignature: '', tags: [], limit: 5, minScore: 0.1, scope: 'git:example/alpha', scopeOnly: true, idempotencyKey: '' }, context);
      expect(after.lessons.map((scored) => scored.lesson?.embedder)).toEqual(['hashing-v1-256']);
      expect(after.lessons[0]!.score).toBeGreaterThan(before.lessons[0]!.score);
    } finally {
      await wider.close();
    }
  });

  it('forgets a lesson, and keeps at most the configured number per scope', async () => {
    const [first] = (await api().listLessons({ pageSize: 1, pageToken: '', language: 0, tags: [], errorSignature: '', scope: 'git:example/beta', status: 0, team: '' }, context)).lessons;
    expect((await api().forgetLesson({ lessonId: first!.id }, context)).lesson?.id).toBe(first!.id);
    await expect(api().getLesson({ lessonId: first!.id }, context)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(api().forgetLesson({ lessonId: first!.id }, context)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    const small = await createMemoryService({ db, maxLessonsPerScope: 2, reindexOnStart: false, now: () => tick() });
    for (const index of [1, 2, 3]) {
      await small.implementation.recordFailure(failure(`kept-${index}`, 1, { scope: 'tiny', candidateLesson: { title: `Lesson number ${index}`, body: `Body ${index}`, errorSignature: `E${index}`, tags: [], language: python } }), context);
    }
    const kept = await small.implementation.listLessons({ pageSize: 10, pageToken: '', language: 0, tags: [], errorSignature: '', scope: 'tiny', status: 0, team: '' }, context);
    expect(kept.lessons.map((lesson) => lesson.title).sort()).toEqual(['Lesson number 2', 'Lesson number 3']);
    await small.close();
  });
});

describe('keyword relevance weighed by rarity', () => {
  let db: Database;
  let memory: MemoryService;
  beforeAll(async () => {
    db = await openPglite({ vector: true });
    memory = await createMemoryService({ db });
  });
  afterAll(async () => {
    await memory.close();
    await db.close();
  });
  const context = {} as never;
  const lesson = (taskId: string, title: string, body: string, tags: string[] = []) =>
    memory.implementation.recordFailure(
      {
        taskId,
        iteration: 1,
        goal: 'g',
        language: python,
        // No error and no signature: only the lesson's own words are searched, and no two lessons are filed as one.
        error: undefined,
        failureSummary: '',
        candidateLesson: { title, body, errorSignature: '', tags, language: python },
        retrievedLessonIds: [],
        scope: '',
        appliedLessonIds: [],
        idempotencyKey: '',
      },
      context,
    );
  const counts = async () =>
    new Map((await db.query<{ lexeme: string; lessons: number }>("SELECT lexeme, lessons FROM memory.terms WHERE lexeme IN ('test', 'fixtur', 'backoff', 'settings.yaml', 'arithmet')")).rows.map((row) => [row.lexeme, Number(row.lessons)]));
  const total = async () => Number((await db.query<{ lessons: number }>('SELECT lessons FROM memory.term_totals')).rows[0]?.lessons);

  it('ranks the lesson sharing the rare word above those sharing only common ones, and searches tags', async () => {
    const common = [];
    for (const name of ['first', 'second', 'third', 'fourth', 'fifth', 'sixth']) common.push(await lesson(`common-${name}`, `Name the ${name} test after its behaviour`, `A test name says what the test checks, the ${name} case.`));
    const rare = await lesson('rare', 'Reset shared state between runs', 'Give each test a fresh fixture instead of module state.');
    const tagged = await lesson('tagged', 'Sum with integers', 'Keep amounts as whole cents.', ['arithmetic']);
    const found = await memory.implementation.retrieveLessons(
      { taskId: 'q', query: 'the test fails when run after another test: the fixture kept state', language: python, errorSignature: '', tags: [], limit: 3, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' },
      context,
    );
    expect(found.lessons[0]?.lesson?.id).toBe(rare.lesson?.id);
    expect(found.lessons.map((scored) => scored.lesson?.id)).not.toContain(tagged.lesson?.id);
    const byTag = await memory.implementation.retrieveLessons({ taskId: 'q', query: 'arithmetic with money', language: python, errorSignature: '', tags: [], limit: 3, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' }, context);
    expect(byTag.lessons[0]?.lesson?.id).toBe(tagged.lesson?.id);
    expect(common.every((recorded) => recorded.lessonCreated)).toBe(true);
  });

  it('keeps word counts in step with inserts, imports, forgets and text changes', async () => {
    const before = await counts();
    const lessons = await total();
    expect(before.get('test')).toBe(7);
    expect(before.get('fixtur')).toBe(1);
    const quoted = await lesson('quoted', 'Read settings.yaml relative to the module', 'Resolve the path from __file__, not the working directory.', ['backoff']);
    expect((await counts()).get('settings.yaml')).toBe(1);
    expect(await total()).toBe(lessons + 1);
    // A word with punctuation is found as stored (quoted for tsquery, never parsed again).
    const found = await memory.implementation.retrieveLessons({ taskId: 'q', query: 'where is settings.yaml', language: python, errorSignature: '', tags: [], limit: 1, minScore: 0, scope: '', scopeOnly: false, idempotencyKey: '' }, context);
    expect(found.lessons[0]?.lesson?.id).toBe(quoted.lesson?.id);

    const exported = (await memory.implementation.getLesson({ lessonId: quoted.lesson!.id }, context)).lesson!;
    await memory.implementation.forgetLesson({ lessonId: quoted.lesson!.id }, context);
    expect((await counts()).get('settings.yaml')).toBe(0);
    expect((await counts()).get('backoff')).toBe(0);
    expect(await total()).toBe(lessons);
    const imported = await memory.implementation.importLessons({ formatVersion: LESSON_EXPORT_VERSION, lessons: [exported], scope: '' }, context);
    expect(imported.imported).toBe(1);
    expect((await counts()).get('settings.yaml')).toBe(1);
    expect(await total()).toBe(lessons + 1);

    // Statistics updates do not touch the counts; a text change moves them.
    await db.query('UPDATE memory.lessons SET times_retrieved = times_retrieved + 1');
    expect(await counts()).toEqual(new Map([...before, ['settings.yaml', 1], ['backoff', 1]]));
    await db.query("UPDATE memory.lessons SET title = 'Read the file relative to the module', tags = '[]' WHERE id = $1", [quoted.lesson!.id]);
    expect((await counts()).get('settings.yaml')).toBe(0);
    expect((await counts()).get('backoff')).toBe(0);
  });
});
