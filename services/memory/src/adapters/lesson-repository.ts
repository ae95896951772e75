import { randomUUID } from 'node:crypto';
import { languageToJSON, type Language, type Lesson } from '@ratchet/contracts';
import type { Database, Queryable } from '@ratchet/db';
import { evidenceColumn, inOrder, languageKey, LessonKind, noEvidenceColumn, statusName, type LessonRow } from './lesson-rows';

export { LessonKind, statusName } from './lesson-rows';

export interface NewLesson {
  readonly kind: LessonKind;
  readonly scope: string;
  /** The task it was learnt from: its own later iterations do not count as uses. */
  readonly originTaskId: string;
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

/**
 * Lessons and their evidence (memory.lessons, memory.evidence): creating,
 * importing, reading, listing and forgetting them, and the retention limit
 * per scope. Counting retrievals is `LessonSearch`'s, standing
 * `OutcomeRepository`'s, failures and successes their repositories'.
 */
export class LessonRepository {
  constructor(private readonly db: Database) {}

  async createLesson(tx: Queryable, lesson: NewLesson, now: Date): Promise<string> {
    const id = randomUUID();
    await tx.query(
      `INSERT INTO memory.lessons (id, kind, title, body, error_signature, tags, language, scope, origin_task_id, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$10)`,
      [id, lesson.kind, lesson.title, lesson.body, lesson.errorSignature, JSON.stringify(lesson.tags), languageToJSON(lesson.language), lesson.scope, lesson.originTaskId, now],
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
   * Lessons by id, in the order of `ids`; unknown ids are skipped. With their
   * evidence unless `evidence` is false (the loop's calls, which read none).
   */
  async lessons(ids: readonly string[], { evidence = true }: { evidence?: boolean } = {}): Promise<Lesson[]> {
    if (ids.length === 0) return [];
    const rows = (await this.db.query<LessonRow>(`SELECT l.*, ${evidence ? evidenceColumn : noEvidenceColumn} FROM memory.lessons l WHERE l.id = ANY($1::text[])`, [[...ids]])).rows;
    return inOrder(ids, rows);
  }

  /** Deletes a lesson with its evidence; failure and success records keep no link to it. Returns whether it existed. */
  async forget(id: string): Promise<boolean> {
    const result = await this.db.query('DELETE FROM memory.lessons WHERE id = $1', [id]);
    return result.rowCount > 0;
  }

  /** Whether lessons with these ids exist, as the set of those that do. */
  async existing(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const result = await this.db.query<{ id: string }>('SELECT id FROM memory.lessons WHERE id = ANY($1::text[])', [[...ids]]);
    return new Set(result.rows.map((row) => row.id));
  }

  /** Stores an exported lesson as it was (id, evidence, counters, standing); its vector is made by the caller. */
  async importLesson(tx: Queryable, lesson: Lesson, kind: LessonKind, scope: string, now: Date): Promise<void> {
    const stats = lesson.stats;
    await tx.query(
      `INSERT INTO memory.lessons (id, kind, title, body, error_signature, tags, language, scope, status, origin_task_id, times_retrieved, times_helped, times_not_helped, last_retrieved_at, last_helped_at, created_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6::jsonb,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)`,
      [
        lesson.id,
        kind,
        lesson.title,
        lesson.body,
        lesson.errorSignature,
        JSON.stringify(lesson.tags.filter((tag) => tag !== LessonKind.SUCCESS_PATTERN || kind === LessonKind.SUCCESS_PATTERN)),
        languageToJSON(lesson.language),
        scope,
        statusName(lesson.status),
        lesson.evidence[0]?.taskId ?? '',
        stats?.timesRetrieved ?? 0,
        stats?.timesHelped ?? 0,
        stats?.timesNotHelped ?? 0,
        stats?.lastRetrievedAt ?? null,
        stats?.lastHelpedAt ?? null,
        lesson.createdAt ?? now,
        now,
      ],
    );
    for (const evidence of lesson.evidence) {
      await tx.query(`INSERT INTO memory.evidence (lesson_id, task_id, iteration, failure_summary, fix_summary, recorded_at) VALUES ($1,$2,$3,$4,$5,$6)`, [
        lesson.id,
        evidence.taskId,
        evidence.iteration,
        evidence.failureSummary,
        evidence.fixSummary,
        evidence.recordedAt ?? now,
      ]);
    }
  }

  /**
   * Keeps at most `max` lessons in `scope`: deletes the least useful beyond
   * it (demoted first, then by helpfulness, then the longest unused) and
   * returns their ids so their vectors can go too.
   */
  async enforceRetention(scope: string, max: number): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(
      `DELETE FROM memory.lessons WHERE id IN (
         SELECT id FROM memory.lessons WHERE scope = $1
         -- Most worth keeping first; everything past the limit goes.
         ORDER BY (status = 'demoted') ASC, helpfulness DESC, greatest(created_at, coalesce(last_helped_at, created_at), coalesce(last_retrieved_at, created_at)) DESC, id
         OFFSET $2
       ) RETURNING id`,
      [scope, max],
    );
    return result.rows.map((row) => row.id);
  }

  /**
   * A page of lesson ids, newest first. `teamPrefix` (see `teamScopePrefix`)
   * keeps the lessons a team reads: the global scope and those under the
   * prefix, or for the default team (prefix '') every scope outside teams.
   */
  async list(
    filter: { language: Language; tags: readonly string[]; errorSignature: string; scope: string; status: string; teamPrefix?: string | undefined },
    offset: number,
    limit: number,
  ): Promise<{ ids: string[]; more: boolean }> {
    const result = await this.db.query<{ id: string }>(
      `SELECT id FROM memory.lessons
       WHERE ($1 = '' OR language = $1) AND ($2 = '' OR error_signature = $2) AND (cardinality($3::text[]) = 0 OR tags ?& $3::text[]) AND ($6 = '' OR scope = $6) AND ($7 = '' OR status = $7)
         AND ($8::text IS NULL OR ($8 = '' AND NOT starts_with(scope, 'team:')) OR ($8 <> '' AND (scope = 'global' OR starts_with(scope, $8))))
       ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`,
      [languageKey(filter.language), filter.errorSignature, [...filter.tags], limit + 1, offset, filter.scope, filter.status, filter.teamPrefix ?? null],
    );
    const ids = result.rows.map((row) => row.id);
    return { ids: ids.slice(0, limit), more: ids.length > limit };
  }
}
