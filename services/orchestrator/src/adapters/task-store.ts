import { randomUUID } from 'node:crypto';
import {
  ApprovalDecision,
  approvalDecisionFromJSON,
  approvalDecisionToJSON,
  approvalKindFromJSON,
  approvalKindToJSON,
  type ApprovalGate,
  ErrorDetail,
  Language,
  Lesson,
  Phase,
  Plan,
  Reflection,
  SafetyFinding,
  SourceFile,
  StopReason,
  TaskEvent,
  TaskStatus,
  TestReport,
  Budget,
  Usage,
  languageFromJSON,
  languageToJSON,
  phaseFromJSON,
  phaseToJSON,
  stopReasonFromJSON,
  stopReasonToJSON,
  taskStatusFromJSON,
  taskStatusToJSON,
} from '@ratchet/contracts';
import { migrate, type Database, type Queryable } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { FailureFingerprint } from '../domain/progress';
import { isTerminal } from '../domain/task-state';
import type { IterationRecord, TaskRecord } from '../domain/records';
import { orchestratorMigrations } from './migrations';

/** The event body without the fields the store assigns (task, sequence). */
export type NewEvent = Omit<TaskEvent, 'taskId' | 'sequence'>;

/** One persisted transition: the task row, the iteration touched (if any) and the events it produced. */
export interface TaskChange {
  readonly task: TaskRecord;
  /** Iterations finished by this transition, written before `iteration`. */
  readonly iterations?: readonly IterationRecord[];
  readonly iteration?: IterationRecord;
  readonly events: readonly NewEvent[];
  /** A gate this transition raises (the task goes AWAITING_APPROVAL). */
  readonly gate?: ApprovalGate;
}

export interface ListTasksQuery {
  readonly statuses: readonly TaskStatus[];
  readonly pageSize: number;
  /** Offset into the newest-first list; opaque to callers. */
  readonly offset: number;
}

const schema = 'orchestrator';
const terminalNames = ['TASK_STATUS_SUCCEEDED', 'TASK_STATUS_FAILED', 'TASK_STATUS_CANCELLED'].map((name) => `'${name}'`).join(', ');
const pending = approvalDecisionToJSON(ApprovalDecision.APPROVAL_DECISION_PENDING);
/** A task row with the gate it waits on, if any. */
const awaiting = taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_APPROVAL);
const selectTasks = `SELECT t.*, CASE WHEN t.status = '${awaiting}' THEN (SELECT a.gate_id FROM ${schema}.approvals a WHERE a.task_id = t.id AND a.decision = '${pending}' ORDER BY a.requested_at DESC LIMIT 1) END AS pending_gate_id FROM ${schema}.tasks t`;
const json = (value: unknown) => JSON.stringify(value);
const files = (value: unknown): SourceFile[] => (Array.isArray(value) ? value.map((item) => SourceFile.fromJSON(item)) : []);

/**
 * Tasks, iterations and events in Postgres or PGlite (schema `orchestrator`).
 * Every change is one transaction, so a task row, its iteration and its
 * events are never out of step.
 */
export class TaskStore {
  /** The large JSON values last written per task, so unchanged ones are not rewritten on every transition. */
  private readonly lastHeavy = new Map<string, Readonly<Record<string, string | null>>>();
  /**
   * Every iteration of the tasks this store is driving, as last written, so
   * a phase does not read back what the previous phase just wrote. Only
   * tasks created by this store are here (their full set is known); a
   * finished task or `forget()` drops its entry.
   */
  private readonly written = new Map<string, Map<number, IterationRecord>>();
  /**
   * The last event sequence each record was read or written at: a save
   * applies only if nobody saved the task since, so two drivers of one task
   * (a bug, or two processes given the same owner id) cannot both advance it.
   */
  private readonly versions = new WeakMap<TaskRecord, number>();

  private constructor(
    private readonly db: Database,
    /** The lease holder this store writes as; `save()` only changes tasks it holds. */
    readonly owner: string,
  ) {}

