import { approvalDecisionToJSON, approvalKindToJSON, CommandDecision, DependencyDecision, stopReasonToJSON, TaskEvent, taskStatusToJSON, Budget, Usage } from '@ratchet/contracts';
import type { Database, Queryable } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Decision } from '../../domain/decide';
import type { TaskRecord } from '../../domain/records';
import { recordTransition } from '../metrics';
import { pendingDecision } from './approvals';
import { numbered } from './events';
import { heavyColumns, heavyFields, iterationColumns, iterationColumnTypes, iterationJson, json, schema } from './rows';

/**
 * Who may write a transition, and what happens to the task's lease:
 * `held` (the driver holding the lease; the default), `take` (this owner
 * takes the lease for `leaseMs`, as after an approval or a resume), `free`
 * (nobody holds it; any replica may take the task).
 */
export type LeaseChange = { readonly lease: 'held' } | { readonly lease: 'take'; readonly leaseMs: number } | { readonly lease: 'free' };

export interface TransitionOptions {
  readonly lease?: LeaseChange;
  /** Drop a cancel request left on the row (a resumed task starts a new round). */
  readonly clearCancelRequest?: boolean;
}

/**
 * Writes `decide`'s decisions. Every transition is one statement (or, when
 * it decides a gate, one transaction), applied only at the version the task
 * was read at, so two drivers can never both advance a task.
 */
export class TransitionWriter {
  constructor(
    private readonly db: Database,
    private readonly owner: string,
  ) {}

  /**
   * Persists `decision` for a task read as `before`; returns its events
   * with their sequence numbers and the task's new version.
   *
   * @throws AppError ABORTED when the task changed since `before` was read
   *   or its lease is no longer this owner's; FAILED_PRECONDITION when the
   *   gate it decides was decided meanwhile; NOT_FOUND for a task that is gone.
   */
  async save(before: TaskRecord, decision: Decision, options: TransitionOptions = {}): Promise<{ events: TaskEvent[]; version: number }> {
    const events = numbered(before.id, decision.events, before.version + 1);
    const version = before.version + events.length;
    if (!decision.changed) return { events: [], version: before.version };
    const gate = decision.decidedGate;
    if (gate === undefined) {
      await this.write(this.db, before, decision, events, options);
    } else {
      await this.db.transaction(async (tx) => {
        const decided = await tx.query(
          `UPDATE ${schema}.approvals SET decision = $3, approver = $4, comment = $5, decided_at = $6 WHERE gate_id = $1 AND task_id = $2 AND decision = '${pendingDecision}' RETURNING 1`,
          [gate.gateId, before.id, approvalDecisionToJSON(gate.decision), gate.approver, gate.comment, gate.decidedAt ?? new Date()],
        );
        if (decided.rows.length === 0) throw new AppError(ErrorCode.FAILED_PRECONDITION, `gate ${gate.gateId} of task ${before.id} is no longer pending; it was decided meanwhile`);
        await this.write(tx, before, decision, events, options);
      });
    }
    recordTransition(before, decision.task);
    return { events, version };
  }

