/** A quantile's distribution-free interval from the order statistics of n requests. */
import { binomialCdf } from './binomial.js';

/** Each quantile's interval is taken at this level, so that a ratio of two holds at ≥ 95% (Bonferroni). */
export const QUANTILE_LEVEL = 0.975;

/**
 * The ranks (1-based) of the order statistics that bracket the q-quantile of n requests with at least
 * `level` confidence: [x(l), x(u)] with P(l ≤ B < u) ≥ level for B ~ Binomial(n, q). Null where no
 * rank exists (too few requests: the upper bound of a p99.9 needs thousands).
 */
export function quantileRanks(n: number, q: number, level = QUANTILE_LEVEL): [number | null, number | null] {
  const cdf = binomialCdf(n, q, n);
  const tail = (1 - level) / 2;
  let lo: number | null = null;
  let hi: number | null = null;
  // Ranks 1 … n (none of 0 requests); P(B ≤ k − 1) for each.
  for (let k = 1; k <= n; k++) {
    const below = cdf[k - 1] as number;
    if (below <= tail) lo = k;
    if (hi === null && below >= 1 - tail) hi = k;
  }
  return [lo, hi];
}

/** The fewest requests for which the q-quantile has both bounds at QUANTILE_LEVEL. */
export function requestsForInterval(q: number): number {
  let n = 10;
  while (quantileRanks(n, q)[1] === null || quantileRanks(n, q)[0] === null) n = Math.ceil(n * 1.1);
  // Step back to the fewest (0 requests have neither bound, so this stops).
  while (quantileRanks(n - 1, q)[1] !== null && quantileRanks(n - 1, q)[0] !== null) n -= 1;
  return n;
}
