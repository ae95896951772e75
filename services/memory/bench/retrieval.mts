// Retrieval quality and search latency of the memory service in embedded
// mode (PGlite with pgvector), one run on this machine.
//
// 1. Quality: the labelled set next to this file (retrieval-set.yaml) is
//    recorded into a fresh memory service through its handlers
//    (RecordFailure for lessons, RecordSuccess for success patterns) with the
//    default hashing embedder; every query then goes through RetrieveLessons
//    (limit 5, min_score 0, the labelled lesson's language) as the
//    orchestrator sends it: an error output with the signature of its
//    failure (failureSignature of a report whose failing test carries the
//    output's error line), a goal without one. Reported: the share of
//    queries whose lesson comes first and within the first 3, by query kind,
//    every query whose lesson is not in the first 3 with what ranked
//    instead, and the top 3 share with one change at a time (a task's
//    default min_score, no signatures, vector candidates searched too).
//    Goal: top 3 >= 90 %.
// 2. Latency: RetrieveLessons (top 5) at 1k, 10k and 100k stored lessons,
//    p50 and p95 over the labelled queries and synthetic goals (200 in all,
//    fewer when a size runs out of time). The labelled lessons are stored
//    too, so each size also reports how often their lesson is still in the
//    top 3 among the synthetic ones. Synthetic lessons are bulk-loaded with
//    multi-row INSERTs straight into the service's tables (the word-count
//    triggers run as for any insert): each row copies
//    the columns the service filled for a template lesson of the same
//    language and kind (recorded through the handlers), so the load follows
//    the migrations as they are; secondary indexes are dropped for the load
//    and rebuilt after it, as a restore would; then the service is opened
//    anew, as by a new process (the bench runs no ANALYZE: PGlite has no
//    autovacuum, so the planner's statistics are what the service keeps).
//    Each statement a retrieval ran is replayed alone, and the costliest is
//    EXPLAINed at the largest size. When the vector store has an approximate
//    index (HNSW, IVFFlat), the labelled queries' vector searches are also
//    run with index scans off, to show what the index loses.
//    Goal: under 5 ms p50 at 100k.
//
// Latency runs twice: on PGlite for lessons and vectors (embedded mode), and
// on a Postgres started for the run with the vectors in PGlite (distributed
// mode with `memory.vectors: pglite`): the Postgres on this machine (Debian's
// 15) has no pgvector, so pgvector on Postgres is not measured.
//
// Run with `npm run bench` (builds first) or, after
// `npx nx run @ratchet/memory:build`,
// `node services/memory/bench/retrieval.mts [--sizes=1000,10000,100000] [--queries=200] [--stores=pglite,postgres]`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/memory:bench -c smoke`,
// as CI runs it) measures quality without the one-change variants and latency
// at 200 stored lessons with the labelled queries only (--sizes=200
// --queries=0), on both stores, only to show the bench still runs; its
// figures then mean nothing. Options given still count.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CallContext } from '@ratchet/bus';
import { failureSignature, splitErrorMessage } from '@ratchet/agent';
import { Language, languageToJSON, ListLessonsRequest, RecordFailureRequest, RecordSuccessRequest, RetrieveLessonsRequest, TestCaseStatus, TestReport } from '@ratchet/contracts';
import { openPglite, openPostgres, type Database, type Queryable, type QueryResult } from '@ratchet/db';
import { startPostgres } from '@ratchet/testing';
import { parse as parseYaml } from 'yaml';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createMemoryService, HashingEmbedder, PgVectorStore, type MemoryService } from '@ratchet/memory';

