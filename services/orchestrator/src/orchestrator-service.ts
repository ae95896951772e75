import { randomUUID } from 'node:crypto';
import type { CallContext } from '@ratchet/bus';
import {
  StopReason,
  TaskEvent,
  TaskStatus,
  TaskView,
  type CancelTaskRequest,
  type CancelTaskResponse,
  type GetTaskRequest,
  type GetTaskResponse,
  type ListTasksRequest,
  type ListTasksResponse,
  type ApproveRequest,
  type ApproveResponse,
  ApprovalDecision,
  type ResumeTaskRequest,
  type ResumeTaskResponse,
  type SubmitTaskRequest,
  type SubmitTaskResponse,
  type WatchTaskRequest,
  type WatchTaskResponse,
} from '@ratchet/contracts';
import type { Database } from '@ratchet/db';
import { AppError, ErrorCode } from '@ratchet/errors';
import { TaskStore } from './adapters/task-store';
import { effectiveBudget, exhaustedBudget } from './domain/budget';
import { phaseOfStatus } from './domain/phase';
import { emptyUsage, toIterationProto, toTaskProto, type TaskRecord } from './domain/records';
import { isTerminal, statusName } from './domain/task-state';
import { validateSubmit } from './handlers/validate-submit';
import { handOver, TaskDriver, type AgentClients, type DriverSettings, type EventPublisher } from './task-driver';

export interface OrchestratorServiceOptions {
  /** Where tasks live; the caller owns and closes it. */
  readonly db: Database;
  readonly clients: AgentClients;
  /** Publishes each stored event to live readers; the bus's task event stream. */
  readonly publish: EventPublisher;
  /**
   * Live events of a task (the bus's task event stream), used by WatchTask
   * only as a signal that new events are stored; the store stays the source,
   * so an event whose publication was lost is still sent. Without it,
   * WatchTask polls the store.
   */
  readonly live?: (taskId: string) => Promise<AsyncIterable<unknown> & { stop(): Promise<void> }>;
  readonly settings: DriverSettings;
  /** Tasks driven at once; more wait in QUEUED. Default 4. */
  readonly maxConcurrentTasks?: number;
  /** Names this replica in task leases; keep it across restarts to take its tasks back at once. Default: random. */
  readonly owner?: string;
  /** How long a lease lasts without renewal, ms (renewed every third of it). Default 30000. */
  readonly leaseMs?: number;
  /**
   * A replica among others: every this many ms, take over unfinished tasks
   * nobody drives (new ones, and those of a replica that died), and on
   * close hand running tasks over instead of cancelling them. 0 (the
   * default, embedded mode) drives only tasks submitted here.
   */
  readonly claimIntervalMs?: number;
  readonly now?: () => Date;
  readonly logger?: { error(details: object, message: string): void; warn(details: object, message: string): void };
}

export interface OrchestratorService {
  readonly implementation: {
    submitTask(request: SubmitTaskRequest, context: CallContext): Promise<SubmitTaskResponse>;
    getTask(request: GetTaskRequest, context: CallContext): Promise<GetTaskResponse>;
    listTasks(request: ListTasksRequest, context: CallContext): Promise<ListTasksResponse>;
    cancelTask(request: CancelTaskRequest, context: CallContext): Promise<CancelTaskResponse>;
    resumeTask(request: ResumeTaskRequest, context: CallContext): Promise<ResumeTaskResponse>;
    approve(request: ApproveRequest, context: CallContext): Promise<ApproveResponse>;
  };
  /**
   * WatchTask: the task's stored events from `from_sequence`, then new ones
   * as they are stored, ending after TaskCompleted (unless
   * `follow_after_completion`) or when `context.signal` aborts.
   *
   * @throws AppError INVALID_ARGUMENT without task_id; NOT_FOUND for an unknown task.
   */
  watchTask(request: WatchTaskRequest, context: Pick<CallContext, 'signal'>): AsyncIterable<WatchTaskResponse>;
  /** Resolves when the task reaches a terminal status (immediately if it has). */
  whenDone(taskId: string): Promise<TaskRecord>;
  /** Stored events of a task from `fromSequence` (1 = all). */
  events(taskId: string, fromSequence?: number): Promise<TaskEvent[]>;
  /** Cancels running tasks and waits for them to record it. */
  close(): Promise<void>;
}

