import type { Queryable } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { IterationRecord } from '../../domain/records';
import { iterationFromRow, schema, type IterationRow } from './rows';

/** A task's iterations; written only by transitions. */
export class IterationRepository {
  constructor(private readonly db: Queryable) {}

  /** One iteration of a task. @throws AppError NOT_FOUND when it does not exist. */
  async get(taskId: string, number: number): Promise<IterationRecord> {
    const result = await this.db.query<IterationRow>(`SELECT * FROM ${schema}.iterations WHERE task_id = $1 AND number = $2`, [taskId, number]);
    const row = result.rows[0];
    if (row === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${taskId} has no iteration ${number}`);
    return iterationFromRow(row);
  }

  /** Every iteration of a task, in order. */
  async list(taskId: string): Promise<IterationRecord[]> {
    const result = await this.db.query<IterationRow>(`SELECT * FROM ${schema}.iterations WHERE task_id = $1 ORDER BY number`, [taskId]);
    return result.rows.map(iterationFromRow);
  }
}
