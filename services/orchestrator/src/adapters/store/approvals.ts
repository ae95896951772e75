import { ApprovalDecision, approvalDecisionToJSON, type ApprovalGate } from '@ratchet/contracts';
import type { Queryable } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import { gateFromRow, schema, type GateRow } from './rows';

export const pendingDecision = approvalDecisionToJSON(ApprovalDecision.APPROVAL_DECISION_PENDING);

/** Approval gates; raised and decided only by transitions. */
export class ApprovalRepository {
  constructor(private readonly db: Queryable) {}

  /** A task's approval gates, oldest first. */
  async list(taskId: string): Promise<ApprovalGate[]> {
    const result = await this.db.query<GateRow>(`SELECT * FROM ${schema}.approvals WHERE task_id = $1 ORDER BY requested_at, gate_id`, [taskId]);
    return result.rows.map(gateFromRow);
  }

  /** One gate of a task. @throws AppError NOT_FOUND when the task has no such gate. */
  async get(taskId: string, gateId: string): Promise<ApprovalGate> {
    const result = await this.db.query<GateRow>(`SELECT * FROM ${schema}.approvals WHERE gate_id = $1 AND task_id = $2`, [gateId, taskId]);
    const row = result.rows[0];
    if (row === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${taskId} has no approval gate ${gateId}; \`ratchet show ${taskId}\` lists its gates`);
    return gateFromRow(row);
  }

  /** Pending gates whose timeout has passed (on the database's clock), oldest first, at most 100. */
  async expired(): Promise<{ taskId: string; gateId: string }[]> {
    const result = await this.db.query<{ task_id: string; gate_id: string }>(
      `SELECT task_id, gate_id FROM ${schema}.approvals WHERE decision = '${pendingDecision}' AND expires_at < now() ORDER BY expires_at LIMIT 100`,
    );
    return result.rows.map((row) => ({ taskId: row.task_id, gateId: row.gate_id }));
  }
}
