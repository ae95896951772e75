import { randomUUID } from 'node:crypto';
import { Language, languageFromJSON, languageToJSON, type Lesson, type LessonEvidence } from '@ratchet/contracts';
import { migrate, type Database, type Queryable } from '@ratchet/db';
import { memoryMigrations } from './migrations';

/** What a lesson is: advice from a failure, or the record of a success. */
export const LessonKind = { LESSON: 'lesson', SUCCESS_PATTERN: 'success-pattern' } as const;
export type LessonKind = (typeof LessonKind)[keyof typeof LessonKind];

interface LessonRow {
  id: string;
  kind: string;
  title: string;
  body: string;
  error_signature: string;
  tags: string[];
  language: string;
  times_retrieved: string | number;
  times_helped: string | number;
  times_not_helped: string | number;
  last_retrieved_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  evidence?: { taskId: string; iteration: number; failureSummary: string; fixSummary: string; recordedAt: Date | string }[];
}

export interface NewLesson {
  readonly kind: LessonKind;
  readonly title: string;
  readonly body: string;
  readonly errorSignature: string;
  readonly tags: readonly string[];
  readonly language: Language;
}

export interface NewEvidence {
  readonly taskId: string;
  readonly iteration: number;
  readonly failureSummary: string;
  readonly fixSummary: string;
}

const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));

/** Lessons, evidence, failures and successes in the `memory` schema. */
export class LessonStore {
  private constructor(readonly db: Database) {}

  static async open(db: Database): Promise<LessonStore> {
    await migrate(db, 'memory', memoryMigrations);
    return new LessonStore(db);
  }

  async createLesson(tx: Queryable, lesson: NewLesson, now: Date): Promise<string> {
    const id = randomUUID();
    await tx.query(
      `INSERT INTO memory.lessons (id, kind, title, body, error_signature, tags, language, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$8)`,
      [id, lesson.kind, lesson.title, lesson.body, lesson.errorSignature, JSON.stringify(lesson.tags), languageToJSON(lesson.language), now],
    );
    return id;
  }

  async addEvidence(tx: Queryable, lessonId: string, evidence: NewEvidence, now: Date): Promise<void> {
    await tx.query(`INSERT INTO memory.evidence (lesson_id, task_id, iteration, failure_summary, fix_summary, recorded_at) VALUES ($1,$2,$3,$4,$5,$6)`, [
      lessonId,
      evidence.taskId,
      evidence.iteration,
      evidence.failureSummary,
      evidence.fixSummary,
      now,
    ]);
    await tx.query('UPDATE memory.lessons SET updated_at = $2 WHERE id = $1', [lessonId, now]);
  }

  /**
   * Records a failure and, with a candidate lesson, files it: as evidence on
   * the advice lesson with the same signature and language, or as a new
   * lesson when there is none. One statement (data-modifying CTEs), so it is
   * atomic and costs one round trip.
   */
  async recordFailure(
    failure: { taskId: string; iteration: number; goal: string; language: Language; code: string; message: string; signature: string; summary: string },
    draft: { title: string; body: string; tags: readonly string[] } | undefined,
    now: Date,
  ): Promise<{ failureId: string; lessonId: string | undefined; created: boolean }> {
    const failureId = randomUUID();
    const result = await this.db.query<{ lesson_id: string | null; created: boolean }>(
      `WITH found AS (
         SELECT id FROM memory.lessons
         WHERE $12 AND $8 <> '' AND error_signature = $8 AND language = $5 AND kind = 'lesson'
         ORDER BY created_at LIMIT 1
       ), created AS (
         INSERT INTO memory.lessons (id, kind, title, body, error_signature, tags, language, created_at, updated_at)
         SELECT $11, 'lesson', $13, $14, $8, $15::jsonb, $5, $10, $10 WHERE $12 AND NOT EXISTS (SELECT 1 FROM found)
         RETURNING id
       ), lesson AS (
         SELECT id FROM found UNION ALL SELECT id FROM created
       ), touched AS (
         UPDATE memory.lessons SET updated_at = $10 WHERE id IN (SELECT id FROM found) RETURNING id
       ), evidence AS (
         INSERT INTO memory.evidence (lesson_id, task_id, iteration, failure_summary, fix_summary, recorded_at)
         SELECT id, $2, $3, $9, '', $10 FROM lesson
         RETURNING id
       ), failure AS (
         INSERT INTO memory.failures (id, task_id, iteration, goal, language, error_code, error_message, error_signature, summary, lesson_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, (SELECT id FROM lesson), $10)
         RETURNING id
       )
       SELECT (SELECT id FROM lesson) AS lesson_id, EXISTS (SELECT 1 FROM created) AS created FROM failure`,
      [
        failureId,
        failure.taskId,
        failure.iteration,
        failure.goal,
        languageToJSON(failure.language),
        failure.code,
        failure.message,
        failure.signature,
        failure.summary,
        now,
        randomUUID(),
        draft !== undefined,
        draft?.title ?? '',
        draft?.body ?? '',
        JSON.stringify(draft?.tags ?? []),
      ],
    );
    const row = result.rows[0];
    return { failureId, lessonId: row?.lesson_id ?? undefined, created: row?.created === true };
  }