interface Running {
  readonly controller: AbortController;
  readonly done: Promise<TaskRecord>;
}

const defaultPageSize = 20;
const maxPageSize = 100;

/**
 * The orchestrator: owns task state, drives each submitted task through the
 * loop in the background (at most `maxConcurrentTasks` at once) and answers
 * queries from the store.
 */
export async function createOrchestratorService(options: OrchestratorServiceOptions): Promise<OrchestratorService> {
  const store = await TaskStore.open(options.db, options.owner === undefined ? {} : { owner: options.owner });
  const now = options.now ?? (() => new Date());
  const driver = new TaskDriver(store, options.clients, options.publish, options.settings, now, options.logger);
  const running = new Map<string, Running>();
  /** Tasks leased to this replica, waiting for a free slot. */
  const waiting: string[] = [];
  const limit = options.maxConcurrentTasks ?? 4;
  const leaseMs = options.leaseMs ?? 30_000;
  const shared = (options.claimIntervalMs ?? 0) > 0;
  let closed = false;
  const logError = (details: object, message: string) => options.logger?.error(details, message);

  const start = (taskId: string) => {
    const controller = new AbortController();
    const done = driver.drive(taskId, controller.signal).finally(() => {
      running.delete(taskId);
      startNext();
    });
    done.catch((error: unknown) => {
      const appError = AppError.from(error);
      // Another replica took the task over, or it was handed over during an outage: not a failure.
      if (appError.code === ErrorCode.ABORTED || appError.code === ErrorCode.CANCELLED) return;
      logError({ taskId, err: appError.message }, 'task driver failed');
    });
    running.set(taskId, { controller, done });
  };

  const startNext = () => {
    while (!closed && running.size < limit && waiting.length > 0) start(waiting.shift() as string);
    if (shared) void claimFree();
  };

  let claiming = false;
  /** Takes over unfinished tasks nobody drives, as many as there are free slots. */
  const claimFree = async () => {
    if (closed || claiming || running.size + waiting.length >= limit) return;
    claiming = true;
    try {
      const ids = await store.claim({ limit: limit - running.size - waiting.length }, leaseMs);
      // The claim also returns tasks this replica already holds: those running or waiting for a slot stay as they are.
      for (const id of ids) if (!running.has(id) && !waiting.includes(id)) start(id);
    } catch (error) {
      logError({ err: AppError.from(error).message }, 'cannot take over tasks; trying again');
    } finally {
      claiming = false;
    }
  };

  /** Keeps this replica's leases; stops tasks whose lease went to another and acts on cancels asked elsewhere. */
  const renew = async () => {
    const held = [...running.keys(), ...waiting];
    if (closed || held.length === 0) return;
    try {
      const kept = await store.renew(held, leaseMs);
      for (const id of held) {
        const cancel = kept.get(id);
        const active = running.get(id);
        if (cancel === undefined) {
          active?.controller.abort(handOver);
          const queued = waiting.indexOf(id);
          if (queued >= 0) waiting.splice(queued, 1);
        } else if (cancel !== '' && active !== undefined && !active.controller.signal.aborted) {
          active.controller.abort(cancel);
        }
      }
    } catch (error) {
      logError({ err: AppError.from(error).message }, 'cannot renew task leases; trying again');
    }
  };
  const timers = [setInterval(() => void renew(), Math.max(100, Math.floor(leaseMs / 3)))];
  if (shared) timers.push(setInterval(() => void claimFree(), options.claimIntervalMs));
  for (const timer of timers) timer.unref();
  if (shared) void claimFree();

  const implementation: OrchestratorService['implementation'] = {
    async submitTask(request) {
      validateSubmit(request);
      const created = now();
      const record: TaskRecord = {
        id: randomUUID(),
        goal: request.goal.trim(),
        language: request.language,
        status: TaskStatus.TASK_STATUS_QUEUED,
        statusReason: '',
        stopReason: StopReason.STOP_REASON_UNSPECIFIED,
        currentIteration: 0,
        replanCount: 0,
        replanReason: '',
        budget: request.budget ?? { maxIterations: 0, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
        usage: emptyUsage(),
        labels: { ...request.labels },
        workspace: request.workspace,
        acceptanceTests: request.acceptanceTests,
        generatedTests: [],
        resultFiles: [],
        lessons: [],
        requestId: request.requestId,
        approvalKinds: [...new Set(request.approvalPolicy?.required ?? [])],
        approvalTimeoutMs: request.approvalPolicy?.timeout === undefined ? 0 : request.approvalPolicy.timeout.seconds * 1000 + Math.floor(request.approvalPolicy.timeout.nanos / 1e6),
        pendingGateId: '',
        createdAt: created,
        updatedAt: created,
      };
      // A replica among others leaves a task it has no slot for to whichever replica has one.
      const keep = !shared || running.size + waiting.length < limit;
      const result = await store.create(record, [{ time: created, iteration: 0, payload: { $case: 'taskSubmitted', taskSubmitted: { task: toTaskProto(record, false) } } }], keep ? { leaseMs } : {});
      if (result.created) {
        await options.publish(result.events);
        if (keep) waiting.push(record.id);
        startNext();
      }
      return { task: toTaskProto(result.task, false) };
    },

    async getTask(request) {
      if (request.taskId.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
      const task = await store.get(request.taskId.trim());
      const full = request.view === TaskView.TASK_VIEW_FULL;
      const iterations = full ? (await store.iterations(task.id)).map(toIterationProto) : [];
      return { task: toTaskProto(task, full), iterations, approvals: full ? await store.approvals(task.id) : [] };
    },

    async listTasks(request) {
      const pageSize = request.pageSize === 0 ? defaultPageSize : request.pageSize;
      if (pageSize < 0 || pageSize > maxPageSize) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to ${maxPageSize}`);
      const offset = request.pageToken === '' ? 0 : Number.parseInt(Buffer.from(request.pageToken, 'base64url').toString('utf8'), 10);
      if (!Number.isInteger(offset) || offset < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this server issued; start again without it');
      const page = await store.list({ statuses: request.statuses, pageSize, offset });
      return {
        tasks: page.tasks.map((task) => toTaskProto(task, request.view === TaskView.TASK_VIEW_FULL)),
        nextPageToken: page.more ? Buffer.from(String(offset + pageSize), 'utf8').toString('base64url') : '',
      };
    },

    async cancelTask(request, context) {
      const task = await store.get(request.taskId.trim());
      if (isTerminal(task.status)) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} already ended (${statusName(task.status)}); nothing to cancel`);
      const reason = request.reason.trim() === '' ? 'cancelled by the user' : request.reason.trim();
      const active = running.get(task.id);
      if (active !== undefined) {
        active.controller.abort(reason);
        return { task: toTaskProto(await active.done, false) };
      }
      const queued = waiting.indexOf(task.id);
      if (queued >= 0) waiting.splice(queued, 1);
      if (queued >= 0 || (await store.claim({ ids: [task.id] }, leaseMs)).length > 0) {
        const controller = new AbortController();
        controller.abort(reason);
        return { task: toTaskProto(await driver.drive(task.id, controller.signal), false) };
      }
      // Another replica drives it: leave the request on the task and wait for that replica to act on it.
      await store.requestCancel(task.id, reason);
      const deadline = Math.min(context.deadline, Date.now() + leaseMs * 2);
      for (;;) {
        const latest = await store.get(task.id);
        if (isTerminal(latest.status)) return { task: toTaskProto(latest, false) };
        if (Date.now() >= deadline) {
          throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `task ${task.id} is driven by another orchestrator, which has not stopped it yet; the cancel is recorded and will take effect`, { retryable: true });
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },

    /**
     * ResumeTask: a FAILED task goes back to PLANNING, with the hint as the
     * re-plan reason (the planner sees it, and the coder the plan it makes),
     * the additional budget added to its limits and a fresh wall-time
     * allowance from now. Its iterations and lessons stay.
     */
    async resumeTask(request) {
      const taskId = request.taskId.trim();
      if (taskId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
      const add = request.additionalBudget;
      for (const [field, value] of [['max_iterations', add?.maxIterations ?? 0], ['max_tokens', add?.maxTokens ?? 0], ['max_cost_usd', add?.maxCostUsd ?? 0]] as const) {
        if (!Number.isFinite(value) || value < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `additional_budget.${field} is ${value}; use 0 or more`);
      }
      const hint = request.hint.trim();
      if (hint.length > 10_000) throw new AppError(ErrorCode.INVALID_ARGUMENT, `hint is ${hint.length} characters; keep it under 10000`);
      const task = await store.get(taskId);
      if (task.status !== TaskStatus.TASK_STATUS_FAILED) {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}; only a FAILED task can be resumed`);
      }
      const current = effectiveBudget(task.budget, options.settings.defaultBudget);
      const addedWallMs = add?.maxWallTime === undefined ? 0 : add.maxWallTime.seconds * 1000 + Math.floor(add.maxWallTime.nanos / 1e6);
      const allowanceMs = addedWallMs > 0 ? addedWallMs : current.maxWallTimeMs;
      const wallMs = current.maxWallTimeMs <= 0 && addedWallMs <= 0 ? 0 : now().getTime() - (task.startedAt ?? task.createdAt).getTime() + allowanceMs;
      const budget = {
        maxIterations: current.maxIterations + (add?.maxIterations ?? 0),
        // 0 is "no limit" and stays so.
        maxTokens: current.maxTokens > 0 ? current.maxTokens + (add?.maxTokens ?? 0) : 0,
        maxCostUsd: current.maxCostUsd > 0 ? current.maxCostUsd + (add?.maxCostUsd ?? 0) : 0,
        maxWallTime: { seconds: Math.floor(wallMs / 1000), nanos: (wallMs % 1000) * 1e6 },
      };
      const exhausted = exhaustedBudget(effectiveBudget(budget, options.settings.defaultBudget), { usage: task.usage, iterations: task.currentIteration, elapsedMs: 0 }, true);
      if (exhausted !== undefined) {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `resuming task ${task.id} would stop at once (${exhausted.detail}); add to its budget, e.g. ratchet resume ${task.id} --add-iterations 3`);
      }
      const reason = hint === '' ? 'resumed by the user' : `resumed by the user: ${hint}`;
      const keep = !shared || running.size + waiting.length < limit;
      const time = now();
      const events = await store.reopen(
        task.id,
        budget,
        reason,
        [
          { time, iteration: 0, payload: { $case: 'taskStatusChanged', taskStatusChanged: { fromStatus: TaskStatus.TASK_STATUS_FAILED, toStatus: TaskStatus.TASK_STATUS_PLANNING, reason } } },
          { time, iteration: 0, payload: { $case: 'phaseStarted', phaseStarted: { phase: phaseOfStatus(TaskStatus.TASK_STATUS_PLANNING), attempt: 1 } } },
        ],
        keep ? { leaseMs } : {},
      );
      await options.publish(events);
      // Read before a driver starts on it, so the answer shows the task as resumed.
      const reopened = toTaskProto(await store.get(task.id), false);
      if (keep) waiting.push(task.id);
      startNext();
      return { task: reopened };
    },

    /**
     * Approve: a decision on the gate a task waits on. APPROVED moves it on
     * (a final result to LEARNING, then SUCCEEDED); REJECTED sends it back to
     * PLANNING with the approver's comment as the re-plan reason.
     */
    approve: (request) => decide(request),
  };

  async function decide(request: ApproveRequest): Promise<ApproveResponse> {
    const taskId = request.taskId.trim();
    const gateId = request.gateId.trim();
    if (taskId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
    if (gateId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'gate_id is empty; it is in the ApprovalRequested event and in the task (pending_gate_id)');
    const approved = request.decision === ApprovalDecision.APPROVAL_DECISION_APPROVED;
    if (!approved && request.decision !== ApprovalDecision.APPROVAL_DECISION_REJECTED) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'decision must be APPROVED or REJECTED');
    const comment = request.comment.trim();
    if (comment.length > 10_000) throw new AppError(ErrorCode.INVALID_ARGUMENT, `comment is ${comment.length} characters; keep it under 10000`);
    const approver = request.approver.trim() || 'someone';
    const task = await store.get(taskId);
    if (task.status !== TaskStatus.TASK_STATUS_AWAITING_APPROVAL) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}, not waiting for approval`);
    const next = approved ? TaskStatus.TASK_STATUS_LEARNING : TaskStatus.TASK_STATUS_PLANNING;
    const reason = approved ? `approved by ${approver}` : `the result was rejected by ${approver}${comment === '' ? '' : `: ${comment}`}`;
    const keep = !shared || running.size + waiting.length < limit;
    const time = now();
    const { gate, events } = await store.decide(
      task.id,
      gateId,
      { decision: request.decision, approver, comment, next, reason },
      (decided) => [
        { time, iteration: decided.iteration, payload: { $case: 'approvalDecided', approvalDecided: { gate: decided } } },
        { time, iteration: decided.iteration, payload: { $case: 'taskStatusChanged', taskStatusChanged: { fromStatus: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, toStatus: next, reason } } },
        { time, iteration: decided.iteration, payload: { $case: 'phaseStarted', phaseStarted: { phase: phaseOfStatus(next), attempt: 1 } } },
      ],
      keep ? { leaseMs } : {},
    );
    await options.publish(events);
    const moved = toTaskProto(await store.get(task.id), false);
    if (keep) waiting.push(task.id);
    startNext();
    return { gate, task: moved };
  }

  /** Rejects gates nobody decided within the task's approval timeout. */
  const expireGates = async () => {
    if (closed) return;
    try {
      for (const { taskId, gateId } of await store.expiredGates()) {
        await decide({ taskId, gateId, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: 'timeout', comment: 'no decision within the approval timeout' }).catch((error: unknown) => {
          // Another replica got there first, or a person decided just now.
          if (AppError.from(error).code !== ErrorCode.FAILED_PRECONDITION) throw error;
        });
      }
    } catch (error) {
      logError({ err: AppError.from(error).message }, 'cannot expire approval gates; trying again');
    }
  };
  timers.push(setInterval(() => void expireGates(), 1_000));
  timers.at(-1)?.unref();

  async function* watchTask(request: WatchTaskRequest, context: Pick<CallContext, 'signal'>): AsyncGenerator<WatchTaskResponse> {
    const taskId = request.taskId.trim();
    if (taskId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
    if (request.fromSequence < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `from_sequence is ${request.fromSequence}; use 0 for the whole history`);
    const task = await store.get(taskId);
    let next = Math.max(1, request.fromSequence);
    // Bursts of live events collapse into one read of the store.
    let wake: (() => void) | undefined;
    let pending = false;
    const signalNew = () => {
      pending = true;
      wake?.();
    };
    const reader = await options.live?.(task.id).catch(() => undefined);
    const pump = reader === undefined ? undefined : (async () => {
      const events = reader[Symbol.asyncIterator]();
      while (!(await events.next()).done) signalNew();
    })().catch(() => undefined);
    const onAbort = () => wake?.();
    context.signal.addEventListener('abort', onAbort);
    try {
      while (!context.signal.aborted) {
        pending = false;
        // The stream ends at a TaskCompleted that is the latest event: a resumed
        // task has an older one, followed by its new round.
        let completed = false;
        for (const event of await store.events(task.id, next)) {
          next = event.sequence + 1;
          yield { event };
          completed = event.payload?.$case === 'taskCompleted';
        }
        if (completed && !request.followAfterCompletion) return;
        if (!pending) {
          // The live stream wakes this up; the timer covers an event whose publication was lost.
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, reader === undefined ? 200 : 2_000).unref();
          });
          wake = undefined;
        }
      }
    } finally {
      context.signal.removeEventListener('abort', onAbort);
      await reader?.stop().catch(() => undefined);
      await pump;
    }
  }

  return {
    implementation,
    watchTask,
    async whenDone(taskId) {
      const active = running.get(taskId);
      if (active !== undefined) return active.done;
      const task = await store.get(taskId);
      if (isTerminal(task.status)) return task;
      // Queued behind others: poll the store until a driver finishes it.
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const current = running.get(taskId);
        if (current !== undefined) return current.done;
        const latest = await store.get(taskId);
        if (isTerminal(latest.status)) return latest;
      }
    },
    events: (taskId, fromSequence) => store.events(taskId, fromSequence),
    async close() {
      closed = true;
      for (const timer of timers) clearInterval(timer);
      waiting.length = 0;
      const active = [...running.values()];
      // A replica among others hands its tasks over (they go on elsewhere); embedded mode ends them.
      for (const task of active) task.controller.abort(shared ? handOver : 'the orchestrator is shutting down');
      await Promise.allSettled(active.map((task) => task.done));
      if (shared) await store.release().catch((error: unknown) => logError({ err: AppError.from(error).message }, 'cannot release task leases; they run out by themselves'));
    },
  };
}
