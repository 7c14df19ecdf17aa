/**
 * Mann–Kendall's test for a monotonic trend in a short series (a server's last warm-up windows): S, the
 * sum over every pair i < j of sign(x_j − x_i), against its distribution when the order is random. Rank
 * based, so one slow window (an engine's lazy start, a GC pause) weighs no more than any other, and no
 * shape of trend (linear, decaying) is assumed.
 */
import { normalCdf } from './power.js';

export interface Trend {
  /** Values in the series. */
  n: number;
  /** Mann–Kendall's S: > 0 rising, < 0 falling. */
  s: number;
  /** Two-sided p-value of S under no trend; 1 with fewer than 3 values (no test). */
  pValue: number;
  /** How the p-value was found: exact (no ties, n ≤ EXACT_MAX), or the normal approximation with the ties' variance. */
  method: 'exact' | 'normal' | 'none';
}

/** Up to this many values without ties, S's distribution is counted exactly (permutations by inversions). */
export const EXACT_MAX = 50;

/**
 * P(D ≤ d) for D the inversions of a random permutation of n (S = n(n−1)/2 − 2D), each k = 0 … d: the
 * Mahonian recurrence P_m(k) = (1/m) Σ_{j=0}^{min(k, m−1)} P_{m−1}(k − j), in probabilities (no n!).
 */
function inversionsCdf(n: number, d: number): number {
  let p = [1];
  for (let m = 2; m <= n; m++) {
    // Stryker disable next-line ArithmeticOperator: a longer row only adds zeros (past the support every sum is of zeros or ?? 0)
    const max = (m * (m - 1)) / 2;
    // Stryker disable next-line ArrayDeclaration,ArithmeticOperator: every entry 0 … max is assigned below; an array grows to fit
    const next = new Array<number>(max + 1).fill(0);
    for (let k = 0; k <= max; k++) {
      let sum = 0;
      for (let j = 0; j <= Math.min(k, m - 1); j++) sum += p[k - j] ?? 0;
      next[k] = sum / m;
    }
    p = next;
  }
  let cdf = 0;
  for (let k = 0; k <= d; k++) cdf += p[k] ?? 0;
  return Math.min(1, cdf);
}

/** Mann–Kendall's test of `values` (in time order). */
export function mannKendall(values: readonly number[]): Trend {
  const n = values.length;
  if (n < 3) return { n, s: 0, pValue: 1, method: 'none' };
  let s = 0;
  // Stryker disable next-line EqualityOperator: i = n starts no inner loop (j from n + 1)
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) s += Math.sign((values[j] as number) - (values[i] as number));
  const ties = tieSizes(values);
  if (ties.length === 0 && n <= EXACT_MAX) {
    // Stryker disable next-line ConditionalExpression: S = 0 gives 2·P(D ≤ N/2) ≥ 1 by symmetry, which min(1, …) makes 1: a shortcut
    if (s === 0) return { n, s, pValue: 1, method: 'exact' };
    // P(|S| ≥ |s|) = 2 P(S ≥ |s|) = 2 P(D ≤ (N − |s|)/2), S symmetric about 0.
    const pairs = (n * (n - 1)) / 2;
    return { n, s, pValue: Math.min(1, 2 * inversionsCdf(n, (pairs - Math.abs(s)) / 2)), method: 'exact' };
  }
  const variance = (n * (n - 1) * (2 * n + 5) - ties.reduce((sum, t) => sum + t * (t - 1) * (2 * t + 5), 0)) / 18;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: a guard: S = 0 makes z < 0, p > 1, clamped to 1; variance 0 only where all values tie (S = 0)
  if (variance <= 0 || s === 0) return { n, s, pValue: 1, method: 'normal' };
  // A continuity correction of 1: S moves in steps of 2.
  const z = (Math.abs(s) - 1) / Math.sqrt(variance);
  return { n, s, pValue: Math.min(1, 2 * (1 - normalCdf(z))), method: 'normal' };
}

/** The sizes of the groups of equal values (2 or more). */
function tieSizes(values: readonly number[]): number[] {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.values()].filter((c) => c > 1);
}

/** Whether Mann–Kendall finds no trend in `values` at two-sided level `alpha` (p ≥ alpha: none found). */
export function trendless(values: readonly number[], alpha: number): boolean {
  return mannKendall(values).pValue >= alpha;
}