  /** Marks failures resolved and returns their lesson ids (with the iteration each failed in). */
  async resolveFailures(tx: Queryable, failureIds: readonly string[], now: Date): Promise<{ lessonId: string; iteration: number }[]> {
    if (failureIds.length === 0) return [];
    const result = await tx.query<{ lesson_id: string | null; iteration: number }>(
      'UPDATE memory.failures SET resolved_at = $2 WHERE id = ANY($1::text[]) RETURNING lesson_id, iteration',
      [[...failureIds], now],
    );
    return result.rows.flatMap((row) => (row.lesson_id === null ? [] : [{ lessonId: row.lesson_id, iteration: row.iteration }]));
  }

  async recordSuccess(tx: Queryable, success: { taskId: string; goal: string; language: Language; fixSummary: string; iterationsTaken: number; lessonId: string }, now: Date): Promise<string> {
    const id = randomUUID();
    await tx.query(`INSERT INTO memory.successes (id, task_id, goal, language, fix_summary, iterations_taken, lesson_id, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`, [
      id,
      success.taskId,
      success.goal,
      languageToJSON(success.language),
      success.fixSummary,
      success.iterationsTaken,
      success.lessonId,
      now,
    ]);
    return id;
  }

  async countHelped(tx: Queryable, lessonIds: readonly string[]): Promise<void> {
    if (lessonIds.length === 0) return;
    await tx.query('UPDATE memory.lessons SET times_helped = times_helped + 1 WHERE id = ANY($1::text[])', [[...lessonIds]]);
  }

  /** Lessons by id with their evidence, in the order of `ids`; unknown ids are skipped. */
  async lessons(ids: readonly string[], tx: Queryable = this.db): Promise<Lesson[]> {
    if (ids.length === 0) return [];
    const rows = (await tx.query<LessonRow>(`SELECT l.*, ${evidenceColumn} FROM memory.lessons l WHERE l.id = ANY($1::text[])`, [[...ids]])).rows;
    return inOrder(ids, rows);
  }

  /** Counts the lessons as retrieved and returns them with their evidence, in the order of `ids`: one statement. */
  async retrieved(ids: readonly string[], now: Date): Promise<Lesson[]> {
    if (ids.length === 0) return [];
    const rows = (
      await this.db.query<LessonRow>(
        `UPDATE memory.lessons l SET times_retrieved = times_retrieved + 1, last_retrieved_at = $2 WHERE l.id = ANY($1::text[]) RETURNING l.*, ${evidenceColumn}`,
        [[...ids], now],
      )
    ).rows;
    return inOrder(ids, rows);
  }

  /** Signature matches for retrieval (exact, same language unless unspecified). */
  async idsBySignature(signature: string, language: Language, limit: number): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(
      `SELECT id FROM memory.lessons WHERE error_signature = $1 AND ($2 = '' OR language = $2) ORDER BY times_helped DESC, created_at DESC LIMIT $3`,
      [signature, language === Language.LANGUAGE_UNSPECIFIED ? '' : languageToJSON(language), limit],
    );
    return result.rows.map((row) => row.id);
  }

  /** A page of lessons, newest first, with optional filters. */
  async list(filter: { language: Language; tags: readonly string[]; errorSignature: string }, offset: number, limit: number): Promise<{ ids: string[]; more: boolean }> {
    const result = await this.db.query<{ id: string }>(
      `SELECT id FROM memory.lessons
       WHERE ($1 = '' OR language = $1) AND ($2 = '' OR error_signature = $2) AND (cardinality($3::text[]) = 0 OR tags ?& $3::text[])
       ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`,
      [filter.language === Language.LANGUAGE_UNSPECIFIED ? '' : languageToJSON(filter.language), filter.errorSignature, [...filter.tags], limit + 1, offset],
    );
    const ids = result.rows.map((row) => row.id);
    return { ids: ids.slice(0, limit), more: ids.length > limit };
  }
}

/** Evidence of a lesson row as a JSON array, so lessons and their evidence come back in one statement. */
const evidenceColumn = `coalesce((SELECT json_agg(json_build_object('taskId', e.task_id, 'iteration', e.iteration, 'failureSummary', e.failure_summary, 'fixSummary', e.fix_summary, 'recordedAt', e.recorded_at) ORDER BY e.id)
  FROM memory.evidence e WHERE e.lesson_id = l.id), '[]'::json) AS evidence`;

function inOrder(ids: readonly string[], rows: readonly LessonRow[]): Lesson[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    if (row === undefined) return [];
    const evidence = (row.evidence ?? []).map((item) => ({ ...item, recordedAt: date(item.recordedAt) }));
    return [toLesson(row, evidence)];
  });
}

function toLesson(row: LessonRow, evidence: LessonEvidence[]): Lesson {
  return {
    id: row.id,
    title: row.title,
    body: row.body,
    errorSignature: row.error_signature,
    tags: row.kind === LessonKind.SUCCESS_PATTERN && !row.tags.includes(LessonKind.SUCCESS_PATTERN) ? [...row.tags, LessonKind.SUCCESS_PATTERN] : row.tags,
    language: languageFromJSON(row.language),
    evidence,
    stats: {
      timesRetrieved: Number(row.times_retrieved),
      timesHelped: Number(row.times_helped),
      timesNotHelped: Number(row.times_not_helped),
      lastRetrievedAt: row.last_retrieved_at === null ? undefined : date(row.last_retrieved_at),
    },
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  };
}