  /**
   * Applies the orchestrator's migrations and returns a store on `db` (which
   * the caller owns). `owner` names the replica in task leases; a replica
   * that keeps its name across restarts takes its own tasks back at once
   * instead of waiting for their leases to run out. Default: a random id.
   */
  static async open(db: Database, options: { owner?: string } = {}): Promise<TaskStore> {
    await migrate(db, schema, orchestratorMigrations);
    return new TaskStore(db, options.owner ?? randomUUID());
  }

  /**
   * Takes the lease of tasks for `leaseMs`: the given ones, or with
   * `limit` the oldest unfinished tasks nobody holds (never held, lease run
   * out, or held by this owner from before a restart). Returns the ids taken.
   */
  async claim(target: { ids: readonly string[] } | { limit: number }, leaseMs: number): Promise<string[]> {
    const free = `status NOT IN (${terminalNames}) AND (owner IS NULL OR owner = $1 OR lease_expires_at < now())`;
    // A task waiting on a human is taken by nobody looking for work, only by name (to cancel it); Approve moves it on.
    const chosen =
      'ids' in target
        ? `SELECT id, owner FROM ${schema}.tasks WHERE id = ANY($3::text[]) AND ${free} FOR UPDATE`
        : `SELECT id, owner FROM ${schema}.tasks WHERE ${free} AND status <> '${awaiting}' ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED`;
    const result = await this.db.query<{ id: string; previous: string | null }>(
      `WITH chosen AS (${chosen})
       UPDATE ${schema}.tasks t SET owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000)
       FROM chosen WHERE t.id = chosen.id RETURNING t.id, chosen.owner AS previous`,
      [this.owner, leaseMs, 'ids' in target ? [...target.ids] : target.limit],
    );
    // What this store remembers is only good while nobody else held the task.
    for (const row of result.rows) if (row.previous !== this.owner) this.forget(row.id);
    return result.rows.map((row) => row.id);
  }