const option = (name: string, fallback: string) => process.argv.find((argument) => argument.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const sizes = option('sizes', smoke ? '200' : '1000,10000,100000').split(',').map(Number);
const queryCount = Number(option('queries', smoke ? '0' : '200'));
/** A size takes no more synthetic queries (after all labelled ones) after this long, so a slow search cannot stretch the run. */
const sizeBudgetMs = 45_000;
const limit = 5;

const languages = { python: Language.LANGUAGE_PYTHON, typescript: Language.LANGUAGE_TYPESCRIPT, javascript: Language.LANGUAGE_JAVASCRIPT } as const;
type LanguageName = keyof typeof languages;
const QueryKind = { ERROR: 'error', GOAL: 'goal' } as const;
type QueryKind = (typeof QueryKind)[keyof typeof QueryKind];

interface SetLesson {
  readonly key: string;
  readonly kind: 'lesson' | 'success-pattern';
  readonly language: LanguageName;
  readonly title: string;
  readonly body: string;
  readonly errorSignature: string;
  readonly tags: readonly string[];
}

interface SetQuery {
  readonly lesson: string;
  readonly kind: QueryKind;
  readonly text: string;
  readonly language: LanguageName;
}

// The handlers ignore the context outside the bus; a long deadline keeps anything that reads it content.
const context: CallContext = { requestId: 'bench', deadline: Date.now() + 3_600_000, signal: new AbortController().signal, headers: {} };

const percentile = (values: readonly number[], p: number) => [...values].sort((left, right) => left - right)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? 0;
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const percent = (part: number, whole: number) => `${whole === 0 ? 0 : Math.round((100 * part) / whole)} %`;
const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 3)}...`;
};

/**
 * Reads and checks the labelled set: unique keys, known languages, every
 * query labelled with a stored lesson, and no two lessons of a language
 * with the same signature (the memory would file the second as evidence).
 *
 * @throws Error naming the entry that is wrong.
 */
function loadSet(file: string): { lessons: SetLesson[]; queries: SetQuery[] } {
  const raw = parseYaml(readFileSync(file, 'utf8')) as { lessons: Record<string, unknown>[]; queries: Record<string, unknown>[] };
  const lessons = raw.lessons.map((entry): SetLesson => {
    const key = String(entry['key']);
    const language = String(entry['language']);
    if (!(language in languages)) throw new Error(`${file}: lesson ${key} has language ${language}; use python, typescript or javascript`);
    const kind = entry['kind'] === 'success-pattern' ? 'success-pattern' : 'lesson';
    const title = String(entry['title'] ?? '');
    if (kind === 'lesson' && title === '') throw new Error(`${file}: lesson ${key} has no title`);
    return { key, kind, language: language as LanguageName, title, body: String(entry['body']), errorSignature: String(entry['error_signature'] ?? ''), tags: (entry['tags'] as string[] | undefined) ?? [] };
  });
  const byKey = new Map(lessons.map((lesson) => [lesson.key, lesson]));
  if (byKey.size !== lessons.length) throw new Error(`${file}: lesson keys are not unique`);
  const signatures = new Set<string>();
  for (const lesson of lessons) {
    if (lesson.errorSignature === '') continue;
    const key = `${lesson.language} ${lesson.errorSignature}`;
    if (signatures.has(key)) throw new Error(`${file}: lesson ${lesson.key} repeats the ${lesson.language} signature ${lesson.errorSignature}`);
    signatures.add(key);
  }
  const queries = raw.queries.map((entry, index): SetQuery => {
    const lesson = byKey.get(String(entry['lesson']));
    if (lesson === undefined) throw new Error(`${file}: query ${index + 1} is labelled with ${String(entry['lesson'])}, which is not a lesson of the set`);
    if (entry['kind'] !== QueryKind.ERROR && entry['kind'] !== QueryKind.GOAL) throw new Error(`${file}: query ${index + 1} has kind ${String(entry['kind'])}; use error or goal`);
    return { lesson: lesson.key, kind: entry['kind'], text: String(entry['text']).trim(), language: lesson.language };
  });
  return { lessons, queries };
}

/** Ids of stored lessons by body, per language: RecordSuccess does not return the pattern it creates. */
async function idsByBody(memory: MemoryService, language: Language): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  let pageToken = '';
  do {
    const page = await memory.implementation.listLessons(ListLessonsRequest.fromPartial({ language, pageSize: 100, pageToken }), context);
    for (const lesson of page.lessons) ids.set(lesson.body.trim(), lesson.id);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return ids;
}

/**
 * Records a lesson of the set through the service's handlers and returns its id.
 *
 * @throws Error when the service merged it into another lesson instead of storing it.
 */
async function record(memory: MemoryService, lesson: SetLesson, taskId: string): Promise<string> {
  const language = languages[lesson.language];
  if (lesson.kind === 'lesson') {
    const response = await memory.implementation.recordFailure(
      RecordFailureRequest.fromPartial({
        taskId,
        iteration: 1,
        goal: 'retrieval bench',
        language,
        candidateLesson: { title: lesson.title, body: lesson.body, errorSignature: lesson.errorSignature, tags: [...lesson.tags], language },
      }),
      context,
    );
    if (!response.lessonCreated || response.lesson === undefined) throw new Error(`lesson ${lesson.key} was filed as evidence on an existing lesson (same signature and language?)`);
    return response.lesson.id;
  }
  await memory.implementation.recordSuccess(RecordSuccessRequest.fromPartial({ taskId, iteration: 1, goal: 'retrieval bench', language, fixSummary: lesson.body, iterationsTaken: 1 }), context);
  const id = (await idsByBody(memory, language)).get(lesson.body.trim());
  if (id === undefined) throw new Error(`success pattern ${lesson.key} is not among the stored lessons after RecordSuccess (merged into a similar one?)`);
  return id;
}

// ---------------------------------------------------------------------------
// 1. Quality
// ---------------------------------------------------------------------------

interface Ranked {
  readonly query: SetQuery;
  /** 1-based rank of the labelled lesson; 0 when it is not returned. */
  readonly rank: number;
  readonly returned: readonly { key: string; score: number }[];
}

/** How a quality pass retrieves: the service as deployed, or with one part changed to show what it contributes. */
interface QualityVariant {
  readonly name: string;
  /** Error queries carry the failure's signature, as the orchestrator sends it when it reflects. */
  readonly signatures: boolean;
  readonly minScore: number;
  /** Search the vectors for candidates too (the service does only for a model embedder). */
  readonly searchVectors?: boolean;
  /** Another weight of vector similarity against keyword relevance than the service's. */
  readonly vectorWeight?: number;
}

/**
 * The failure message a test report would carry for an error output: the
 * first line naming an error type (`TypeError: ...`, pytest's
 * `E   ValueError: ...`, tsc's `error TS...`), else pytest's first `E` line
 * without its marker (pytest reports a failed plain assert as `assert ...`).
 */
function reportedFailure(output: string): string {
  const lines = output.split('\n').map((line) => line.trim());
  const typed = lines.find((line) => line !== '' && (splitErrorMessage(line).errorType !== '' || /\berror TS\d+/.test(line)));
  return typed ?? lines.find((line) => /^E\s/.test(line))?.replace(/^E\s+/, '') ?? '';
}

/** The signature the orchestrator sends with an error output: failureSignature of a report whose failing test has that message. */
function signatureOf(output: string): string {
  const message = reportedFailure(output);
  if (message === '') return '';
  const report = TestReport.fromPartial({ parsed: true, total: 1, failed: 1, cases: [{ name: 'test', status: TestCaseStatus.TEST_CASE_STATUS_FAILED, failureMessage: message }] });
  return failureSignature(report, undefined, []);
}

async function measureQuality(set: { lessons: SetLesson[]; queries: SetQuery[] }, variant: QualityVariant): Promise<Ranked[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ratchet-memory-quality-'));
  const db = await openPglite({ dataDir, vector: true });
  try {
    const memory = await createMemoryService({
      db,
      ...(variant.searchVectors === undefined ? {} : { searchVectors: variant.searchVectors }),
      ...(variant.vectorWeight === undefined ? {} : { vectorWeight: variant.vectorWeight }),
    });
    const keyOf = new Map<string, string>();
    const idOf = new Map<string, string>();
    for (const lesson of set.lessons) {
      const id = await record(memory, lesson, `bench-${lesson.key}`);
      keyOf.set(id, lesson.key);
      idOf.set(lesson.key, id);
    }
    const ranked: Ranked[] = [];
    for (const query of set.queries) {
      const errorSignature = variant.signatures && query.kind === QueryKind.ERROR ? signatureOf(query.text) : '';
      const response = await memory.implementation.retrieveLessons(
        RetrieveLessonsRequest.fromPartial({ taskId: 'bench-query', query: query.text, errorSignature, language: languages[query.language], limit, minScore: variant.minScore }),
        context,
      );
      const ids = response.lessons.map((scored) => scored.lesson?.id ?? '');
      ranked.push({
        query,
        rank: ids.indexOf(idOf.get(query.lesson) ?? '') + 1,
        returned: response.lessons.map((scored) => ({ key: keyOf.get(scored.lesson?.id ?? '') ?? '?', score: scored.score })),
      });
    }
    await memory.close();
    return ranked;
  } finally {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const share = (rows: readonly Ranked[], within: number) => rows.filter((row) => row.rank > 0 && row.rank <= within).length;

function reportQuality(set: { lessons: SetLesson[]; queries: SetQuery[] }, variant: QualityVariant, ranked: readonly Ranked[]): { top1: number; top3: number; top5: number } {
  const line = (name: string, rows: readonly Ranked[]) => `| ${name} | ${rows.length} | ${percent(share(rows, 1), rows.length)} | ${percent(share(rows, 3), rows.length)} | ${percent(share(rows, 5), rows.length)} |`;
  console.log(`\nRetrieval quality: ${set.queries.length} labelled queries over ${set.lessons.length} lessons, hashing embedder, RetrieveLessons limit ${limit}, ${variant.name}\n`);
  console.log('| queries | n | top 1 | top 3 | top 5 |\n|---|---|---|---|---|');
  console.log(line('all', ranked));
  console.log(line('error output', ranked.filter((row) => row.query.kind === QueryKind.ERROR)));
  console.log(line('goal or failure summary', ranked.filter((row) => row.query.kind === QueryKind.GOAL)));
  for (const language of Object.keys(languages) as LanguageName[]) console.log(line(language, ranked.filter((row) => row.query.language === language)));
  const misses = ranked.filter((row) => row.rank === 0 || row.rank > 3);
  console.log(`\nMisses (labelled lesson not in the top 3): ${misses.length}`);
  for (const miss of misses) {
    const instead = miss.returned
      .slice(0, 3)
      .map((item) => `${item.key} ${round(item.score, 2)}`)
      .join(', ');
    console.log(`- [${miss.query.kind}] "${oneLine(miss.query.text, 90)}" -> ${miss.query.lesson} (${miss.rank === 0 ? 'not in the top 5' : `rank ${miss.rank}`}); ranked: ${instead}`);
  }
  const top3 = share(ranked, 3) / ranked.length;
  console.log(`\ntop 3 goal >= 90 %: ${top3 >= 0.9 ? 'met' : 'NOT met'}`);
  return { top1: share(ranked, 1) / ranked.length, top3, top5: share(ranked, 5) / ranked.length };
}

// ---------------------------------------------------------------------------
// 2. Latency
// ---------------------------------------------------------------------------

/** Parameters kept per statement for replaying it. */
const samplesPerStatement = 10;

/** Database that notes the statements run through it, so a retrieval's statements can be replayed and explained. */
class RecordingDatabase implements Database {
  recording = false;
  readonly statements = new Map<string, { calls: number; samples: (readonly unknown[])[] }>();
  readonly inner: Database;

  constructor(inner: Database) {
    this.inner = inner;
  }

  get kind() {
    return this.inner.kind;
  }

  query<R = Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    this.note(sql, params);
    return this.inner.query<R>(sql, params);
  }

  execute(sql: string): Promise<void> {
    return this.inner.execute(sql);
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.inner.transaction((tx) =>
      fn({
        query: <R,>(sql: string, params: readonly unknown[] = []) => {
          this.note(sql, params);
          return tx.query<R>(sql, params);
        },
        execute: (sql: string) => tx.execute(sql),
      }),
    );
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private note(sql: string, params: readonly unknown[]): void {
    if (!this.recording) return;
    const known = this.statements.get(sql) ?? { calls: 0, samples: [] };
    known.calls += 1;
    if (known.samples.length < samplesPerStatement) known.samples.push(params);
    this.statements.set(sql, known);
  }
}

/** Deterministic pseudo-random numbers (mulberry32), so every run loads the same lessons. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const words = (text: string) => text.trim().split(/\s+/);
const vocabulary = {
  verbs: words(
    'check validate close open parse serialise escape sort compare await return raise handle normalise convert read write cache retry guard split join encode decode quote bind narrow copy reset flush merge group filter map reduce index hash lock release batch stream paginate truncate round format sanitise trim pad clamp dedupe memoise schedule cancel debounce throttle',
  ),
  things: words(
    'list dict set tuple string path file directory stream buffer socket request response header cookie token session user order invoice cart price total discount date timestamp timezone duration interval counter key value record row column table query cursor transaction connection pool lock thread task queue event callback promise coroutine iterator generator fixture mock assertion module package config option flag argument environment variable template report log message exception warning signal process child pipe input output encoding url email phone address name title slug tag label category score rank grade matrix grid graph tree node edge heap stack deque map array vector number float integer decimal fraction percentage currency bitmask checksum digest payload schema migration index batch chunk offset limit page window retry backoff deadline quota cache entry snapshot diff patch commit branch tarball archive image thumbnail pixel colour font glyph locale plural unit metric histogram sample seed',
  ),
  adjectives: words(
    'empty nested shared global mutable immutable sorted unsorted duplicate missing optional required stale cached partial large small negative zero unicode binary naive aware relative absolute recursive concurrent async blocking lazy eager default explicit implicit inclusive exclusive trailing leading',
  ),
  reasons: words('shared-state stale-data wrong-order off-by-one rounding lost-update silent-failure flaky memory-growth type-mismatch encoding missing-field duplicates race deadlock timeout leak overflow underflow truncation injection starvation'),
  tools: {
    python: words('pytest argparse json sqlite3 pathlib datetime asyncio dataclasses collections itertools re csv logging subprocess typing functools decimal fractions heapq bisect shutil tempfile unittest.mock enum zoneinfo textwrap struct'),
    typescript: words('node:test tsc zod fetch fs/promises path Map Set Promise Date JSON strictNullChecks esm interface generic tuple union readonly satisfies AbortController URL Intl structuredClone Buffer'),
    javascript: words('node:test fs path Map Set Promise Date JSON esm commonjs require import sort setTimeout EventEmitter fetch URL Intl Buffer stream readline child_process worker_threads WeakMap Symbol Proxy'),
  },
  errors: words('TypeError ValueError KeyError AssertionError RuntimeError Error SyntaxError RangeError'),
  // Made-up names stand for the functions and modules lessons mention.
  syllables: words('ka ri to mu se la po ne vi da lo fe zu ba qui tor ex ran pel dor sin mak gul ost vem'),
} as const;

/**
 * A synthetic lesson: title, two or three sentences from varied templates and
 * usually a signature. Its vectors are about as alike as the labelled set's
 * (mean pairwise cosine 0.18 against 0.16); a narrower vocabulary made them
 * twice as alike, which slows HNSW builds and flatters nothing.
 */
function syntheticLesson(next: () => number, language: LanguageName): { title: string; body: string; errorSignature: string; tags: string[] } {
  const pick = <T,>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  const name = () => Array.from({ length: 2 + Math.floor(next() * 2) }, () => pick(vocabulary.syllables)).join('');
  const { verbs, things, adjectives, reasons } = vocabulary;
  const [verb, thing, adjective, tool] = [pick(verbs), pick(things), pick(adjectives), pick(vocabulary.tools[language])];
  const title = pick([
    `${verb} the ${adjective} ${thing} before ${pick(verbs)}ing it`,
    `Do not ${verb} a ${thing} inside ${pick(things)} ${name()}`,
    `${tool}: ${verb} ${adjective} ${thing}s explicitly`,
    `Keep ${thing} and ${pick(things)} apart in ${name()}`,
    `Prefer ${pick(verbs)} over ${verb} for ${adjective} ${thing}`,
    `${adjective} ${thing} needs ${pick(verbs)} in ${tool}`,
  ]);
  const sentence = () =>
    pick([
      () => `${tool} ${pick(verbs)}s the ${pick(adjectives)} ${pick(things)} ${name()} lazily, so ${pick(reasons)} shows up later.`,
      () => `A ${pick(adjectives)} ${pick(things)} passed to ${name()} loses its ${pick(things)}; ${pick(verbs)} it first.`,
      () => `${pick(verbs)} every ${pick(things)} at the ${pick(things)} boundary and test ${pick(adjectives)} input.`,
      () => `Without ${pick(verbs)}ing, ${name()} returns a ${pick(things)} of ${pick(things)}s that ${pick(reasons)} breaks.`,
      () => `Use ${tool} to ${pick(verbs)} ${pick(things)}s rather than ${pick(verbs)}ing them by hand.`,
      () => `${pick(reasons)} in ${pick(things)} ${name()} came from a ${pick(adjectives)} ${pick(things)}.`,
      () => `Check the ${pick(things)} count after ${pick(verbs)}ing ${name()}.`,
      () => `${name()} expects ${pick(adjectives)} ${pick(things)}s; ${pick(verbs)} ${pick(things)}s to match.`,
    ])();
  const body = Array.from({ length: 2 + Math.floor(next() * 2) }, sentence).join(' ');
  const errorSignature = next() < 0.7 ? `${pick(vocabulary.errors)}: ${adjective} ${thing} '<v>' ${pick(['is not', 'has no', 'cannot be', 'expected'])} ${pick(things)} <n>` : '';
  return { title: `${title[0]?.toUpperCase()}${title.slice(1)}`, body, errorSignature, tags: [thing, tool] };
}

function syntheticGoal(next: () => number, language: LanguageName): string {
  const pick = <T,>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  const { verbs, things, adjectives } = vocabulary;
  return `Write a ${language} ${pick(things)} ${pick(['parser', 'CLI', 'service', 'function', 'module', 'report'])} that ${pick(verbs)}s each ${pick(adjectives)} ${pick(things)} and ${pick(verbs)}s the ${pick(things)} using ${pick(vocabulary.tools[language])}.`;
}

interface Column {
  readonly name: string;
  readonly type: string;
}

/** Columns a row is written with (not generated, not identity), in table order. */
async function columnsOf(db: Queryable, table: string): Promise<Column[]> {
  const result = await db.query<Column>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
     WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' AND a.attidentity = '' ORDER BY a.attnum`,
    [table],
  );
  if (result.rows.length === 0) throw new Error(`table ${table} not found; the memory migrations changed, update the bench`);
  return result.rows;
}

