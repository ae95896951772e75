import type { EffectiveBudget } from './budget';

/** What the loop may do for every task: the settings `decide`, `nextAction` and the stop conditions read. */
export interface LoopPolicy {
  /** Limits for a task that sets none of its own. */
  readonly defaultBudget: EffectiveBudget;
  /** Re-plans allowed before no progress ends the task. */
  readonly maxReplans: number;
  /**
   * No-progress detection: the same failure (error signature and failing
   * tests) this many times in a row asks for a re-plan (`replanAfter`) or
   * ends the task (`stopAfter`).
   */
  readonly noProgress: { readonly replanAfter: number; readonly stopAfter: number };
  /** Optional phases; each needs its phase runner, and is off until it has one. */
  readonly phases: { readonly reprompt: boolean; readonly review: boolean; readonly audit: boolean };
}

/** Label that turns off generated tests: only the user's acceptance tests run. */
export const userTestsOnlyLabel = 'ratchet.dev/tests';
