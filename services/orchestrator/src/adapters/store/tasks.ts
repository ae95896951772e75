import { ApprovalDecision, approvalDecisionToJSON, approvalKindToJSON, DataFile, memoryUseToJSON, ProjectProfile, TaskPhases, TaskStatus, taskStatusToJSON, testEditsToJSON, type TaskEvent } from '@ratchet/contracts';
import type { Database, Queryable } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { NewEvent } from '../../domain/events';
import type { TaskRecord } from '../../domain/records';
import { insertEvents, numbered } from './events';
import { terminalNames } from './leases';
import { json, schema, taskFromRow, taskParams, type TaskRow } from './rows';

const pending = approvalDecisionToJSON(ApprovalDecision.APPROVAL_DECISION_PENDING);
const awaiting = taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_APPROVAL);
/** A task row with the gate it waits on, if any. */
const selectTasks = `SELECT t.*, CASE WHEN t.status = '${awaiting}' THEN (SELECT a.gate_id FROM ${schema}.approvals a WHERE a.task_id = t.id AND a.decision = '${pending}' ORDER BY a.requested_at DESC LIMIT 1) END AS pending_gate_id FROM ${schema}.tasks t`;

export interface ListTasksQuery {
  /** Only this team's tasks. */
  readonly team: string;
  readonly statuses: readonly TaskStatus[];
  /** Only tasks carrying every one of these labels with this value; empty means any. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly pageSize: number;
  /** Offset into the newest-first list; opaque to callers. */
  readonly offset: number;
}

/** Tasks: created here, changed only by transitions, read by everyone. */
export class TaskRepository {
  constructor(
    private readonly db: Database,
    private readonly owner: string,
  ) {}

  /**
   * Inserts a new task with its first events. With a non-empty `requestId`
   * that its team used before, returns the existing task instead (idempotent
   * submit). With `leaseMs` the new task is this owner's from the start;
   * without, any replica may take it.
   */
  async create(task: TaskRecord, events: readonly NewEvent[], options: { leaseMs?: number } = {}): Promise<{ task: TaskRecord; created: boolean; events: TaskEvent[] }> {
    try {
      return await this.insert(task, events, options);
    } catch (error) {
      // Submits of one request_id at once all miss each other's uncommitted row; the unique index
      // makes every insert but the first wait for it to commit and then fail. The first one's task is the answer.
      if (task.requestId === '' || AppError.from(error).code !== ErrorCode.ALREADY_EXISTS) throw error;
      const winner = await this.sameRequest(this.db, task);
      if (winner === undefined) throw error;
      return { task: winner, created: false, events: [] };
    }
  }

  /**
   * The task an earlier submit with the same request_id created, if any:
   * the one place that says what "the same request" is, for the lookup
   * before inserting and after losing the race for the unique index.
   */
  private async sameRequest(db: Queryable, task: TaskRecord): Promise<TaskRecord | undefined> {
    if (task.requestId === '') return undefined;
    const existing = await db.query<TaskRow>(`${selectTasks} WHERE team = $1 AND request_id = $2`, [task.team, task.requestId]);
    const row = existing.rows[0];
    return row === undefined ? undefined : taskFromRow(row);
  }

