import { randomUUID } from 'node:crypto';
import { languageToJSON, type Language } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';

/** A stored failure: its id, and the lesson it was filed under (new or not), if any. */
export interface RecordedFailure {
  readonly failureId: string;
  readonly lessonId: string | undefined;
  readonly created: boolean;
}

/**
 * Failures (memory.failures) and the lessons they are filed under: recording
 * one (idempotently, by key), resolving them, and counting lessons that did
 * not prevent one. Every method runs in the caller's transaction.
 */
export class FailureRepository {
  /**
   * Records a failure and, with a candidate lesson, files it: as evidence on
   * the advice lesson with the same signature and language, or as a new
   * lesson when there is none. One statement (data-modifying CTEs), so it is
   * atomic and costs one round trip. A non-empty `idempotencyKey` is kept
   * with the record (see `recordedFailure`).
   */
  async recordFailure(
    tx: Queryable,
    failure: { taskId: string; iteration: number; goal: string; language: Language; scope: string; code: string; message: string; signature: string; summary: string; idempotencyKey: string },
    draft: { title: string; body: string; tags: readonly string[] } | undefined,
    now: Date,
  ): Promise<RecordedFailure> {
    const failureId = randomUUID();
    const result = await tx.query<{ lesson_id: string | null; created: boolean }>(
      `WITH found AS (
         SELECT id FROM memory.lessons
         WHERE $12 AND $8 <> '' AND error_signature = $8 AND language = $5 AND kind = 'lesson' AND scope = $16
         ORDER BY created_at LIMIT 1
       ), created AS (
         INSERT INTO memory.lessons (id, kind, title, body, error_signature, tags, language, scope, origin_task_id, created_at, updated_at)
         SELECT $11, 'lesson', $13, $14, $8, $15::jsonb, $5, $16, $2, $10, $10 WHERE $12 AND NOT EXISTS (SELECT 1 FROM found)
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
         INSERT INTO memory.failures (id, task_id, iteration, goal, language, error_code, error_message, error_signature, summary, lesson_id, created_at, idempotency_key, lesson_created)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, (SELECT id FROM lesson), $10, NULLIF($17, ''), EXISTS (SELECT 1 FROM created))
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
        failure.scope,
        failure.idempotencyKey,
      ],
    );
    const row = result.rows[0];
    return { failureId, lessonId: row?.lesson_id ?? undefined, created: row?.created === true };
  }

  /** What the failure recorded with `idempotencyKey` stored, if one was. */
  async recordedFailure(tx: Queryable, idempotencyKey: string): Promise<RecordedFailure | undefined> {
    const result = await tx.query<{ id: string; lesson_id: string | null; lesson_created: boolean }>('SELECT id, lesson_id, lesson_created FROM memory.failures WHERE idempotency_key = $1', [idempotencyKey]);
    const row = result.rows[0];
    return row === undefined ? undefined : { failureId: row.id, lessonId: row.lesson_id ?? undefined, created: row.lesson_created };
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

  /** Counts a failed iteration against lessons the task applied: they did not prevent it. */
  async countNotHelped(tx: Queryable, lessonIds: readonly string[]): Promise<void> {
    if (lessonIds.length === 0) return;
    await tx.query('UPDATE memory.lessons SET times_not_helped = times_not_helped + 1 WHERE id = ANY($1::text[])', [[...lessonIds]]);
  }
}
