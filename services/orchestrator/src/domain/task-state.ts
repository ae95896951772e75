import { AppError, ErrorCode } from '@ratchet/errors';
import { StopReason, TaskStatus } from '@ratchet/contracts';

/**
 * Which status may follow which: the loop of ARCHITECTURE.md. Terminal
 * statuses have no successors; CANCELLED and FAILED may follow any live one.
 */
const successors: Readonly<Partial<Record<TaskStatus, readonly TaskStatus[]>>> = {
  [TaskStatus.TASK_STATUS_QUEUED]: [TaskStatus.TASK_STATUS_RETRIEVING],
  [TaskStatus.TASK_STATUS_RETRIEVING]: [TaskStatus.TASK_STATUS_PLANNING],
  [TaskStatus.TASK_STATUS_PLANNING]: [TaskStatus.TASK_STATUS_CODING],
  // CODING -> REFLECTING: the coder's reply stayed invalid, a failed attempt like a failing test.
  [TaskStatus.TASK_STATUS_CODING]: [TaskStatus.TASK_STATUS_SAFETY_CHECK, TaskStatus.TASK_STATUS_REFLECTING],
  [TaskStatus.TASK_STATUS_SAFETY_CHECK]: [TaskStatus.TASK_STATUS_TESTING, TaskStatus.TASK_STATUS_REVIEWING, TaskStatus.TASK_STATUS_REFLECTING],
  [TaskStatus.TASK_STATUS_REVIEWING]: [TaskStatus.TASK_STATUS_TESTING, TaskStatus.TASK_STATUS_REFLECTING],
  [TaskStatus.TASK_STATUS_TESTING]: [TaskStatus.TASK_STATUS_LEARNING, TaskStatus.TASK_STATUS_REFLECTING],
  [TaskStatus.TASK_STATUS_REFLECTING]: [TaskStatus.TASK_STATUS_CODING, TaskStatus.TASK_STATUS_PLANNING],
  [TaskStatus.TASK_STATUS_LEARNING]: [TaskStatus.TASK_STATUS_SUCCEEDED],
  [TaskStatus.TASK_STATUS_AWAITING_APPROVAL]: [
    TaskStatus.TASK_STATUS_PLANNING,
    TaskStatus.TASK_STATUS_CODING,
    TaskStatus.TASK_STATUS_TESTING,
    TaskStatus.TASK_STATUS_LEARNING,
  ],
};

const terminal = new Set<TaskStatus>([TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_FAILED, TaskStatus.TASK_STATUS_CANCELLED]);

/** True for SUCCEEDED, FAILED and CANCELLED. */
export function isTerminal(status: TaskStatus): boolean {
  return terminal.has(status);
}

/** Whether `to` may follow `from`. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  if (isTerminal(from)) return false;
  if (to === TaskStatus.TASK_STATUS_FAILED || to === TaskStatus.TASK_STATUS_CANCELLED) return true;
  if (to === TaskStatus.TASK_STATUS_AWAITING_APPROVAL) return true;
  return successors[from]?.includes(to) ?? false;
}

/**
 * @throws AppError FAILED_PRECONDITION naming both statuses when `to` may not follow `from`.
 */
export function assertTransition(from: TaskStatus, to: TaskStatus): void {
  if (!canTransition(from, to)) throw new AppError(ErrorCode.FAILED_PRECONDITION, `a task cannot go from ${statusName(from)} to ${statusName(to)}`);
}

/** `PLANNING` for TASK_STATUS_PLANNING: for messages and output. */
export function statusName(status: TaskStatus): string {
  return (TaskStatus[status] ?? String(status)).replace(/^TASK_STATUS_/, '');
}

/** `max iterations` for STOP_REASON_MAX_ITERATIONS. */
export function stopReasonName(reason: StopReason): string {
  return (StopReason[reason] ?? String(reason)).replace(/^STOP_REASON_/, '').toLowerCase().replace(/_/g, ' ');
}