  /** `create` in one transaction; a concurrent insert of the same request fails it with ALREADY_EXISTS (the unique index). */
  private insert(task: TaskRecord, events: readonly NewEvent[], options: { leaseMs?: number }): Promise<{ task: TaskRecord; created: boolean; events: TaskEvent[] }> {
    return this.db.transaction(async (tx) => {
      const existing = await this.sameRequest(tx, task);
      if (existing !== undefined) return { task: existing, created: false, events: [] };
      await tx.query(
        `INSERT INTO ${schema}.tasks (id, goal, language, status, status_reason, stop_reason, current_iteration, replan_count, replan_reason, budget, usage, labels,
           workspace, acceptance_tests, generated_tests, result_files, plan, lessons, request_id, created_at, updated_at, started_at, completed_at,
           last_event_sequence, owner, lease_expires_at, approval_kinds, approval_timeout_ms, test_command, test_edits, project, memory_use, team, submitted_by, trace_context, profile, phases, data_files, setup_command)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,now() + make_interval(secs => $26::double precision / 1000),$27,$28,$29,$30,$31,$32,$33,$34,$35,$36,$37,$38,$39)`,
        [
          ...taskParams(task),
          events.length,
          options.leaseMs === undefined ? null : this.owner,
          options.leaseMs ?? 0,
          json(task.approvalKinds.map((kind) => approvalKindToJSON(kind))),
          task.approvalTimeoutMs,
          json(task.testCommand),
          testEditsToJSON(task.testEdits),
          task.project,
          memoryUseToJSON(task.memory),
          task.team,
          task.submittedBy,
          task.traceContext === undefined ? null : json(task.traceContext),
          task.profile === undefined ? null : json(ProjectProfile.toJSON(task.profile)),
          json(TaskPhases.toJSON(task.phases)),
          json(task.dataFiles.map((file) => DataFile.toJSON(file))),
          task.setupCommand,
        ],
      );
      const stored = numbered(task.id, events.map((event) => ({ ...event, iteration: event.iteration || task.currentIteration })), 1);
      await insertEvents(tx, stored);
      return { task: { ...task, version: events.length }, created: true, events: stored };
    });
  }

  /**
   * The task with this id, or the only task whose id starts with it (at
   * least 6 characters), as users type ids from `ratchet history`. With
   * `team`, only that team's tasks are considered: another team's task is
   * not found, as if it did not exist.
   *
   * @throws AppError NOT_FOUND when none matches; INVALID_ARGUMENT when a prefix is ambiguous.
   */
  async get(idOrPrefix: string, options: { team?: string } = {}): Promise<TaskRecord> {
    const team = options.team ?? null;
    const exact = await this.db.query<TaskRow>(`${selectTasks} WHERE id = $1 AND ($2::text IS NULL OR team = $2)`, [idOrPrefix, team]);
    if (exact.rows[0] !== undefined) return taskFromRow(exact.rows[0]);
    if (idOrPrefix.length >= 6 && /^[\w-]+$/.test(idOrPrefix)) {
      const matches = await this.db.query<TaskRow>(`${selectTasks} WHERE id LIKE $1 AND ($2::text IS NULL OR team = $2) ORDER BY created_at DESC LIMIT 3`, [`${idOrPrefix}%`, team]);
      if (matches.rows.length === 1) return taskFromRow(matches.rows[0] as TaskRow);
      if (matches.rows.length > 1) throw new AppError(ErrorCode.INVALID_ARGUMENT, `task id prefix ${idOrPrefix} matches several tasks; give more characters`);
    }
    throw new AppError(ErrorCode.NOT_FOUND, `no task ${idOrPrefix}; \`ratchet history\` lists the tasks`);
  }

  /** Tasks newest first, optionally only those in `statuses` and carrying `labels`. */
  async list(query: ListTasksQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    const names = query.statuses.map((status) => taskStatusToJSON(status));
    const result = await this.db.query<TaskRow>(
      `${selectTasks} WHERE team = $5 AND (cardinality($1::text[]) = 0 OR status = ANY($1::text[])) AND labels @> $4::jsonb ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [names, query.pageSize + 1, query.offset, JSON.stringify(query.labels ?? {}), query.team],
    );
    return { tasks: result.rows.slice(0, query.pageSize).map(taskFromRow), more: result.rows.length > query.pageSize };
  }

  /** Ids of tasks waiting for answers past their answer deadline (on the database's clock), oldest deadline first, at most 100. */
  async unansweredPastDeadline(): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(
      `SELECT id FROM ${schema}.tasks WHERE answer_deadline < now() AND status = '${taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_ANSWER)}' ORDER BY answer_deadline LIMIT 100`,
    );
    return result.rows.map((row) => row.id);
  }

  /** Ids of tasks not yet SUCCEEDED, FAILED or CANCELLED, oldest first. */
  async unfinished(): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(`SELECT id FROM ${schema}.tasks WHERE status NOT IN (${terminalNames}) ORDER BY created_at`);
    return result.rows.map((row) => row.id);
  }
}
