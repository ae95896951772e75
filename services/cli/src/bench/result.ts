import { statusName, stopReasonName } from '@ratchet/agent';
import { Phase, TaskStatus, type Iteration, type Task, type TaskEvent, type Usage } from '@ratchet/contracts';
import type { HiddenOutcome } from './hidden-tests';
import type { PassName } from './passes';

// What one finished (pass, repeat, task) measured, as it is kept in the
// results file, one JSON line each. Pure: built from the task as the
// orchestrator reports it and its events.

/** Version of a results line; a run directory with lines of another version is not mixed with this one. */
export const resultFormat = 1;

/** The roles whose model use is reported apart; `other` holds phases no role owns (re-prompting, review, audit). */
export const Role = { PLANNER: 'planner', CODER: 'coder', TESTER: 'tester', REFLECTOR: 'reflector', OTHER: 'other' } as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface RoleUsage {
  readonly modelCalls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costUsd: number;
}

export interface LessonRef {
  readonly id: string;
  readonly title: string;
}

/** One line of the results file. */
export interface TaskResult {
  readonly format: typeof resultFormat;
  readonly pass: PassName;
  readonly repeat: number;
  /** The suite's task id. */
  readonly task: string;
  /** The Ratchet task that ran it, for `ratchet show`. */
  readonly taskId: string;
  /** SUCCEEDED or FAILED (a cancelled task is run again, never recorded). */
  readonly status: string;
  /** e.g. `tests passed`, `max iterations`, `no progress`. */
  readonly stopReason: string;
  readonly statusReason: string;
  /** Passed within its budget. */
  readonly passed: boolean;
  /** Passed on its first iteration (pass@1). */
  readonly passedFirst: boolean;
  readonly iterations: number;
  /** Every model call of the task. */
  readonly usage: RoleUsage;
  /** PhaseCompleted usage by the role that owns the phase. */
  readonly byRole: Readonly<Record<Role, RoleUsage>>;
  /** From the task's start to its end (queueing left out), ms. */
  readonly wallMs: number;
  /** Lessons retrieved for the task before planning. */
  readonly lessonsRetrieved: readonly LessonRef[];
  /** Retrieved lessons the planner (appliedLessonIds) or the reflector (relevantLessonIds) said it used. */
  readonly lessonsApplied: readonly LessonRef[];
  /** The model names, when known (embedded mode). */
  readonly models: readonly string[];
  /** ISO 8601. */
  readonly finishedAt: string;
  /** What the task's hidden tests said about its result; absent for a task without them. */
  readonly hidden?: HiddenOutcome;
}

const roleOfPhase: ReadonlyMap<Phase, Role> = new Map([
  [Phase.PHASE_PLANNING, Role.PLANNER],
  [Phase.PHASE_CODING, Role.CODER],
  [Phase.PHASE_TESTING, Role.TESTER],
  [Phase.PHASE_REFLECTING, Role.REFLECTOR],
]);

export const noUsage: RoleUsage = Object.freeze({ modelCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 });

/** The sum of two usages. */
export function addUsage(left: RoleUsage, right: RoleUsage): RoleUsage {
  return {
    modelCalls: left.modelCalls + right.modelCalls,
    promptTokens: left.promptTokens + right.promptTokens,
    completionTokens: left.completionTokens + right.completionTokens,
    costUsd: left.costUsd + right.costUsd,
  };
}

function fromProto(usage: Usage | undefined): RoleUsage {
  return usage === undefined ? noUsage : { modelCalls: usage.modelCalls, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, costUsd: usage.costUsd };
}

/** Tokens of a usage, prompt and completion. */
export function tokensOf(usage: RoleUsage): number {
  return usage.promptTokens + usage.completionTokens;
}

export interface ResultInput {
  readonly pass: PassName;
  readonly repeat: number;
  readonly suiteTaskId: string;
  /** The ended task, full view. */
  readonly task: Task;
  readonly iterations: readonly Iteration[];
  /** Its events, at least the PhaseCompleted ones. */
  readonly events: readonly TaskEvent[];
  /** What the client measured from submit to the end, used when the task has no start or end time. */
  readonly clientWallMs: number;
  readonly models: readonly string[];
  readonly finishedAt: Date;
  readonly hidden?: HiddenOutcome;
}

/** The measurements of one ended task. */
export function taskResult(input: ResultInput): TaskResult {
  const { task, iterations } = input;
  const byRole: Record<Role, RoleUsage> = { planner: noUsage, coder: noUsage, tester: noUsage, reflector: noUsage, other: noUsage };
  for (const event of input.events) {
    if (event.payload?.$case !== 'phaseCompleted') continue;
    const completed = event.payload.phaseCompleted;
    const role = roleOfPhase.get(completed.phase) ?? Role.OTHER;
    byRole[role] = addUsage(byRole[role], fromProto(completed.usage));
  }
  const passed = task.status === TaskStatus.TASK_STATUS_SUCCEEDED;
  const known = new Map<string, string>();
  for (const lesson of task.lessons) known.set(lesson.id, lesson.title);
  for (const iteration of iterations) for (const lesson of iteration.reflectionLessons) if (!known.has(lesson.id)) known.set(lesson.id, lesson.title);
  // Only ids of lessons the task was given: a model may name ids it made up.
  const appliedIds = new Set(iterations.flatMap((iteration) => [...(iteration.plan?.appliedLessonIds ?? []), ...(iteration.reflection?.relevantLessonIds ?? [])]).filter((id) => known.has(id)));
  const started = task.startedAt?.getTime();
  const completed = task.completedAt?.getTime();
  return {
    format: resultFormat,
    pass: input.pass,
    repeat: input.repeat,
    task: input.suiteTaskId,
    taskId: task.id,
    status: statusName(task.status),
    stopReason: stopReasonName(task.stopReason),
    statusReason: task.statusReason,
    passed,
    passedFirst: passed && task.currentIteration === 1,
    iterations: task.currentIteration,
    usage: fromProto(task.usage),
    byRole,
    wallMs: started !== undefined && completed !== undefined && completed >= started ? completed - started : input.clientWallMs,
    lessonsRetrieved: task.lessons.map((lesson) => ({ id: lesson.id, title: lesson.title })),
    lessonsApplied: [...appliedIds].map((id) => ({ id, title: known.get(id) ?? '' })),
    models: [...input.models],
    finishedAt: input.finishedAt.toISOString(),
    ...(input.hidden === undefined ? {} : { hidden: input.hidden }),
  };
}

/** `resolved (2/2 fail-to-pass, 5/5 pass-to-pass)`, or `NOT resolved (...): why`. */
export function hiddenText(hidden: HiddenOutcome): string {
  const counts = `${hidden.failToPass.passed}/${hidden.failToPass.total} fail-to-pass, ${hidden.passToPass.passed}/${hidden.passToPass.total} pass-to-pass`;
  return `${hidden.resolved ? 'resolved' : 'NOT resolved'} (${counts})${hidden.error === undefined ? '' : `: ${hidden.error}`}`;
}

/** The key a result is stored and skipped under. */
export function resultKey(result: Pick<TaskResult, 'pass' | 'repeat' | 'task'>): string {
  return JSON.stringify([result.pass, result.repeat, result.task]);
}
