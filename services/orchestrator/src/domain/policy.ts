import type { TaskPhases } from '@ratchet/contracts';
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
  /** The optional phases a task runs when its submit leaves them unset. */
  readonly phases: TaskPhases;
  /** The reprompter's clarifying questions. */
  readonly questions: QuestionPolicy;
}

/** Who `answered` a question whose time ran out: its assumption was taken. */
export const assumptionAnswerer = 'assumption';

/** What happens to clarifying questions nobody answers. */
export const UnansweredQuestions = {
  /** Go on with the assumptions the reprompter stated for them. */
  ASSUME: 'assume',
  /** End the task (QUESTION_UNANSWERED). */
  FAIL: 'fail',
} as const;
export type UnansweredQuestions = (typeof UnansweredQuestions)[keyof typeof UnansweredQuestions];

/** How many clarifying questions a task may be asked, and how long they wait. */
export interface QuestionPolicy {
  /** Questions per task, over all rounds; 0 asks none (assumptions are stated instead). */
  readonly max: number;
  /** How long open questions wait for an answer, ms; 0 waits forever. */
  readonly timeoutMs: number;
  /** What an unanswered question becomes when its time is up. */
  readonly onTimeout: UnansweredQuestions;
}

/** Label that turns off generated tests: only the user's acceptance tests run. */
export const userTestsOnlyLabel = 'ratchet.dev/tests';
