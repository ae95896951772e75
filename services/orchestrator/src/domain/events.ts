import { durationFromMs } from '@ratchet/agent';
import type { ErrorDetail, Phase, TaskEvent, Usage } from '@ratchet/contracts';

/** An event as `decide` makes it: the store numbers it. Iteration 0 means "the task's current one". */
export type NewEvent = Omit<TaskEvent, 'taskId' | 'sequence'>;

/** An event at `at`. */
export function event(at: Date, payload: NonNullable<TaskEvent['payload']>, iteration = 0): NewEvent {
  return { time: at, iteration, payload };
}

/** PhaseCompleted for a phase that ran from `startedAt` to `at`. */
export function phaseCompleted(at: Date, phase: Phase, startedAt: Date, usage: Usage, summary: string, error?: ErrorDetail): NewEvent {
  return event(at, { $case: 'phaseCompleted', phaseCompleted: { phase, duration: durationFromMs(at.getTime() - startedAt.getTime()), usage, summary, error } });
}
