import { enumLabel, formatDuration, formatUsage, oneLine, phaseLabel, statusLabel, toolDetail } from './format';
import type { Duration, TaskEvent, Usage } from './types';

// A task's events turned into what the task page shows while it runs: the
// phases of each iteration as a timeline, and a feed of what happened.
// Pure functions over the event list, tested in timeline.spec.ts.

/** One run of a phase. */
export interface PhaseStep {
  readonly phase: string;
  readonly state: 'running' | 'done' | 'failed';
  readonly attempt: number;
  readonly duration?: Duration;
  readonly usage?: Usage;
  readonly summary?: string;
}

/** The phases of one iteration (0: before the first, e.g. reprompting), and how it ended. */
export interface IterationTimeline {
  readonly iteration: number;
  readonly steps: readonly PhaseStep[];
  readonly toolCalls: number;
  readonly outcome?: { readonly passed: boolean; readonly passedCount: number; readonly totalCount: number; readonly failure?: string };
}

/** Events in sequence order, each once: a reconnected stream may send some again. */
export function mergeEvents(known: readonly TaskEvent[], incoming: readonly TaskEvent[]): TaskEvent[] {
  const bySequence = new Map<number, TaskEvent>();
  for (const event of [...known, ...incoming]) bySequence.set(event.sequence ?? 0, event);
  return [...bySequence.values()].sort((a, b) => (a.sequence ?? 0) - (b.sequence ?? 0));
}

/** The last sequence seen, for resuming the stream after it. */
export function lastSequenceOf(events: readonly TaskEvent[]): number {
  return events.reduce((last, event) => Math.max(last, event.sequence ?? 0), 0);
}

/**
 * The phases of each iteration, oldest first: a PhaseStarted opens a step
 * (running), its PhaseCompleted closes it (done, or failed with an error);
 * a phase started again (a retry, or after a restart) is a new attempt.
 */
export function timelineOf(events: readonly TaskEvent[]): IterationTimeline[] {
  const iterations = new Map<number, { steps: PhaseStep[]; toolCalls: number; outcome?: IterationTimeline['outcome'] }>();
  const entry = (iteration: number) => {
    let found = iterations.get(iteration);
    if (found === undefined) {
      found = { steps: [], toolCalls: 0 };
      iterations.set(iteration, found);
    }
    return found;
  };
  for (const event of events) {
    const iteration = event.iteration ?? 0;
    if (event.phaseStarted !== undefined) {
      entry(iteration).steps.push({ phase: event.phaseStarted.phase ?? 'PHASE_UNSPECIFIED', state: 'running', attempt: event.phaseStarted.attempt ?? 1 });
    } else if (event.phaseCompleted !== undefined) {
      const phase = event.phaseCompleted.phase ?? 'PHASE_UNSPECIFIED';
      // The phase's start: in this iteration, or in the one before (the first plan starts before iteration 1 exists).
      const startedIn = [iteration, iteration - 1].find((candidate) => iterations.get(candidate)?.steps.some((step) => step.phase === phase && step.state === 'running'));
      const started = startedIn === undefined ? undefined : entry(startedIn).steps;
      const index = started === undefined ? -1 : started.findLastIndex((step) => step.phase === phase && step.state === 'running');
      const completed: PhaseStep = {
        phase,
        state: event.phaseCompleted.error === undefined ? 'done' : 'failed',
        attempt: index >= 0 ? (started?.[index]?.attempt ?? 1) : 1,
        ...(event.phaseCompleted.duration === undefined ? {} : { duration: event.phaseCompleted.duration }),
        ...(event.phaseCompleted.usage === undefined ? {} : { usage: event.phaseCompleted.usage }),
        ...(event.phaseCompleted.summary === undefined ? {} : { summary: event.phaseCompleted.summary }),
      };
      if (started !== undefined && startedIn === iteration) started[index] = completed;
      else {
        started?.splice(index, 1);
        entry(iteration).steps.push(completed);
      }
    } else if (event.toolCalled !== undefined && event.toolCalled.phase !== 'PHASE_PLANNING') {
      entry(iteration).toolCalls += 1;
    } else if (event.iterationCompleted !== undefined) {
      const done = event.iterationCompleted;
      entry(iteration).outcome = { passed: done.testsPassed === true, passedCount: done.testsPassedCount ?? 0, totalCount: done.testsTotalCount ?? 0, ...(done.failure ? { failure: done.failure } : {}) };
    }
  }
  // A task that ended leaves no phase running: a step without its completion was cut off.
  const ended = events.some((event) => event.taskCompleted !== undefined);
  return [...iterations.entries()]
    .filter(([, found]) => found.steps.length > 0 || found.outcome !== undefined)
    .sort(([a], [b]) => a - b)
    .map(([iteration, found]) => ({
      iteration,
      steps: ended ? found.steps.map((step) => (step.state === 'running' ? { ...step, state: 'failed' as const } : step)) : found.steps,
      toolCalls: found.toolCalls,
      ...(found.outcome === undefined ? {} : { outcome: found.outcome }),
    }));
}

/** One line of the activity feed. */
export interface FeedItem {
  readonly sequence: number;
  readonly time?: string;
  readonly iteration: number;
  readonly text: string;
  readonly tone: 'info' | 'good' | 'bad' | 'waiting';
}

/**
 * What happened, one line per event worth reading (as `ratchet run` prints
 * it); phase starts and status changes are left to the timeline.
 */
