/**
 * "p99 within a target" over a count of requests: a one-sided binomial test (as MLPerf's early
 * stopping), used by capacity's steps, mix's protection search and a server run's SLO.
 */
import { binomialCdf } from './binomial.js';

/** The confidence at which a p99 claim holds. */
export const P99_CONFIDENCE = 0.95;

/**
 * Whether "p99 ≤ target" holds at 95% confidence: if the true share of requests over the target were
 * 1%, seeing this few (`over` of `n`) would have a probability of at most 5%. With none over, that
 * takes 299 requests; with 1 over, 473.
 */
export function p99Holds(n: number, over: number): boolean {
  // Stryker disable next-line EqualityOperator: no tail equals 1 − 0.95 to the bit (checked where it crosses, over ≤ 1000)
  return (binomialCdf(n, 0.01, over)[over] as number) <= 1 - P99_CONFIDENCE;
}

/** The fewest requests for which a p99 claim can hold with `over` requests over the target. */
export function requestsNeeded(over: number): number {
  // The binomial tail falls as n grows: bisect between a count that fails and one that holds. At
  // 1000 × (over + 1) requests, μ = 10 × (over + 1) are expected over, and by Chernoff's bound
  // P(B ≤ over) ≤ P(B ≤ 0.1μ) ≤ e^(−0.9² μ/2) < 2%: it always holds.
  // Stryker disable next-line ArithmeticOperator: any count that fails starts the bisection (over − 1 fails too)
  let lo = over + 1;
  let hi = 1000 * (over + 1);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (p99Holds(mid, over)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
