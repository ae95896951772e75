import { Phase, TaskStatus } from '@ratchet/contracts';

const phaseOf: Readonly<Partial<Record<TaskStatus, Phase>>> = {
  [TaskStatus.TASK_STATUS_RETRIEVING]: Phase.PHASE_RETRIEVING,
  [TaskStatus.TASK_STATUS_PLANNING]: Phase.PHASE_PLANNING,
  [TaskStatus.TASK_STATUS_CODING]: Phase.PHASE_CODING,
  [TaskStatus.TASK_STATUS_SAFETY_CHECK]: Phase.PHASE_SAFETY_CHECK,
  [TaskStatus.TASK_STATUS_REVIEWING]: Phase.PHASE_REVIEWING,
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
