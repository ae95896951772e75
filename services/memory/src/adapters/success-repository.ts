import { randomUUID } from 'node:crypto';
import { languageToJSON, type Language } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';

/**
 * Successes (memory.successes): recording one (idempotently, by key) and
 * counting the lessons that helped. Every method runs in the caller's transaction.
 */
export class SuccessRepository {
  /** What the success recorded with `idempotencyKey` stored, if one was. */
  async recordedSuccess(tx: Queryable, idempotencyKey: string): Promise<{ successId: string; updatedLessonIds: string[] } | undefined> {
    const result = await tx.query<{ id: string; updated_lesson_ids: string[] }>('SELECT id, updated_lesson_ids FROM memory.successes WHERE idempotency_key = $1', [idempotencyKey]);
    const row = result.rows[0];
    return row === undefined ? undefined : { successId: row.id, updatedLessonIds: row.updated_lesson_ids };
  }

  async recordSuccess(
    tx: Queryable,
    success: { taskId: string; goal: string; language: Language; fixSummary: string; iterationsTaken: number; lessonId: string; idempotencyKey: string; updatedLessonIds: readonly string[] },
    now: Date,
  ): Promise<string> {
    const id = randomUUID();
    await tx.query(
      `INSERT INTO memory.successes (id, task_id, goal, language, fix_summary, iterations_taken, lesson_id, created_at, idempotency_key, updated_lesson_ids)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,NULLIF($9, ''),$10::jsonb)`,
      [
      id,
      success.taskId,
      success.goal,
      languageToJSON(success.language),
      success.fixSummary,
      success.iterationsTaken,
      success.lessonId,
      now,
      success.idempotencyKey,
      JSON.stringify(success.updatedLessonIds),
    ],
    );
    return id;
  }

  async countHelped(tx: Queryable, lessonIds: readonly string[]): Promise<void> {
    if (lessonIds.length === 0) return;
    await tx.query('UPDATE memory.lessons SET times_helped = times_helped + 1 WHERE id = ANY($1::text[])', [[...lessonIds]]);
  }
}
