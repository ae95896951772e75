import { LessonStatus } from '@ratchet/contracts';

/** How outcomes and age turn into a lesson's standing; config `memory.standing`. */
export interface StandingPolicy {
  /** Uses (by tasks other than its origin) before a lesson can be judged unhelpful. Default 2. */
  readonly minUsesToJudge: number;
  /** Helpfulness below this, once judged, demotes a lesson. Default 0.35. */
  readonly demoteBelow: number;
  /** A lesson whose weight (helpfulness and age) falls below this is no longer offered. Default 0.25. */
  readonly retireBelow: number;
  /** Days after which an unused lesson's weight halves. Default 90. */
  readonly halfLifeDays: number;
}

export const defaultStandingPolicy: StandingPolicy = Object.freeze({ minUsesToJudge: 2, demoteBelow: 0.35, retireBelow: 0.25, halfLifeDays: 90 });

/** The outcomes of tasks that applied a lesson, and of comparable tasks that did not. */
export interface LessonOutcomes {
  /** Tasks other than the lesson's origin whose planner or reflector said they applied it. */
  readonly applied: number;
  readonly appliedSucceeded: number;
  readonly appliedMeanIterations: number;
  /** Same language and scope, recorded since the lesson was created, without it. */
  readonly comparable: number;
  readonly comparableSucceeded: number;
  readonly comparableMeanIterations: number;
}

export interface Standing {
  readonly status: LessonStatus;
  /** How much applying it helps, 0..1; 0.5 is no measurable effect. */
  readonly helpfulness: number;
  /** Why, one line each. */
  readonly reasons: readonly string[];
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));
const percent = (part: number, whole: number) => (whole === 0 ? 'n/a' : `${Math.round((100 * part) / whole)}%`);
const mean = (value: number) => value.toFixed(1);

/**
 * Judges a lesson by the tasks that applied it against comparable tasks that
 * did not: the difference in success rate and in iterations (relative to the
 * comparable mean). With no comparable task yet, the baseline is the same
 * success rate and a first-attempt pass, so a lesson whose users still needed
 * more iterations counts against it. A lesson is a candidate until a later
 * task that applied it succeeds; judged only after `minUsesToJudge` uses.
 */
export function standingOf(outcomes: LessonOutcomes, policy: StandingPolicy = defaultStandingPolicy): Standing {
  if (outcomes.applied === 0) return { status: LessonStatus.LESSON_STATUS_CANDIDATE, helpfulness: 0.5, reasons: ['candidate: no later task has applied it yet'] };
  const appliedRate = outcomes.appliedSucceeded / outcomes.applied;
  const baseline = outcomes.comparable > 0;
  const baseRate = baseline ? outcomes.comparableSucceeded / outcomes.comparable : appliedRate;
  const baseIterations = baseline ? Math.max(outcomes.comparableMeanIterations, 1) : 1;
  const successDelta = appliedRate - baseRate;
  const iterationDelta = clamp((baseIterations - outcomes.appliedMeanIterations) / baseIterations, -1, 1);
  const helpfulness = clamp(0.5 + 0.35 * successDelta + 0.35 * iterationDelta, 0, 1);
  const reasons = [
    `applied by ${outcomes.applied} later task(s): ${percent(outcomes.appliedSucceeded, outcomes.applied)} succeeded, ${mean(outcomes.appliedMeanIterations)} iterations on average`,
    baseline
      ? `comparable tasks without it: ${outcomes.comparable}, ${percent(outcomes.comparableSucceeded, outcomes.comparable)} succeeded, ${mean(outcomes.comparableMeanIterations)} iterations on average`
      : 'no comparable task without it yet: measured against a first-attempt pass',
    `helpfulness ${helpfulness.toFixed(2)} (0.5 = no effect)`,
  ];
  if (outcomes.applied >= policy.minUsesToJudge && helpfulness < policy.demoteBelow) return { status: LessonStatus.LESSON_STATUS_DEMOTED, helpfulness, reasons: [`demoted: using it did not help`, ...reasons] };
  if (outcomes.appliedSucceeded > 0) return { status: LessonStatus.LESSON_STATUS_PROMOTED, helpfulness, reasons: ['promoted: a later task applied it and succeeded', ...reasons] };
  return { status: LessonStatus.LESSON_STATUS_CANDIDATE, helpfulness, reasons: ['candidate: no task that applied it has succeeded yet', ...reasons] };
}

/**
 * The multiplier on a lesson's relevance: its standing (a candidate 0.75, a
 * promoted lesson 0.5 to 1 by helpfulness, a demoted one its helpfulness),
 * halved every `halfLifeDays` since it last helped (or was created).
 */
export function weightOf(status: LessonStatus, helpfulness: number, lastActiveAt: Date, now: Date, policy: StandingPolicy = defaultStandingPolicy): number {
  const base = status === LessonStatus.LESSON_STATUS_PROMOTED ? 0.5 + helpfulness / 2 : status === LessonStatus.LESSON_STATUS_DEMOTED ? helpfulness : 0.75;
  const ageDays = Math.max(0, (now.getTime() - lastActiveAt.getTime()) / 86_400_000);
  return base * 0.5 ** (ageDays / policy.halfLifeDays);
}

/** Whether a lesson of this weight is still offered. */
export const isRetired = (weight: number, policy: StandingPolicy = defaultStandingPolicy) => weight < policy.retireBelow;