const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * A multi-row INSERT into `table` from arrays: the columns in `overrides`
 * take the expression given (over the unnest columns `u.<name>`), every
 * other column is copied from the template row `t` named by `u.template`.
 */
function bulkInsert(table: string, columns: readonly Column[], overrides: Readonly<Record<string, string>>, arrays: readonly string[]): string {
  const names = columns.map((column) => identifier(column.name)).join(', ');
  const values = columns.map((column) => overrides[column.name] ?? `t.${identifier(column.name)}`).join(', ');
  const unnest = arrays.map((_, index) => `$${index + 1}::text[]`).join(', ');
  return `INSERT INTO ${table} (${names}) SELECT ${values} FROM unnest(${unnest}) AS u(${arrays.join(', ')}) JOIN ${table} t ON t.id = u.template`;
}

interface LoadTimes {
  readonly lessons: number;
  readonly embedMs: number;
  readonly insertMs: number;
  readonly indexMs: number;
  /** Each rebuilt index and its build time. */
  readonly indexes: readonly { readonly name: string; readonly ms: number }[];
}

/** Secondary indexes of the lesson and vector tables (not those behind constraints): dropped for a bulk load, rebuilt after. */
async function secondaryIndexes(db: Queryable): Promise<{ name: string; definition: string }[]> {
  const result = await db.query<{ name: string; definition: string }>(
    `SELECT format('%I.%I', i.schemaname, i.indexname) AS name, i.indexdef AS definition FROM pg_indexes i
     WHERE (i.schemaname, i.tablename) IN (('memory', 'lessons'), ('memory_vectors', 'vectors'))
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
  );
  return result.rows;
}

interface Loader {
  /** Adds synthetic lessons until `total` lessons are stored. */
  grow(total: number): Promise<LoadTimes>;
  readonly copied: readonly string[];
}

/**
 * Records a template lesson and success pattern per language through the
 * handlers, then loads synthetic ones by copying the templates' rows with
 * their own id, text and vector.
 */
async function bulkLoader(db: Database, vectorDb: Database, memory: MemoryService, embedder: HashingEmbedder): Promise<Loader> {
  const templates = new Map<string, string>();
  for (const language of Object.keys(languages) as LanguageName[]) {
    const lessonTemplate = { key: `template-${language}`, kind: 'lesson' as const, language, title: `Template lesson for ${language}`, body: `Bulk-loaded ${language} lessons copy this one's columns.`, errorSignature: `BenchTemplate: ${language}`, tags: [] };
    templates.set(`${language} lesson`, await record(memory, lessonTemplate, `bench-template-${language}`));
    const patternTemplate = { ...lessonTemplate, key: `template-${language}-pattern`, kind: 'success-pattern' as const, body: `Bulk-loaded ${language} success patterns copy the columns of this template.` };
    templates.set(`${language} success-pattern`, await record(memory, patternTemplate, `bench-template-${language}-pattern`));
  }
  const lessonColumns = await columnsOf(db, 'memory.lessons');
  const vectorColumns = await columnsOf(vectorDb, 'memory_vectors.vectors');
  const typeOf = (columns: readonly Column[], name: string) => {
    const column = columns.find((item) => item.name === name);
    if (column === undefined) throw new Error(`no column ${name} in the memory tables; the migrations changed, update the bench`);
    return column.type;
  };
  const lessonOverrides = Object.fromEntries(['id', 'title', 'body', 'error_signature', 'tags'].map((name) => [name, `u.${name}::${typeOf(lessonColumns, name)}`]));
  typeOf(vectorColumns, 'embedding');
  // Integers parse far faster than floats in PGlite; l2_normalize restores the embedder's unit vector to within 1e-6.
  const vectorOverrides = { id: 'u.id::text', embedding: 'l2_normalize(u.embedding::int[]::vector)' };
  const insertLessons = bulkInsert('memory.lessons', lessonColumns, lessonOverrides, ['template', 'id', 'title', 'body', 'error_signature', 'tags']);
  const insertVectors = bulkInsert('memory_vectors.vectors', vectorColumns, vectorOverrides, ['template', 'id', 'embedding']);
  const next = random(42);
  let stored = Number((await db.query<{ count: string }>('SELECT count(*) AS count FROM memory.lessons')).rows[0]?.count ?? 0);
  const batch = 2_000;
  return {
    copied: [...lessonColumns.filter((column) => lessonOverrides[column.name] === undefined).map((column) => `lessons.${column.name}`), ...vectorColumns.filter((column) => !(column.name in vectorOverrides)).map((column) => `vectors.${column.name}`)],
    async grow(total) {
      const started = stored;
      // One list per database (the same one twice when vectors live with the lessons).
      const databases = vectorDb === db ? [db] : [db, vectorDb];
      const indexes = (await Promise.all(databases.map(async (owner) => (await secondaryIndexes(owner)).map((index) => ({ ...index, owner }))))).flat();
      for (const index of indexes) await index.owner.execute(`DROP INDEX ${index.name}`);
      let embedMs = 0;
      let insertMs = 0;
      while (stored < total) {
        let mark = performance.now();
        const rows = Array.from({ length: Math.min(batch, total - stored) }, (_, offset) => {
          // Half Python, the rest TypeScript and JavaScript; one in six a success pattern.
          const draw = next();
          const language: LanguageName = draw < 0.5 ? 'python' : draw < 0.8 ? 'typescript' : 'javascript';
          const kind = next() < 1 / 6 ? 'success-pattern' : 'lesson';
          const lesson = syntheticLesson(next, language);
          return { template: templates.get(`${language} ${kind}`) as string, id: `synthetic-${stored + offset}`, ...lesson, title: kind === 'lesson' ? lesson.title : `Worked: ${lesson.title}` };
        });
        const vectors = await embedder.embed(rows.map((row) => [row.title, row.body, row.errorSignature].filter((part) => part !== '').join('\n')));
        const integers = vectors.map((vector) => `{${Array.from(vector, (value) => Math.round(value * 1e6)).join(',')}}`);
        embedMs += performance.now() - mark;
        mark = performance.now();
        const lessonRows = [rows.map((row) => row.template), rows.map((row) => row.id), rows.map((row) => row.title), rows.map((row) => row.body), rows.map((row) => row.errorSignature), rows.map((row) => JSON.stringify(row.tags))];
        const vectorRows = [rows.map((row) => row.template), rows.map((row) => row.id), integers];
        if (vectorDb === db) {
          await db.transaction(async (tx) => {
            await tx.query(insertLessons, lessonRows);
            await tx.query(insertVectors, vectorRows);
          });
        } else {
          await db.query(insertLessons, lessonRows);
          await vectorDb.query(insertVectors, vectorRows);
        }
        insertMs += performance.now() - mark;
        stored += rows.length;
      }
      const rebuilt = [];
      for (const index of indexes) {
        const mark = performance.now();
        // An HNSW graph of 100k 512-dimension vectors takes about 300 MB to build in memory. Only for it: with 512 MB
        // for every index, the HNSW build after the GIN one ended in a PGlite PANIC (XLogBeginInsert was already called).
        const hnsw = / USING hnsw /i.test(index.definition);
        if (hnsw) await index.owner.execute(`SET maintenance_work_mem = '512MB'`);
        await index.owner.execute(index.definition);
        if (hnsw) await index.owner.execute('RESET maintenance_work_mem');
        rebuilt.push({ name: index.name, ms: performance.now() - mark });
      }
      // No ANALYZE here: PGlite has no autovacuum, so the planner's statistics are whatever the service keeps up itself.
      return { lessons: stored - started, embedMs, insertMs, indexMs: rebuilt.reduce((sum, index) => sum + index.ms, 0), indexes: rebuilt };
    },
  };
}

