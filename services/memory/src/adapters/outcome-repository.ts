import { languageToJSON, type Language, type LessonStatus } from '@ratchet/contracts';
import type { Database, Queryable } from '@ratchet/db';
import type { LessonOutcomes } from '../domain/standing';
import { date, statusName, statusOfName } from './lesson-rows';

/**
 * Task outcomes (memory.outcomes) and the standing of lessons they feed:
 * what each task applied and how it went, the statistics per lesson, and
 * the status and helpfulness stored from them.
 */
export class OutcomeRepository {
  constructor(private readonly db: Database) {}

  /** Lessons' standing inputs: status, helpfulness and when each was last active, by id. */
  async standings(ids: readonly string[]): Promise<Map<string, { status: LessonStatus; helpfulness: number; lastActiveAt: Date }>> {
    if (ids.length === 0) return new Map();
    const result = await this.db.query<{ id: string; status: string; helpfulness: number; active: Date | string }>(
      'SELECT id, status, helpfulness, greatest(created_at, coalesce(last_helped_at, created_at)) AS active FROM memory.lessons WHERE id = ANY($1::text[])',
      [[...ids]],
    );
    return new Map(result.rows.map((row) => [row.id, { status: statusOfName(row.status), helpfulness: Number(row.helpfulness), lastActiveAt: date(row.active) }]));
  }

  /**
   * Records a task's outcome so far (one row per task, replaced as it goes):
   * its iterations, whether it succeeded, and every lesson it applied.
   */
  async recordOutcome(tx: Queryable, outcome: { taskId: string; scope: string; language: Language; iterations: number; succeeded: boolean; applied: readonly string[] }, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO memory.outcomes (task_id, scope, language, iterations, succeeded, applied, created_at, updated_at) VALUES ($1,$2,$3,$4,$5,$6::jsonb,$7,$7)
       ON CONFLICT (task_id) DO UPDATE SET iterations = greatest(outcomes.iterations, EXCLUDED.iterations), succeeded = EXCLUDED.succeeded,
         applied = (SELECT coalesce(jsonb_agg(DISTINCT value), '[]'::jsonb) FROM jsonb_array_elements_text(outcomes.applied || EXCLUDED.applied)), updated_at = EXCLUDED.updated_at`,
      [outcome.taskId, outcome.scope, languageToJSON(outcome.language), outcome.iterations, outcome.succeeded, JSON.stringify([...new Set(outcome.applied)]), now],
    );
  }

  /**
   * Outcome statistics of lessons: tasks other than the origin that applied
   * each, against comparable tasks (same language unless the lesson is for
   * any; same scope unless it is global; recorded since it was created) that
   * did not.
   */
  async outcomes(ids: readonly string[], tx: Queryable = this.db): Promise<Map<string, LessonOutcomes & { lastHelpedAt: Date | undefined }>> {
    if (ids.length === 0) return new Map();
    const result = await tx.query<{
      id: string;
      applied: string;
      applied_succeeded: string;
      applied_mean: number | null;
      comparable: string;
      comparable_succeeded: string;
      comparable_mean: number | null;
      last_helped: Date | string | null;
    }>(
      `SELECT l.id,
         count(o.task_id) FILTER (WHERE o.applied ? l.id) AS applied,
         count(o.task_id) FILTER (WHERE o.applied ? l.id AND o.succeeded) AS applied_succeeded,
         avg(o.iterations) FILTER (WHERE o.applied ? l.id) AS applied_mean,
         count(o.task_id) FILTER (WHERE NOT o.applied ? l.id AND o.created_at >= l.created_at) AS comparable,
         count(o.task_id) FILTER (WHERE NOT o.applied ? l.id AND o.created_at >= l.created_at AND o.succeeded) AS comparable_succeeded,
         avg(o.iterations) FILTER (WHERE NOT o.applied ? l.id AND o.created_at >= l.created_at) AS comparable_mean,
         max(o.updated_at) FILTER (WHERE o.applied ? l.id AND o.succeeded) AS last_helped
       FROM memory.lessons l
       LEFT JOIN memory.outcomes o ON o.task_id <> l.origin_task_id
         AND (l.language = 'LANGUAGE_UNSPECIFIED' OR o.language = l.language)
         AND (l.scope = 'global' OR o.scope = l.scope)
       WHERE l.id = ANY($1::text[])
       GROUP BY l.id`,
      [[...ids]],
    );
    return new Map(
      result.rows.map((row) => [
        row.id,
        {
          applied: Number(row.applied),
          appliedSucceeded: Number(row.applied_succeeded),
          appliedMeanIterations: Number(row.applied_mean ?? 0),
          comparable: Number(row.comparable),
          comparableSucceeded: Number(row.comparable_succeeded),
          comparableMeanIterations: Number(row.comparable_mean ?? 0),
          lastHelpedAt: row.last_helped === null ? undefined : date(row.last_helped),
        },
      ]),
    );
  }

  /** Stores a lesson's standing after its outcomes changed. */
  async setStanding(tx: Queryable, id: string, standing: { status: LessonStatus; helpfulness: number; reasons: readonly string[]; lastHelpedAt: Date | undefined }): Promise<void> {
    await tx.query('UPDATE memory.lessons SET status = $2, helpfulness = $3, standing = $4::jsonb, last_helped_at = $5 WHERE id = $1', [
      id,
      statusName(standing.status),
      standing.helpfulness,
      JSON.stringify(standing.reasons),
      standing.lastHelpedAt ?? null,
    ]);
  }
}
