import { Phase, StopReason, TaskStatus, type Iteration } from '@ratchet/contracts';

const terminal: ReadonlySet<TaskStatus> = new Set([TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_FAILED, TaskStatus.TASK_STATUS_CANCELLED]);

/** The statuses no task leaves: SUCCEEDED, FAILED and CANCELLED. */
export const terminalStatuses: readonly TaskStatus[] = [...terminal];

/** True for SUCCEEDED, FAILED and CANCELLED. */
export function isTerminal(status: TaskStatus): boolean {
  return terminal.has(status);
}

/** True for the statuses where a task waits on a person: AWAITING_APPROVAL and AWAITING_ANSWER. */
export function isWaiting(status: TaskStatus): boolean {
  return status === TaskStatus.TASK_STATUS_AWAITING_APPROVAL || status === TaskStatus.TASK_STATUS_AWAITING_ANSWER;
}

const phaseOf: Readonly<Partial<Record<TaskStatus, Phase>>> = {
  [TaskStatus.TASK_STATUS_REPROMPTING]: Phase.PHASE_REPROMPTING,
  [TaskStatus.TASK_STATUS_RETRIEVING]: Phase.PHASE_RETRIEVING,
  [TaskStatus.TASK_STATUS_PLANNING]: Phase.PHASE_PLANNING,
  [TaskStatus.TASK_STATUS_CODING]: Phase.PHASE_CODING,
  [TaskStatus.TASK_STATUS_SAFETY_CHECK]: Phase.PHASE_SAFETY_CHECK,
  [TaskStatus.TASK_STATUS_REVIEWING]: Phase.PHASE_REVIEWING,
  [TaskStatus.TASK_STATUS_AUDITING]: Phase.PHASE_AUDITING,
  [TaskStatus.TASK_STATUS_TESTING]: Phase.PHASE_TESTING,
  [TaskStatus.TASK_STATUS_REFLECTING]: Phase.PHASE_REFLECTING,
  [TaskStatus.TASK_STATUS_LEARNING]: Phase.PHASE_LEARNING,
};

/** The phase a status runs; PHASE_UNSPECIFIED for QUEUED, waiting and terminal statuses. */
export function phaseOfStatus(status: TaskStatus): Phase {
  return phaseOf[status] ?? Phase.PHASE_UNSPECIFIED;
}

/** `coding` for PHASE_CODING. */
export function phaseName(phase: Phase): string {
  return (Phase[phase] ?? String(phase)).replace(/^PHASE_/, '').toLowerCase().replace(/_/g, ' ');
}

/** `PLANNING` for TASK_STATUS_PLANNING: for messages and output. */
export function statusName(status: TaskStatus): string {
  return (TaskStatus[status] ?? String(status)).replace(/^TASK_STATUS_/, '');
}

/** `max iterations` for STOP_REASON_MAX_ITERATIONS. */
export function stopReasonName(reason: StopReason): string {
  return (StopReason[reason] ?? String(reason)).replace(/^STOP_REASON_/, '').toLowerCase().replace(/_/g, ' ');
}

/** An iteration summarised for people and JSON output: its outcome, test counts and what was learnt. */
export function toIterationView(record: Pick<Iteration, 'number' | 'phase' | 'testReport' | 'error' | 'files' | 'safetyFindings' | 'reflection' | 'hypothesis' | 'retrievedLessonIds' | 'usage'>) {
  const report = record.testReport;
  const passed = report !== undefined && report.parsed && record.error === undefined && record.phase === Phase.PHASE_LEARNING;
  return {
    number: record.number,
    outcome: passed ? 'passed' : record.error !== undefined ? `failed (${record.error.code})` : 'in progress',
    tests: report === undefined ? '' : report.parsed ? `${report.passed}/${report.total} passed` : `no report: ${report.parseError}`,
    files: record.files.map((file) => file.path),
    error: record.error === undefined ? undefined : { code: record.error.code, message: record.error.message, signature: record.error.signature },
    safetyFindings: record.safetyFindings.map((finding) => ({ ruleId: finding.ruleId, path: finding.path, line: finding.line, message: finding.message })),
    rootCause: record.reflection?.rootCause ?? '',
    hypothesis: record.hypothesis,
    fixDirection: record.reflection?.fixDirection ?? '',
    lesson: record.reflection?.candidateLesson?.title ?? '',
    lessonsUsed: record.retrievedLessonIds,
    usage: record.usage,
  };
}