interface SizeResult {
  readonly lessons: number;
  readonly load: LoadTimes;
  /** Opening the memory service on the loaded database, background re-embedding included. */
  readonly openMs: number;
  readonly queries: number;
  readonly p50: number;
  readonly p95: number;
  /** Labelled queries whose lesson RetrieveLessons ranks in the top 3 among all the stored lessons. */
  readonly labelledTop3: number;
  /** The labelled queries' vector searches with the index and exact: hits in common, and how often each has the labelled lesson. */
  readonly vectors: { readonly searches: number; readonly found: number; readonly expected: number; readonly labelledIndexed: number; readonly labelledExact: number };
  readonly statements: readonly Statement[];
}

interface Statement {
  readonly sql: string;
  /** The database it ran on. */
  readonly on: Queryable;
  readonly callsPerQuery: number;
  readonly medianMs: number;
  readonly maxMs: number;
  /** Parameters of its slowest replay. */
  readonly slowest: readonly unknown[];
}

/**
 * Where a latency run keeps the lessons: PGlite for lessons and vectors
 * (embedded mode), or Postgres for the lessons with the vectors in PGlite
 * (distributed mode with `memory.vectors: pglite`, for a Postgres without
 * pgvector, as on this machine).
 */
const Store = { PGLITE: 'pglite', POSTGRES: 'postgres' } as const;
type Store = (typeof Store)[keyof typeof Store];
const storeNames: Record<Store, string> = { pglite: 'PGlite (lessons and vectors)', postgres: 'Postgres 15 (lessons) + PGlite (vectors)' };

