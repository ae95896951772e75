import type { TokenUsage } from './chat-model';

/** Prices in USD per million tokens. */
export interface ModelPrice {
  readonly promptPerMillion: number;
  readonly completionPerMillion: number;
}

/**
 * The cost of `usage` at `price`.
 *
 * @returns US dollars (not rounded).
 */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  return (usage.promptTokens * price.promptPerMillion + usage.completionTokens * price.completionPerMillion) / 1_000_000;
}

/** Adds token counts, e.g. over the rounds of a structured call. */
export function addUsage(left: TokenUsage, right: TokenUsage): TokenUsage {
  return { promptTokens: left.promptTokens + right.promptTokens, completionTokens: left.completionTokens + right.completionTokens };
}