export function feedOf(events: readonly TaskEvent[]): FeedItem[] {
  const items: FeedItem[] = [];
  for (const event of events) {
    const base = { sequence: event.sequence ?? 0, iteration: event.iteration ?? 0, ...(event.time === undefined ? {} : { time: event.time }) };
    const line = lineOf(event);
    if (line !== undefined) items.push({ ...base, ...line });
  }
  return items;
}

function lineOf(event: TaskEvent): Pick<FeedItem, 'text' | 'tone'> | undefined {
  if (event.taskSubmitted !== undefined) return { text: `submitted: ${oneLine(event.taskSubmitted.task?.goal, 200)}`, tone: 'info' };
  if (event.phaseCompleted !== undefined) {
    const done = event.phaseCompleted;
    const usage = (done.usage?.modelCalls ?? 0) > 0 ? ` (${formatUsage(done.usage)})` : '';
    if (done.error !== undefined) return { text: `${phaseLabel(done.phase)} failed after ${formatDuration(done.duration)}: ${oneLine(done.error.message, 300)}`, tone: 'bad' };
    return { text: `${phaseLabel(done.phase)} done in ${formatDuration(done.duration)}${usage}${done.summary ? `: ${oneLine(done.summary, 200)}` : ''}`, tone: 'info' };
  }
  if (event.testRunCompleted !== undefined) {
    const run = event.testRunCompleted;
    const report = run.report;
    const flags = [run.timedOut ? 'timed out' : '', run.oomKilled ? 'out of memory' : ''].filter((flag) => flag !== '').join(', ');
    if (report === undefined || report.parsed !== true) return { text: `tests: no report (exit code ${run.exitCode ?? 0}${flags ? `, ${flags}` : ''})`, tone: 'bad' };
    const failed = (report.failed ?? 0) + (report.errored ?? 0);
    return { text: `tests: ${report.passed ?? 0} passed, ${failed} failed of ${report.total ?? 0}${flags ? ` (${flags})` : ''}`, tone: failed === 0 && !flags ? 'good' : 'bad' };
  }
  if (event.iterationCompleted !== undefined) {
    const done = event.iterationCompleted;
    return { text: `iteration ${done.testsPassed ? 'passed' : 'failed'}: ${done.testsPassedCount ?? 0}/${done.testsTotalCount ?? 0} tests, ${formatUsage(done.usage)}${done.failure ? `: ${oneLine(done.failure, 300)}` : ''}`, tone: done.testsPassed ? 'good' : 'bad' };
  }
  if (event.safetyBlocked !== undefined) return { text: `safety check blocked the code: ${(event.safetyBlocked.findings ?? []).map((finding) => `${finding.ruleId ?? ''} ${finding.path ?? ''}:${finding.line ?? 0}`).join('; ')}`, tone: 'bad' };
  if (event.lessonsRetrieved !== undefined) {
    const lessons = event.lessonsRetrieved.lessons ?? [];
    const where = event.lessonsRetrieved.phase === 'PHASE_REFLECTING' ? 'about this error' : 'for this goal';
    if (lessons.length === 0) return { text: `no lessons ${where} yet`, tone: 'info' };
    return { text: `${lessons.length} lesson(s) ${where}: ${lessons.map((lesson) => `"${oneLine(lesson.title, 80)}" (${(lesson.score ?? 0).toFixed(2)})`).join(', ')}`, tone: 'info' };
  }
  if (event.lessonStored !== undefined) return { text: `lesson ${event.lessonStored.created ? 'stored' : 'updated'}: "${oneLine(event.lessonStored.title, 120)}"`, tone: 'good' };
  if (event.approvalRequested !== undefined) {
    const gate = event.approvalRequested.gate;
    return { text: `waiting for approval (${enumLabel(gate?.kind, 'APPROVAL_KIND')}): ${oneLine(gate?.summary, 200)}`, tone: 'waiting' };
  }
  if (event.approvalDecided !== undefined) {
    const gate = event.approvalDecided.gate;
    const approved = gate?.decision === 'APPROVAL_DECISION_APPROVED';
    return { text: `${enumLabel(gate?.kind, 'APPROVAL_KIND')} ${approved ? 'approved' : 'rejected'} by ${gate?.approver ?? 'someone'}${gate?.comment ? `: ${oneLine(gate.comment, 200)}` : ''}`, tone: approved ? 'good' : 'bad' };
  }
  if (event.questionsAsked !== undefined) return { text: `${(event.questionsAsked.questions ?? []).length} question(s) to answer before planning`, tone: 'waiting' };
  if (event.toolCalled !== undefined) {
    const step = event.toolCalled.step;
    const who = event.toolCalled.phase === 'PHASE_PLANNING' ? 'planner lookup' : 'tool';
    return { text: `${who} #${step?.number ?? 0} ${step?.tool ?? ''} ${oneLine(toolDetail(step?.arguments), 80)}${step?.failed ? ' (failed)' : ''}`, tone: step?.failed ? 'bad' : 'info' };
  }
  if (event.logLine !== undefined) return { text: oneLine(event.logLine.message, 300), tone: event.logLine.level === 'LOG_LEVEL_ERROR' ? 'bad' : 'info' };
  if (event.taskCompleted !== undefined) {
    const done = event.taskCompleted;
    const detail = done.reasonDetail ? ` - ${oneLine(done.reasonDetail, 200)}` : '';
    return { text: `${statusLabel(done.status).toUpperCase()} after ${done.iterations ?? 0} iteration(s) in ${formatDuration(done.duration)} (${formatUsage(done.usage)})${detail}`, tone: done.status === 'TASK_STATUS_SUCCEEDED' ? 'good' : 'bad' };
  }
  return undefined;
}