  private async write(db: Queryable, before: TaskRecord, decision: Decision, events: readonly TaskEvent[], options: TransitionOptions): Promise<void> {
    const task = decision.task;
    const lease = options.lease ?? { lease: 'held' };
    const assignments: [string, unknown][] = [
      ['status', taskStatusToJSON(task.status)],
      ['status_reason', task.statusReason],
      ['stop_reason', stopReasonToJSON(task.stopReason)],
      ['current_iteration', task.currentIteration],
      ['replan_count', task.replanCount],
      ['resume_count', task.resumeCount],
      ['replan_reason', task.replanReason],
      ['command_decisions', json(task.commandDecisions.map((decision) => CommandDecision.toJSON(decision)))],
      ['dependency_decisions', json(task.dependencyDecisions.map((decision) => DependencyDecision.toJSON(decision)))],
      ['usage', json(Usage.toJSON(task.usage))],
      ['answer_deadline', task.answerDeadline ?? null],
      ['updated_at', task.updatedAt],
      ['started_at', task.startedAt ?? null],
      ['completed_at', task.completedAt ?? null],
    ];
    // Records are immutable, so a field that is the same value as before did not change: the large JSON columns are written only when they did.
    for (const [column, serialise] of Object.entries(heavyColumns)) {
      const field = heavyFields[column as keyof typeof heavyColumns];
      if (task[field] !== before[field]) assignments.push([column, serialise(task)]);
    }
    if (task.budget !== before.budget) assignments.push(['budget', json(Budget.toJSON(task.budget))]);
    if (options.clearCancelRequest === true) assignments.push(['cancel_reason', null]);
    const gates =
      decision.gate === undefined
        ? []
        : [
            {
              gate_id: decision.gate.gateId,
              iteration: decision.gate.iteration,
              kind: approvalKindToJSON(decision.gate.kind),
              summary: decision.gate.summary,
              detail: decision.gate.detail,
              decision: pendingDecision,
              requested_at: (decision.gate.requestedAt ?? task.updatedAt).toISOString(),
              timeout_ms: task.approvalTimeoutMs,
            },
          ];
    const stamped = events.map((event) => ({ sequence: event.sequence, time: (event.time ?? task.updatedAt).toISOString(), iteration: event.iteration, kind: event.payload?.$case ?? 'none', payload: TaskEvent.toJSON(event) }));
    const unchanged = decision.filesUnchanged ?? new Set<number>();
    const iterations = decision.iterations.map((iteration) => iterationJson(iteration, !unchanged.has(iteration.number)));
    const params: unknown[] = [task.id, events.length, json(iterations), json(stamped), this.owner, before.version, json(gates)];
    const set = assignments.map(([column, value]) => {
      params.push(value);
      return `${column} = $${params.length}`;
    });
    if (lease.lease === 'take') {
      params.push(lease.leaseMs);
      set.push(`owner = $5, lease_expires_at = now() + make_interval(secs => $${params.length}::double precision / 1000)`);
    } else if (lease.lease === 'free') {
      set.push('owner = NULL, lease_expires_at = NULL');
    }
    const held = lease.lease === 'held' ? 'AND owner = $5' : '';
    // One statement, so one round trip and atomic by itself: the task row, the iterations, a raised gate and the events are written together by data-modifying CTEs.
    const result = await db.query<{ last_event_sequence: string | number }>(
      `WITH t AS (
         UPDATE ${schema}.tasks SET ${set.join(', ')}, last_event_sequence = last_event_sequence + $2 WHERE id = $1 ${held} AND last_event_sequence = $6 RETURNING last_event_sequence
       ), i AS (
         INSERT INTO ${schema}.iterations (${iterationColumns.join(', ')})
         SELECT x.* FROM t, jsonb_to_recordset($3::jsonb) AS x(${iterationColumnTypes})
         ON CONFLICT (task_id, number) DO UPDATE SET ${iterationColumns
           .filter((column) => !['task_id', 'number', 'started_at'].includes(column))
           // files as a string: the snapshot did not change, and stays as stored.
           .map((column) => (column === 'files' ? "files = CASE WHEN jsonb_typeof(EXCLUDED.files) = 'string' THEN iterations.files ELSE EXCLUDED.files END" : `${column} = EXCLUDED.${column}`))
           .join(', ')}
         RETURNING 1
       ), g AS (
         INSERT INTO ${schema}.approvals (gate_id, task_id, iteration, kind, summary, detail, decision, requested_at, expires_at)
         SELECT x.gate_id, $1, x.iteration, x.kind, x.summary, x.detail, x.decision, x.requested_at,
           CASE WHEN x.timeout_ms > 0 THEN x.requested_at + make_interval(secs => x.timeout_ms / 1000.0) END
         FROM t, jsonb_to_recordset($7::jsonb) AS x(gate_id text, iteration int, kind text, summary text, detail text, decision text, requested_at timestamptz, timeout_ms bigint)
         RETURNING 1
       ), e AS (
         INSERT INTO ${schema}.events (task_id, sequence, time, iteration, kind, payload)
         SELECT $1, x.sequence, x.time, x.iteration, x.kind, x.payload
         FROM t, jsonb_to_recordset($4::jsonb) AS x(sequence bigint, time timestamptz, iteration int, kind text, payload jsonb)
         RETURNING 1
       )
       SELECT last_event_sequence FROM t`,
      params,
    );
    if (result.rows[0] !== undefined) return;
    const current = await db.query<{ owner: string | null; last_event_sequence: string | number }>(`SELECT owner, last_event_sequence FROM ${schema}.tasks WHERE id = $1`, [task.id]);
    const row = current.rows[0];
    if (row === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${task.id} does not exist`);
    if (Number(row.last_event_sequence) !== before.version) {
      throw new AppError(ErrorCode.ABORTED, `task ${task.id} was changed by someone else since it was read (version ${before.version}, now ${row.last_event_sequence}); this writer stops and leaves the task to them`);
    }
    throw new AppError(ErrorCode.ABORTED, `task ${task.id} is no longer leased to this orchestrator (${this.owner}); another replica drives it now`);
  }
}
