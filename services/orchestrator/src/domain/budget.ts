import { StopReason, type Budget, type Usage } from '@ratchet/contracts';

/** What a task has used so far. */
export interface Consumption {
  readonly usage: Usage;
  /** Iterations begun, the current one included. */
  readonly iterations: number;
  /** Wall time since the task started, ms. */
  readonly elapsedMs: number;
}

export interface BudgetVerdict {
  readonly reason: StopReason;
  readonly detail: string;
}

/** Budget values with defaults applied; 0 means "no limit" for tokens, cost and time. */
export interface EffectiveBudget {
  readonly maxIterations: number;
  readonly maxTokens: number;
  readonly maxCostUsd: number;
  readonly maxWallTimeMs: number;
}

/** The task's budget with unset values taken from `defaults`. */
export function effectiveBudget(budget: Budget | undefined, defaults: EffectiveBudget): EffectiveBudget {
  const wallMs = budget?.maxWallTime === undefined ? 0 : budget.maxWallTime.seconds * 1000 + Math.floor(budget.maxWallTime.nanos / 1e6);
  return {
    maxIterations: budget !== undefined && budget.maxIterations > 0 ? budget.maxIterations : defaults.maxIterations,
    maxTokens: budget !== undefined && budget.maxTokens > 0 ? budget.maxTokens : defaults.maxTokens,
    maxCostUsd: budget !== undefined && budget.maxCostUsd > 0 ? budget.maxCostUsd : defaults.maxCostUsd,
    maxWallTimeMs: wallMs > 0 ? wallMs : defaults.maxWallTimeMs,
  };
}

/**
 * Checked before every model call: the first exhausted budget, or undefined
 * while all have room. Iterations are checked when a new one would begin
 * (`startingIteration`), the others always.
 */
export function exhaustedBudget(budget: EffectiveBudget, used: Consumption, startingIteration = false): BudgetVerdict | undefined {
  if (startingIteration && used.iterations >= budget.maxIterations) {
    return { reason: StopReason.STOP_REASON_MAX_ITERATIONS, detail: `reached the maximum of ${budget.maxIterations} iterations without passing tests` };
  }
  const tokens = used.usage.promptTokens + used.usage.completionTokens;
  if (budget.maxTokens > 0 && tokens >= budget.maxTokens) {
    return { reason: StopReason.STOP_REASON_TOKEN_BUDGET, detail: `used ${tokens} of ${budget.maxTokens} tokens` };
  }
  if (budget.maxCostUsd > 0 && used.usage.costUsd >= budget.maxCostUsd) {
    return { reason: StopReason.STOP_REASON_COST_BUDGET, detail: `spent $${used.usage.costUsd.toFixed(4)} of the $${budget.maxCostUsd.toFixed(4)} budget` };
  }
  if (budget.maxWallTimeMs > 0 && used.elapsedMs >= budget.maxWallTimeMs) {
    return { reason: StopReason.STOP_REASON_WALL_TIME, detail: `ran ${Math.round(used.elapsedMs / 1000)} s of the ${Math.round(budget.maxWallTimeMs / 1000)} s wall-time budget` };
  }
  return undefined;
}

/** Tokens a call may still use: the rest of the token budget, or undefined without one. */
export function remainingTokens(budget: EffectiveBudget, usage: Usage): number | undefined {
  if (budget.maxTokens <= 0) return undefined;
  return Math.max(1, budget.maxTokens - usage.promptTokens - usage.completionTokens);
}
