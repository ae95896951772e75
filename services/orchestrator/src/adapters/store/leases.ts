import { taskStatusToJSON, TaskStatus } from '@ratchet/contracts';
import { terminalStatuses } from '@ratchet/agent';
import type { Queryable } from '@ratchet/db';
import { schema } from './rows';

/** `'TASK_STATUS_SUCCEEDED', ...`: the terminal statuses as stored, for SQL. */
export const terminalNames = terminalStatuses.map((status) => `'${taskStatusToJSON(status)}'`).join(', ');
const awaitingApproval = taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_APPROVAL);
const awaitingAnswer = taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_ANSWER);

/**
 * Task leases: a task is driven by the replica that holds its lease, on the
 * database's clock, so replicas' clocks need not agree.
 */
export class LeaseRepository {
  constructor(
    private readonly db: Queryable,
    /** The lease holder this repository acts as. */
    readonly owner: string,
  ) {}

  /**
   * Takes the lease of tasks for `leaseMs`: the given ones, or with
   * `limit` the oldest unfinished tasks nobody holds (never held, lease run
   * out, or held by this owner from before a restart). Returns the ids taken.
   */
  async claim(target: { ids: readonly string[] } | { limit: number }, leaseMs: number): Promise<string[]> {
    const free = `status NOT IN (${terminalNames}) AND (owner IS NULL OR owner = $1 OR lease_expires_at < now())`;
    // A task waiting on a person is taken by nobody looking for work, only by name (to cancel it); the decision moves it on.
    const chosen =
      'ids' in target
        ? `SELECT id FROM ${schema}.tasks WHERE id = ANY($3::text[]) AND ${free} FOR UPDATE`
        : `SELECT id FROM ${schema}.tasks WHERE ${free} AND status NOT IN ('${awaitingApproval}', '${awaitingAnswer}') ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED`;
    const result = await this.db.query<{ id: string }>(
      `WITH chosen AS (${chosen})
       UPDATE ${schema}.tasks t SET owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM chosen WHERE t.id = chosen.id RETURNING t.id`,
      [this.owner, leaseMs, 'ids' in target ? [...target.ids] : target.limit],
    );
    return result.rows.map((row) => row.id);
  }

  /** Extends this owner's leases on `ids`. Returns those still held, with the reason of a cancel another replica asked for (empty when none). */
  async renew(ids: readonly string[], leaseMs: number): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const result = await this.db.query<{ id: string; cancel_reason: string | null }>(
      `UPDATE ${schema}.tasks SET lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
       WHERE owner = $1 AND id = ANY($3::text[]) RETURNING id, cancel_reason`,
      [this.owner, leaseMs, [...ids]],
    );
    return new Map(result.rows.map((row) => [row.id, row.cancel_reason ?? '']));
  }

  /** Gives up this owner's leases (all, or on `ids`), so another replica can take the tasks at once. */
  async release(ids?: readonly string[]): Promise<void> {
    await this.db.query(`UPDATE ${schema}.tasks SET owner = NULL, lease_expires_at = NULL WHERE owner = $1 AND ($2::text[] IS NULL OR id = ANY($2::text[]))`, [
      this.owner,
      ids === undefined ? null : [...ids],
    ]);
  }

  /** Leaves a cancel request on a task another replica drives; it acts on it when it next renews its lease. */
  async requestCancel(taskId: string, reason: string): Promise<void> {
    await this.db.query(`UPDATE ${schema}.tasks SET cancel_reason = $2 WHERE id = $1 AND status NOT IN (${terminalNames})`, [taskId, reason]);
  }
}