  /**
   * Extends this owner's leases on `ids`. Returns those still held, with the
   * reason of a cancel another replica asked for (empty when none).
   */
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
    for (const id of ids ?? [...this.written.keys()]) this.forget(id);
  }

  /** Leaves a cancel request on a task another replica drives; it acts on it when it next renews its lease. */
  async requestCancel(taskId: string, reason: string): Promise<void> {
    await this.db.query(`UPDATE ${schema}.tasks SET cancel_reason = $2 WHERE id = $1 AND status NOT IN (${terminalNames})`, [taskId, reason]);
  }

  /**
   * Inserts a new task with its first events. With a non-empty `requestId`
   * that was seen before, returns the existing task instead (idempotent submit).
   */
  async create(task: TaskRecord, events: readonly NewEvent[], options: { leaseMs?: number } = {}): Promise<{ task: TaskRecord; created: boolean; events: TaskEvent[] }> {
    return this.db.transaction(async (tx) => {
      if (task.requestId !== '') {
        const existing = await tx.query<TaskRow>(`${selectTasks} WHERE request_id = $1`, [task.requestId]);
        const row = existing.rows[0];
        if (row !== undefined) return { task: taskFromRow(row), created: false, events: [] };
      }
      await tx.query(
        `INSERT INTO ${schema}.tasks (id, goal, language, status, status_reason, stop_reason, current_iteration, replan_count, replan_reason, budget, usage, labels,
           workspace, acceptance_tests, generated_tests, result_files, plan, lessons, request_id, created_at, updated_at, started_at, completed_at)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23)`,
        taskParams(task),
      );
      // With leaseMs the new task is this owner's from the start; without, any replica may take it.
      await tx.query(
        `UPDATE ${schema}.tasks SET last_event_sequence = $2, owner = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
           approval_kinds = $5, approval_timeout_ms = $6 WHERE id = $1`,
        [task.id, events.length, options.leaseMs === undefined ? null : this.owner, options.leaseMs ?? 0, json(task.approvalKinds.map((kind) => approvalKindToJSON(kind))), task.approvalTimeoutMs],
      );
      const stored = await insertEvents(tx, task.id, task.currentIteration, events, 1);
      this.written.set(task.id, new Map());
      this.versions.set(task, events.length);
      return { task, created: true, events: stored };
    });
  }

  /**
   * Reopens a FAILED task for another round: back to PLANNING with `reason`
   * as the re-plan reason, `budget` in place of the old one, and `events`
   * appended. With `leaseMs` this owner holds it; without, any replica may take it.
   *
   * @throws AppError FAILED_PRECONDITION when the task is no longer FAILED
   *   (another resume got there first).
   */
  async reopen(taskId: string, budget: Budget, reason: string, events: readonly NewEvent[], options: { leaseMs?: number } = {}): Promise<TaskEvent[]> {
    const stored = await this.db.transaction(async (tx) => {
      const updated = await tx.query<{ last_event_sequence: string | number; current_iteration: number }>(
        `UPDATE ${schema}.tasks SET status = $2, status_reason = $3, replan_reason = $3, stop_reason = $4, completed_at = NULL, updated_at = now(),
           budget = $5, cancel_reason = NULL, owner = $6, lease_expires_at = now() + make_interval(secs => $7::double precision / 1000),
           last_event_sequence = last_event_sequence + $8
         WHERE id = $1 AND status = $9 RETURNING last_event_sequence, current_iteration`,
        [
          taskId,
          taskStatusToJSON(TaskStatus.TASK_STATUS_PLANNING),
          reason,
          stopReasonToJSON(StopReason.STOP_REASON_UNSPECIFIED),
          json(Budget.toJSON(budget)),
          options.leaseMs === undefined ? null : this.owner,
          options.leaseMs ?? 0,
          events.length,
          taskStatusToJSON(TaskStatus.TASK_STATUS_FAILED),
        ],
      );
      const row = updated.rows[0];
      if (row === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${taskId} is not FAILED (any more); only a failed task can be resumed`);
      return insertEvents(tx, taskId, row.current_iteration, events, Number(row.last_event_sequence) - events.length + 1);
    });
    this.forget(taskId);
    return stored;
  }

  /**
   * Records a decision on a pending gate and moves the task out of
   * AWAITING_APPROVAL to `next` (with `reason`, also the re-plan reason),
   * appending the events `eventsFor` builds from the decided gate. With
   * `leaseMs` this owner holds the task afterwards.
   *
   * @throws AppError NOT_FOUND for a gate the task does not have;
   *   FAILED_PRECONDITION for a gate already decided.
   */
  async decide(
    taskId: string,
    gateId: string,
    decision: { decision: ApprovalDecision; approver: string; comment: string; next: TaskStatus; reason: string },
    eventsFor: (gate: ApprovalGate) => NewEvent[],
    options: { leaseMs?: number } = {},
  ): Promise<{ gate: ApprovalGate; events: TaskEvent[] }> {
    const result = await this.db.transaction(async (tx) => {
      const decided = await tx.query<GateRow>(
        `UPDATE ${schema}.approvals SET decision = $3, approver = $4, comment = $5, decided_at = now()
         WHERE gate_id = $1 AND task_id = $2 AND decision = '${pending}' RETURNING *`,
        [gateId, taskId, approvalDecisionToJSON(decision.decision), decision.approver, decision.comment],
      );
      const row = decided.rows[0];
      if (row === undefined) {
        const existing = await tx.query<GateRow>(`SELECT * FROM ${schema}.approvals WHERE gate_id = $1 AND task_id = $2`, [gateId, taskId]);
        const gate = existing.rows[0];
        if (gate === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${taskId} has no approval gate ${gateId}; \`ratchet show ${taskId}\` lists its gates`);
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `gate ${gateId} was already decided: ${gate.decision.replace('APPROVAL_DECISION_', '')}${gate.approver ? ` by ${gate.approver}` : ''}`);
      }
      const gate = gateFromRow(row);
      const events = eventsFor(gate);
      const moved = await tx.query<{ last_event_sequence: string | number; current_iteration: number }>(
        `UPDATE ${schema}.tasks SET status = $2, status_reason = $3, replan_reason = $4, updated_at = now(), owner = $5,
           lease_expires_at = now() + make_interval(secs => $6::double precision / 1000), last_event_sequence = last_event_sequence + $7
         WHERE id = $1 AND status = $8 RETURNING last_event_sequence, current_iteration`,
        [
          taskId,
          taskStatusToJSON(decision.next),
          decision.reason,
          decision.next === TaskStatus.TASK_STATUS_PLANNING ? decision.reason : '',
          options.leaseMs === undefined ? null : this.owner,
          options.leaseMs ?? 0,
          events.length,
          taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_APPROVAL),
        ],
      );
      const task = moved.rows[0];
      if (task === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${taskId} is not awaiting approval`);
      return { gate, events: await insertEvents(tx, taskId, task.current_iteration, events, Number(task.last_event_sequence) - events.length + 1) };
    });
    this.forget(taskId);
    return result;
  }

  /** A task's approval gates, oldest first. */
  async approvals(taskId: string): Promise<ApprovalGate[]> {
    const result = await this.db.query<GateRow>(`SELECT * FROM ${schema}.approvals WHERE task_id = $1 ORDER BY requested_at, gate_id`, [taskId]);
    return result.rows.map(gateFromRow);
  }

  /** Pending gates whose timeout has passed. */
  async expiredGates(): Promise<{ taskId: string; gateId: string }[]> {
    const result = await this.db.query<{ task_id: string; gate_id: string }>(
      `SELECT task_id, gate_id FROM ${schema}.approvals WHERE decision = '${pending}' AND expires_at < now() ORDER BY expires_at LIMIT 100`,
    );
    return result.rows.map((row) => ({ taskId: row.task_id, gateId: row.gate_id }));
  }

  /** Persists a transition atomically and returns its events with their sequence numbers. */
  async save(change: TaskChange): Promise<TaskEvent[]> {
    // One statement, so one round trip and atomic by itself: the task row,
    // the iterations and the events are written together by data-modifying
    // CTEs. Only what a transition can change is written; the goal,
    // workspace, acceptance tests, budget and labels are fixed at submission,
    // and the large JSON columns are written only when they changed since
    // this store last wrote them.
    const task = change.task;
    const heavy = heavyColumns(task);
    const written = this.lastHeavy.get(task.id);
    const assignments: [string, unknown][] = [
      ['status', taskStatusToJSON(task.status)],
      ['status_reason', task.statusReason],
      ['stop_reason', stopReasonToJSON(task.stopReason)],
      ['current_iteration', task.currentIteration],
      ['replan_count', task.replanCount],
      ['replan_reason', task.replanReason],
      ['usage', json(Usage.toJSON(task.usage))],
      ['updated_at', task.updatedAt],
      ['started_at', task.startedAt ?? null],
      ['completed_at', task.completedAt ?? null],
    ];
    for (const [column, value] of Object.entries(heavy)) if (written?.[column] !== value) assignments.push([column, value]);
    const iterations = [...(change.iterations ?? []), ...(change.iteration === undefined ? [] : [change.iteration])];
    const firstEventOffset = 1;
    const version = this.versions.get(task);
    const gate = change.gate;
    const gates =
      gate === undefined
        ? []
        : [{ gate_id: gate.gateId, iteration: gate.iteration, kind: approvalKindToJSON(gate.kind), summary: gate.summary, detail: gate.detail, decision: pending, requested_at: (gate.requestedAt ?? new Date()).toISOString(), timeout_ms: task.approvalTimeoutMs }];
    const params: unknown[] = [task.id, change.events.length, json(iterations.map(iterationJson)), '[]', this.owner, version ?? null, json(gates)];
    const set = assignments.map(([column, value]) => {
      params.push(value);
      return `${column} = $${params.length}`;
    });
    const iterationNumber = change.iteration?.number ?? task.currentIteration;
    const stamped = change.events.map((body, index) => ({ ...body, position: index + firstEventOffset, iteration: body.iteration || iterationNumber }));
    params[3] = json(stamped.map((event) => ({ position: event.position, time: (event.time ?? new Date()).toISOString(), iteration: event.iteration, kind: event.payload?.$case ?? 'none', payload: TaskEvent.toJSON({ ...event, taskId: task.id, sequence: 0 }) })));
    const result = await this.db.query<{ last_event_sequence: string | number }>(
      `WITH t AS (
         UPDATE ${schema}.tasks SET ${set.join(', ')}, last_event_sequence = last_event_sequence + $2 WHERE id = $1 AND owner = $5 AND ($6::bigint IS NULL OR last_event_sequence = $6) RETURNING last_event_sequence
       ), i AS (
         INSERT INTO ${schema}.iterations (${iterationColumns.join(', ')})
         SELECT x.* FROM t, jsonb_to_recordset($3::jsonb) AS x(${iterationColumnTypes})
         ON CONFLICT (task_id, number) DO UPDATE SET ${iterationColumns
           .filter((column) => !['task_id', 'number', 'started_at'].includes(column))
           .map((column) => `${column} = EXCLUDED.${column}`)
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
         SELECT $1, t.last_event_sequence - $2 + x.position, x.time, x.iteration, x.kind, x.payload || jsonb_build_object('sequence', t.last_event_sequence - $2 + x.position)
         FROM t, jsonb_to_recordset($4::jsonb) AS x(position int, time timestamptz, iteration int, kind text, payload jsonb)
         RETURNING 1
       )
       SELECT last_event_sequence FROM t`,
      params,
    );
    const row = result.rows[0];
    if (row === undefined) {
      const holder = await this.db.query<{ owner: string | null }>(`SELECT owner FROM ${schema}.tasks WHERE id = $1`, [task.id]);
      if (holder.rows[0] === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${task.id} does not exist`);
      this.forget(task.id);
      if (holder.rows[0].owner === this.owner) {
        throw new AppError(ErrorCode.ABORTED, `task ${task.id} was saved by another driver since this one read it; this driver stops and leaves the task to it`);
      }
      throw new AppError(ErrorCode.ABORTED, `task ${task.id} is no longer leased to this orchestrator (${this.owner}); another replica drives it now`);
    }
    this.remember(task, heavy, iterations);
    this.versions.set(task, Number(row.last_event_sequence));
    const first = Number(row.last_event_sequence) - change.events.length + 1;
    return stamped.map(({ position, ...event }): TaskEvent => ({ ...event, taskId: task.id, sequence: first + position - firstEventOffset }));
  }

  /**
   * The task with this id, or the only task whose id starts with it (at
   * least 6 characters), as users type ids from `ratchet history`.
   *
   * @throws AppError NOT_FOUND when none matches; INVALID_ARGUMENT when a prefix is ambiguous.
   */
  async get(idOrPrefix: string): Promise<TaskRecord> {
    const exact = await this.db.query<TaskRow>(`${selectTasks} WHERE id = $1`, [idOrPrefix]);
    if (exact.rows[0] !== undefined) return this.versioned(exact.rows[0]);
    if (idOrPrefix.length >= 6 && /^[\w-]+$/.test(idOrPrefix)) {
      const matches = await this.db.query<TaskRow>(`${selectTasks} WHERE id LIKE $1 ORDER BY created_at DESC LIMIT 3`, [`${idOrPrefix}%`]);
      if (matches.rows.length === 1) return this.versioned(matches.rows[0] as TaskRow);
      if (matches.rows.length > 1) throw new AppError(ErrorCode.INVALID_ARGUMENT, `task id prefix ${idOrPrefix} matches several tasks; give more characters`);
    }
    throw new AppError(ErrorCode.NOT_FOUND, `no task ${idOrPrefix}; \`ratchet history\` lists the tasks`);
  }

  private versioned(row: TaskRow): TaskRecord {
    const task = taskFromRow(row);
    this.versions.set(task, Number(row.last_event_sequence));
    return task;
  }

  /** Tasks newest first, optionally only those in `statuses`. */
  async list(query: ListTasksQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    const names = query.statuses.map((status) => taskStatusToJSON(status));
    const result = await this.db.query<TaskRow>(
      `${selectTasks} WHERE (cardinality($1::text[]) = 0 OR status = ANY($1::text[])) ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [names, query.pageSize + 1, query.offset],
    );
    return { tasks: result.rows.slice(0, query.pageSize).map(taskFromRow), more: result.rows.length > query.pageSize };
  }

  /**
   * Drops what this store remembers of a task, so its next reads come from
   * the database: for a process that takes over a task another one wrote.
   */
  forget(taskId: string): void {
    this.lastHeavy.delete(taskId);
    this.written.delete(taskId);
  }

  private remember(task: TaskRecord, heavy: Readonly<Record<string, string | null>>, iterations: readonly IterationRecord[]): void {
    if (isTerminal(task.status)) {
      this.forget(task.id);
      return;
    }
    this.lastHeavy.set(task.id, heavy);
    const known = this.written.get(task.id);
    // A copy: the driver goes on changing its records before their next save.
    for (const iteration of iterations) known?.set(iteration.number, structuredClone(iteration));
  }

  /** One iteration of a task. @throws AppError NOT_FOUND when it does not exist. */
  async iteration(taskId: string, number: number): Promise<IterationRecord> {
    const known = this.written.get(taskId)?.get(number);
    if (known !== undefined) return structuredClone(known);
    const result = await this.db.query<IterationRow>(`SELECT * FROM ${schema}.iterations WHERE task_id = $1 AND number = $2`, [taskId, number]);
    const row = result.rows[0];
    if (row === undefined) throw new AppError(ErrorCode.NOT_FOUND, `task ${taskId} has no iteration ${number}`);
    return iterationFromRow(row);
  }

  /** Every iteration of a task, in order. */
  async iterations(taskId: string): Promise<IterationRecord[]> {
    const known = this.written.get(taskId);
    if (known !== undefined) return [...known.values()].sort((left, right) => left.number - right.number).map((iteration) => structuredClone(iteration));
    const result = await this.db.query<IterationRow>(`SELECT * FROM ${schema}.iterations WHERE task_id = $1 ORDER BY number`, [taskId]);
    return result.rows.map(iterationFromRow);
  }

  /** The task's events from `fromSequence` on (1 = all), in order. */
  async events(taskId: string, fromSequence = 1): Promise<TaskEvent[]> {
    const result = await this.db.query<{ payload: unknown }>(`SELECT payload FROM ${schema}.events WHERE task_id = $1 AND sequence >= $2 ORDER BY sequence`, [taskId, fromSequence]);
    return result.rows.map((row) => TaskEvent.fromJSON(row.payload));
  }

  /** Ids of tasks not yet SUCCEEDED, FAILED or CANCELLED, oldest first. */
  async unfinished(): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(`SELECT id FROM ${schema}.tasks WHERE status NOT IN ('TASK_STATUS_SUCCEEDED','TASK_STATUS_FAILED','TASK_STATUS_CANCELLED') ORDER BY created_at`);
    return result.rows.map((row) => row.id);
  }
}

/** Inserts events numbered from `first` (the caller has reserved the numbers on the task row). */
async function insertEvents(tx: Queryable, taskId: string, iteration: number, events: readonly NewEvent[], first: number): Promise<TaskEvent[]> {
  if (events.length === 0) return [];
  const stored = events.map((body, index): TaskEvent => ({ ...body, taskId, sequence: first + index, iteration: body.iteration || iteration }));
  // One multi-row INSERT: a transition writes several events, and a round trip each adds up.
  const params: unknown[] = [];
  const rows = stored.map((event) => {
    params.push(taskId, event.sequence, event.time ?? new Date(), event.iteration, event.payload?.$case ?? 'none', json(TaskEvent.toJSON(event)));
    const base = params.length - 6;
    return `($${base + 1},$${base + 2},$${base + 3},$${base + 4},$${base + 5},$${base + 6})`;
  });
  await tx.query(`INSERT INTO ${schema}.events (task_id, sequence, time, iteration, kind, payload) VALUES ${rows.join(',')}`, params);
  return stored;
}

const iterationColumns = [
  'task_id',
  'number',
  'phase',
  'plan',
  'files',
  'test_report',
  'error',
  'safety_findings',
  'reflection',
  'hypothesis',
  'retrieved_lesson_ids',
  'reflection_lessons',
  'failure_id',
  'fingerprint',
  'output',
  'usage',
  'started_at',
  'completed_at',
];

const iterationColumnTypes =
  'task_id text, number int, phase text, plan jsonb, files jsonb, test_report jsonb, error jsonb, safety_findings jsonb, reflection jsonb, hypothesis text, ' +
  'retrieved_lesson_ids jsonb, reflection_lessons jsonb, failure_id text, fingerprint jsonb, output text, usage jsonb, started_at timestamptz, completed_at timestamptz';

/** An iteration as one JSON object keyed by column, for jsonb_to_recordset. */
function iterationJson(iteration: IterationRecord): Record<string, unknown> {
  return {
    task_id: iteration.taskId,
    number: iteration.number,
    phase: phaseToJSON(iteration.phase),
    plan: iteration.plan === undefined ? null : Plan.toJSON(iteration.plan),
    files: iteration.files.map((file) => SourceFile.toJSON(file)),
    test_report: iteration.testReport === undefined ? null : TestReport.toJSON(iteration.testReport),
    error: iteration.error === undefined ? null : ErrorDetail.toJSON(iteration.error),
    safety_findings: iteration.safetyFindings.map((finding) => SafetyFinding.toJSON(finding)),
    reflection: iteration.reflection === undefined ? null : Reflection.toJSON(iteration.reflection),
    hypothesis: iteration.hypothesis,
    retrieved_lesson_ids: iteration.retrievedLessonIds,
    reflection_lessons: iteration.reflectionLessons.map((lesson) => Lesson.toJSON(lesson)),
    failure_id: iteration.failureId,
    fingerprint: iteration.fingerprint ?? null,
    output: iteration.output,
    usage: Usage.toJSON(iteration.usage),
    started_at: iteration.startedAt.toISOString(),
    completed_at: iteration.completedAt?.toISOString() ?? null,
  };
}

/** The task's large JSON columns, serialised. */
function heavyColumns(task: TaskRecord): Record<string, string | null> {
  return {
    generated_tests: json(task.generatedTests.map((file) => SourceFile.toJSON(file))),
    result_files: json(task.resultFiles.map((file) => SourceFile.toJSON(file))),
    plan: task.plan === undefined ? null : json(Plan.toJSON(task.plan)),
    lessons: json(task.lessons.map((lesson) => Lesson.toJSON(lesson))),
  };
}

function taskParams(task: TaskRecord): unknown[] {
  return [
    task.id,
    task.goal,
    languageToJSON(task.language),
    taskStatusToJSON(task.status),
    task.statusReason,
    stopReasonToJSON(task.stopReason),
    task.currentIteration,
    task.replanCount,
    task.replanReason,
    json(Budget.toJSON(task.budget)),
    json(Usage.toJSON(task.usage)),
    json(task.labels),
    json(task.workspace.map((file) => SourceFile.toJSON(file))),
    json(task.acceptanceTests.map((file) => SourceFile.toJSON(file))),
    json(task.generatedTests.map((file) => SourceFile.toJSON(file))),
    json(task.resultFiles.map((file) => SourceFile.toJSON(file))),
    task.plan === undefined ? null : json(Plan.toJSON(task.plan)),
    json(task.lessons.map((lesson) => Lesson.toJSON(lesson))),
    task.requestId,
    task.createdAt,
    task.updatedAt,
    task.startedAt ?? null,
    task.completedAt ?? null,
  ];
}

interface TaskRow {
  id: string;
  last_event_sequence: string | number;
  approval_kinds: unknown;
  approval_timeout_ms: string | number;
  pending_gate_id: string | null;
  goal: string;
  language: string;
  status: string;
  status_reason: string;
  stop_reason: string;
  current_iteration: number;
  replan_count: number;
  replan_reason: string;
  budget: unknown;
  usage: unknown;
  labels: Record<string, string>;
  workspace: unknown;
  acceptance_tests: unknown;
  generated_tests: unknown;
  result_files: unknown;
  plan: unknown;
  lessons: unknown;
  request_id: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  started_at: Date | string | null;
  completed_at: Date | string | null;
}

interface IterationRow {
  task_id: string;
  number: number;
  phase: string;
  plan: unknown;
  files: unknown;
  test_report: unknown;
  error: unknown;
  safety_findings: unknown;
  reflection: unknown;
  hypothesis: string;
  retrieved_lesson_ids: string[];
  reflection_lessons: unknown;
  failure_id: string;
  fingerprint: FailureFingerprint | null;
  output: string;
  usage: unknown;
  started_at: Date | string;
  completed_at: Date | string | null;
}

const date = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
const optionalDate = (value: Date | string | null): Date | undefined => (value === null ? undefined : date(value));

function taskFromRow(row: TaskRow): TaskRecord {
  const record: TaskRecord = {
    id: row.id,
    goal: row.goal,
    language: languageFromJSON(row.language) as Language,
    status: taskStatusFromJSON(row.status),
    statusReason: row.status_reason,
    stopReason: stopReasonFromJSON(row.stop_reason) as StopReason,
    currentIteration: row.current_iteration,
    replanCount: row.replan_count,
    replanReason: row.replan_reason,
    budget: Budget.fromJSON(row.budget),
    usage: Usage.fromJSON(row.usage),
    labels: row.labels,
    workspace: files(row.workspace),
    acceptanceTests: files(row.acceptance_tests),
    generatedTests: files(row.generated_tests),
    resultFiles: files(row.result_files),
    lessons: Array.isArray(row.lessons) ? row.lessons.map((lesson) => Lesson.fromJSON(lesson)) : [],
    requestId: row.request_id ?? '',
    approvalKinds: Array.isArray(row.approval_kinds) ? row.approval_kinds.map((kind) => approvalKindFromJSON(kind)) : [],
    approvalTimeoutMs: Number(row.approval_timeout_ms ?? 0),
    pendingGateId: row.pending_gate_id ?? '',
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  };
  if (row.plan !== null) record.plan = Plan.fromJSON(row.plan);
  const startedAt = optionalDate(row.started_at);
  if (startedAt !== undefined) record.startedAt = startedAt;
  const completedAt = optionalDate(row.completed_at);
  if (completedAt !== undefined) record.completedAt = completedAt;
  return record;
}

interface GateRow {
  gate_id: string;
  task_id: string;
  iteration: number;
  kind: string;
  summary: string;
  detail: string;
  decision: string;
  approver: string;
  comment: string;
  requested_at: Date | string;
  decided_at: Date | string | null;
}

function gateFromRow(row: GateRow): ApprovalGate {
  return {
    gateId: row.gate_id,
    taskId: row.task_id,
    iteration: row.iteration,
    kind: approvalKindFromJSON(row.kind),
    summary: row.summary,
    detail: row.detail,
    decision: approvalDecisionFromJSON(row.decision),
    approver: row.approver,
    comment: row.comment,
    requestedAt: date(row.requested_at),
    decidedAt: optionalDate(row.decided_at),
  };
}

function iterationFromRow(row: IterationRow): IterationRecord {
  const record: IterationRecord = {
    taskId: row.task_id,
    number: row.number,
    phase: phaseFromJSON(row.phase) as Phase,
    files: files(row.files),
    safetyFindings: Array.isArray(row.safety_findings) ? row.safety_findings.map((finding) => SafetyFinding.fromJSON(finding)) : [],
    hypothesis: row.hypothesis,
    retrievedLessonIds: row.retrieved_lesson_ids,
    reflectionLessons: Array.isArray(row.reflection_lessons) ? row.reflection_lessons.map((lesson) => Lesson.fromJSON(lesson)) : [],
    failureId: row.failure_id,
    output: row.output,
    usage: Usage.fromJSON(row.usage),
    startedAt: date(row.started_at),
  };
  if (row.plan !== null) record.plan = Plan.fromJSON(row.plan);
  if (row.test_report !== null) record.testReport = TestReport.fromJSON(row.test_report);
  if (row.error !== null) record.error = ErrorDetail.fromJSON(row.error);
  if (row.reflection !== null) record.reflection = Reflection.fromJSON(row.reflection);
  if (row.fingerprint !== null) record.fingerprint = row.fingerprint;
  const completedAt = optionalDate(row.completed_at);
  if (completedAt !== undefined) record.completedAt = completedAt;
  return record;
}
