import { msOf } from '@ratchet/agent';
import type { Budget, Usage } from '@ratchet/contracts';

/** Budget values with defaults applied; 0 means "no limit" for tokens, cost and time. */
export interface EffectiveBudget {
  readonly maxIterations: number;
  readonly maxTokens: number;
  readonly maxCostUsd: number;
  readonly maxWallTimeMs: number;
}

/** The task's budget with unset values taken from `defaults`. */
export function effectiveBudget(budget: Budget | undefined, defaults: EffectiveBudget): EffectiveBudget {
  const wallMs = msOf(budget?.maxWallTime);
  return {
    maxIterations: budget !== undefined && budget.maxIterations > 0 ? budget.maxIterations : defaults.maxIterations,
    maxTokens: budget !== undefined && budget.maxTokens > 0 ? budget.maxTokens : defaults.maxTokens,
    maxCostUsd: budget !== undefined && budget.maxCostUsd > 0 ? budget.maxCostUsd : defaults.maxCostUsd,
    maxWallTimeMs: wallMs > 0 ? wallMs : defaults.maxWallTimeMs,
  };
}

/** Tokens a call may still use: the rest of the token budget, or undefined without one. */
export function remainingTokens(budget: EffectiveBudget, usage: Usage): number | undefined {
  if (budget.maxTokens <= 0) return undefined;
  return Math.max(1, budget.maxTokens - usage.promptTokens - usage.completionTokens);
}