async function measureLatency(set: { lessons: SetLesson[]; queries: SetQuery[] }, store: Store): Promise<{ results: SizeResult[]; copied: readonly string[]; explained: string }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ratchet-memory-latency-'));
  const server = store === Store.POSTGRES ? await startPostgres() : undefined;
  const vectorInner = await openPglite({ dataDir, vector: true });
  const inner = server === undefined ? vectorInner : await openPostgres({ connectionString: server.connectionString });
  const db = new RecordingDatabase(inner);
  const vectorDb = inner === vectorInner ? db : new RecordingDatabase(vectorInner);
  const recorders = [...new Set([db, vectorDb])];
  const open = async () => createMemoryService({ db, vectors: await PgVectorStore.open(vectorDb) });
  try {
    let memory = await open();
    const embedder = new HashingEmbedder();
    // The labelled lessons are stored too, so each size also says whether they are still found among the synthetic ones.
    const idOf = new Map<string, string>();
    for (const lesson of set.lessons) idOf.set(lesson.key, await record(memory, lesson, `bench-latency-${lesson.key}`));
    const kindOf = new Map(set.lessons.map((lesson) => [lesson.key, lesson.kind]));
    const loader = await bulkLoader(inner, vectorInner, memory, embedder);
    const next = random(7);
    const languageNames = Object.keys(languages) as LanguageName[];
    const queries: { text: string; language: LanguageName; kind?: QueryKind; lesson?: string }[] = [
      ...set.queries,
      ...Array.from({ length: Math.max(0, queryCount - set.queries.length) }, (_, index) => {
        const language = languageNames[index % languageNames.length] as LanguageName;
        return { text: syntheticGoal(next, language), language };
      }),
    ];
    const retrieve = (query: { text: string; language: LanguageName; kind?: QueryKind }) =>
      memory.implementation.retrieveLessons(
        RetrieveLessonsRequest.fromPartial({ taskId: 'bench-latency', query: query.text, errorSignature: query.kind === QueryKind.ERROR ? signatureOf(query.text) : '', language: languages[query.language], limit, minScore: 0 }),
        context,
      );
    const results: SizeResult[] = [];
    for (const size of sizes) {
      const load = await loader.grow(size);
      // Then a new process opens the memory, so what the service does on start (migrations, statistics, re-embedding) happens as it would.
      await memory.close();
      let mark = performance.now();
      memory = await open();
      await memory.reindexed;
      const openMs = performance.now() - mark;
      console.log(`  loaded ${load.lessons} lessons: ${round(load.embedMs / 1000)} s embedding, ${round(load.insertMs / 1000)} s inserting, ${round(load.indexMs / 1000)} s rebuilding indexes; service opened in ${Math.round(openMs)} ms`);
      for (const query of queries.slice(0, 5)) await retrieve(query);
      for (const recorder of recorders) {
        recorder.statements.clear();
        recorder.recording = true;
      }
      const timings: number[] = [];
      let labelledTop3 = 0;
      const started = performance.now();
      for (const query of queries) {
        // Every labelled query runs; the synthetic ones after them until the query count or the time budget is reached.
        if (query.lesson === undefined && (timings.length >= queryCount || performance.now() - started > sizeBudgetMs)) break;
        mark = performance.now();
        const response = await retrieve(query);
        timings.push(performance.now() - mark);
        if (query.lesson !== undefined && response.lessons.slice(0, 3).some((scored) => scored.lesson?.id === idOf.get(query.lesson ?? ''))) labelledTop3 += 1;
      }
      for (const recorder of recorders) recorder.recording = false;
      // Each statement alone, once per kept parameter set: where a retrieval's time goes.
      const statements: Statement[] = [];
      for (const recorder of recorders) {
        for (const [sql, { calls, samples }] of recorder.statements) {
          const replays = [];
          for (const params of samples) {
            mark = performance.now();
            await recorder.inner.query(sql, params);
            replays.push({ ms: performance.now() - mark, params });
          }
          const slowest = replays.reduce((worst, replay) => (replay.ms > worst.ms ? replay : worst));
          statements.push({ sql, on: recorder.inner, callsPerQuery: calls / timings.length, medianMs: percentile(replays.map((replay) => replay.ms), 50), maxMs: slowest.ms, slowest: slowest.params });
        }
      }
      statements.sort((left, right) => right.medianMs * right.callsPerQuery - left.medianMs * left.callsPerQuery);
      // What an approximate index loses: each labelled query's vector search as a retrieval makes it (15 of the labelled
      // lesson's kind), on the service's store, with index scans and without (the planner then has exact plans only).
      // On the store rather than whole retrievals, because those also differ where keyword scores tie.
      const vectorStore = await PgVectorStore.open(vectorInner);
      const vectors = { searches: 0, found: 0, expected: 0, labelledIndexed: 0, labelledExact: 0 };
      const approximateIndexes = await vectorInner.query(`SELECT 1 FROM pg_indexes WHERE schemaname = 'memory_vectors' AND indexdef ~* 'USING (hnsw|ivfflat)'`);
      // Without an approximate index every search is exact already; comparing would only cost time.
      for (const query of approximateIndexes.rows.length === 0 ? [] : set.queries) {
        const [vector] = await embedder.embed([query.text]);
        const options = { limit: 3 * limit, minScore: 0, embedder: embedder.id, filter: { kind: kindOf.get(query.lesson) ?? 'lesson', language: languageToJSON(languages[query.language]), scopes: ['global'] } };
        const approximate = (await vectorStore.search(vector as Float32Array, options)).map((hit) => hit.id);
        await vectorInner.execute('SET enable_indexscan = off');
        const exact = new Set((await vectorStore.search(vector as Float32Array, options)).map((hit) => hit.id));
        await vectorInner.execute('RESET enable_indexscan');
        vectors.searches += 1;
        vectors.found += approximate.filter((id) => exact.has(id)).length;
        vectors.expected += exact.size;
        if (approximate.includes(idOf.get(query.lesson) ?? '')) vectors.labelledIndexed += 1;
        if (exact.has(idOf.get(query.lesson) ?? '')) vectors.labelledExact += 1;
      }
      results.push({
        lessons: size,
        load,
        openMs,
        queries: timings.length,
        p50: percentile(timings, 50),
        p95: percentile(timings, 95),
        labelledTop3: labelledTop3 / set.queries.length,
        vectors,
        statements,
      });
      console.log(`  ${size} lessons: p50 ${round(percentile(timings, 50), 2)} ms over ${timings.length} queries`);
    }
    const costliest = results.at(-1)?.statements[0];
    const explained =
      costliest === undefined
        ? ''
        : (await costliest.on.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${costliest.sql}`, costliest.slowest)).rows
            .map((row) => row['QUERY PLAN'])
            .join('\n')
            .replace(/'\[[^\]]{40,}\]'/g, "'[...]'");
    await memory.close();
    return { results, copied: loader.copied, explained };
  } finally {
    for (const recorder of recorders) await recorder.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function reportLatency(store: Store, latency: { results: SizeResult[]; copied: readonly string[]; explained: string }): void {
  console.log(`\nRetrieveLessons latency (top 5, min_score 0, same language), ${storeNames[store]}, in temp dirs; ms\n`);
  console.log('| stored lessons | queries | p50 | p95 | labelled top 3 | labelled lesson in vector top 15: index / exact | vector recall@15 | load: embed s | insert s | index rebuild s | service open ms |\n|---|---|---|---|---|---|---|---|---|---|---|');
  for (const result of latency.results) {
    const { searches, found, expected, labelledIndexed, labelledExact } = result.vectors;
    const [inTop15, recall] = searches === 0 ? ['exact search (no vector index)', '100 %'] : [`${labelledIndexed} / ${labelledExact} of ${searches}`, percent(found, expected)];
    console.log(
      `| ${result.lessons} | ${result.queries} | ${round(result.p50, 2)} | ${round(result.p95, 2)} | ${percent(result.labelledTop3, 1)} | ${inTop15} | ${recall} | ${round(result.load.embedMs / 1000)} | ${round(result.load.insertMs / 1000)} | ${round(result.load.indexMs / 1000)} | ${Math.round(result.openMs)} |`,
    );
  }
  console.log('(loads are cumulative: each size adds the lessons above the previous one; the labelled set is stored with the synthetic lessons.');
  console.log(' labelled top 3: RetrieveLessons as served; vector columns: the store\'s search against the same search with index scans off)');
  console.log(`Copied from the template rows: ${latency.copied.join(', ')}`);
  for (const result of latency.results) {
    console.log(`\nAt ${result.lessons} lessons, index rebuilds: ${result.load.indexes.map((index) => `${index.name} ${round(index.ms / 1000)} s`).join(', ')}`);
    console.log(`Statements of a retrieval, each replayed alone with up to ${samplesPerStatement} recorded parameter sets (ms):\n`);
    console.log('| statement | calls per retrieval | median | max |\n|---|---|---|---|');
    for (const statement of result.statements) {
      console.log(`| ${oneLine(statement.sql, 110).replaceAll('|', '\\|')} | ${round(statement.callsPerQuery, 2)} | ${round(statement.medianMs, 2)} | ${round(statement.maxMs, 2)} |`);
    }
  }
  const largest = latency.results.at(-1);
  if (largest !== undefined) {
    console.log(`\nEXPLAIN ANALYZE of the costliest statement at ${largest.lessons} lessons, with its slowest parameters:\n${latency.explained}`);
    const goal = largest.lessons >= 100_000 ? `; goal < 5 ms p50 at 100k: ${largest.p50 < 5 ? 'met' : 'NOT met'}` : '';
    console.log(`\np50 at ${largest.lessons} lessons on ${storeNames[store]}: ${round(largest.p50, 2)} ms${goal}`);
  }
}

const set = loadSet(path.join(import.meta.dirname, 'retrieval-set.yaml'));
let mark = performance.now();
// As the service runs: error outputs carry the failure's signature as the orchestrator sends it when it reflects, min_score 0
// so every rank is seen. Then one change at a time: the default min_score of a task (0.2, config/cli.yaml), no signature,
// and vector candidates searched as for a model embedder.
const served: QualityVariant = { name: 'error outputs with their failure signature, min_score 0, same language', signatures: true, minScore: 0 };
// A smoke run measures none of them: each records the whole set into a fresh memory again.
const variants: QualityVariant[] = smoke
  ? []
  : [
      { name: 'min_score 0.2 (a task\'s default)', signatures: true, minScore: 0.2 },
      { name: 'no signatures sent', signatures: false, minScore: 0 },
      { name: 'vector candidates searched too', signatures: true, minScore: 0, searchVectors: true },
      // The weight of vector similarity (the service's is 0.35 for the hashing embedder), on a coarse grid.
      ...[0, 0.2, 0.5, 0.65, 0.8].map((vectorWeight) => ({ name: `vector weight ${vectorWeight}`, signatures: true, minScore: 0, vectorWeight })),
    ];
const ranked = await measureQuality(set, served);
const quality = reportQuality(set, served, ranked);
console.log('\nThe same queries with one change (top 3 share):\n');
console.log('| change | all | error output | goal or failure summary |\n|---|---|---|---|');
const kindShare = (rows: readonly Ranked[], kind?: QueryKind) => {
  const chosen = rows.filter((row) => kind === undefined || row.query.kind === kind);
  return percent(share(chosen, 3), chosen.length);
};
console.log(`| none (as above) | ${kindShare(ranked)} | ${kindShare(ranked, QueryKind.ERROR)} | ${kindShare(ranked, QueryKind.GOAL)} |`);
const changed: { name: string; top3: number }[] = [];
for (const variant of variants) {
  const rows = await measureQuality(set, variant);
  changed.push({ name: variant.name, top3: share(rows, 3) / rows.length });
  console.log(`| ${variant.name} | ${kindShare(rows)} | ${kindShare(rows, QueryKind.ERROR)} | ${kindShare(rows, QueryKind.GOAL)} |`);
}
console.log(`(quality: ${round((performance.now() - mark) / 1000)} s)`);
// The Postgres of this machine (Debian's 15) has no pgvector: there, the vectors stay in PGlite, as memory.vectors: pglite does.
const stores = option('stores', 'pglite,postgres').split(',') as Store[];
const latencies: { store: Store; results: SizeResult[] }[] = [];
for (const store of stores) {
  if (!Object.values(Store).includes(store)) throw new Error(`--stores: ${store} is not pglite or postgres`);
  console.log(`\nLoading and measuring latency on ${storeNames[store]}`);
  mark = performance.now();
  const latency = await measureLatency(set, store);
  reportLatency(store, latency);
  latencies.push({ store, results: latency.results });
  console.log(`(latency: ${round((performance.now() - mark) / 1000)} s)`);
}
console.log(
  JSON.stringify({
    bench: 'memory-retrieval',
    quality: { queries: ranked.length, lessons: set.lessons.length, top1: round(quality.top1, 3), top3: round(quality.top3, 3), top5: round(quality.top5, 3), changes: changed.map((change) => ({ ...change, top3: round(change.top3, 3) })), misses: ranked.filter((row) => row.rank === 0 || row.rank > 3).map((row) => ({ query: oneLine(row.query.text, 60), lesson: row.query.lesson, rank: row.rank })) },
    latency: latencies.flatMap(({ store, results }) => results.map((result) => ({ store, lessons: result.lessons, queries: result.queries, p50Ms: round(result.p50, 2), p95Ms: round(result.p95, 2), labelledTop3: round(result.labelledTop3, 3), vectors: result.vectors, loadMs: { embed: Math.round(result.load.embedMs), insert: Math.round(result.load.insertMs), indexes: Math.round(result.load.indexMs) }, openMs: Math.round(result.openMs) }))),
  }),
);
