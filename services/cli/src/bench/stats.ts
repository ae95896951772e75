// Confidence intervals for --compare-memory: the mean of paired differences
// (the same task and repeat, warm pass minus off pass) with a 95% interval
// from a paired bootstrap.
//
// Why a bootstrap and not a t interval: the differences are small integers
// (iterations) or heavy-tailed (tokens, seconds), mostly 0 with a few large
// values, so the normal shape a t interval assumes for their mean is a poor
// fit on suites of tens of tasks; the bootstrap takes the shape from the data.
// Resampling pairs, not the two passes apart, keeps each task's own
// difficulty out of the spread. The seed is fixed so the same results give
// the same report. Its weakness is the other way round: with very few pairs
// (under 10) a percentile bootstrap is too narrow, so the report says so.

/** Resamples of the bootstrap: enough for stable 2.5% and 97.5% percentiles. */
export const bootstrapResamples = 10_000;
/** Fixed, so a report can be reproduced from its results file. */
export const bootstrapSeed = 0x5eed;
/** Below this many pairs the report warns that the interval is optimistic. */
export const fewPairs = 10;

export interface MeanInterval {
  /** Number of pairs. */
  readonly n: number;
  /** Mean of the differences. */
  readonly mean: number;
  /** 2.5th percentile of the bootstrap means. */
  readonly low: number;
  /** 97.5th percentile of the bootstrap means. */
  readonly high: number;
}

/**
 * The mean of `differences` with a 95% percentile-bootstrap interval:
 * `resamples` resamples of n differences drawn with replacement, a seeded
 * generator (mulberry32) so equal input gives an equal interval.
 *
 * @returns undefined for no differences; with one, or all equal, the interval is that value.
 */
export function pairedBootstrap(differences: readonly number[], resamples = bootstrapResamples, seed = bootstrapSeed): MeanInterval | undefined {
  const n = differences.length;
  if (n === 0) return undefined;
  const mean = differences.reduce((sum, value) => sum + value, 0) / n;
  if (differences.every((value) => value === differences[0])) return { n, mean, low: mean, high: mean };
  const random = mulberry32(seed);
  const means = new Float64Array(resamples);
  for (let sample = 0; sample < resamples; sample += 1) {
    let sum = 0;
    for (let draw = 0; draw < n; draw += 1) sum += differences[Math.floor(random() * n)] ?? 0;
    means[sample] = sum / n;
  }
  means.sort();
  const at = (quantile: number) => means[Math.min(resamples - 1, Math.max(0, Math.round(quantile * (resamples - 1))))] ?? mean;
  return { n, mean, low: at(0.025), high: at(0.975) };
}

/** A small, fast, seeded generator of numbers in [0, 1); good enough for resampling. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}
