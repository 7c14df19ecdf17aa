/**
 * The count-based claims pinned at their boundaries: the binomial distribution in both of its branches
 * (plain numbers, and logs where (1 − p)^n underflows), "p99 within a target" at 95%, a quantile's
 * order-statistic ranks, and the mean's Student-t interval at its fewest rounds. Reference values are
 * scipy 1.17's (`scipy.stats.binom.cdf`).
 */
import { describe, expect, it } from 'vitest';
import { binomialCdf } from '../../harness/stats/binomial.js';
import { meanInterval } from '../../harness/stats/intervals.js';
import { p99Holds, requestsNeeded } from '../../harness/stats/p99.js';
import { quantileRanks, requestsForInterval } from '../../harness/stats/quantile.js';

describe('the binomial distribution function', () => {
  it('in plain numbers, exact for p = ½: P(B ≤ k) of 6 rounds is (1, 7, 22, 42, 57, 63, 64) ÷ 64', () => {
    expect(binomialCdf(6, 0.5, 6)).toEqual([1, 7, 22, 42, 57, 63, 64].map((c) => c / 64));
    expect(binomialCdf(6, 0.5, 2)).toEqual([1, 7, 22].map((c) => c / 64));
  });

  it('in logs where (1 − p)^n underflows (100,000 requests at 1%): every k up to kMax, as scipy', () => {
    expect(0.99 ** 100_000).toBe(0);
    const cdf = binomialCdf(100_000, 0.01, 1000);
    expect(cdf).toHaveLength(1001);
    for (const [k, expected] of [
      [900, 0.0006608413334501454],
      [1000, 0.508409473351433],
    ] as const)
      expect(Math.abs((cdf[k] as number) - expected) / expected).toBeLessThan(1e-9);
  });
});

describe('p99 within a target at 95%', () => {
  it.each([
    // over, n: the fewest requests for which the claim holds with that many over (scipy agrees).
    [0, 299],
    [1, 473],
    [5, 1049],
    [50, 6323],
    // Past the plain numbers: (0.99)^n underflows above about 70,000 requests.
    [1000, 105_334],
  ])('with %i over the target, it holds from %i requests, not one fewer', (over, n) => {
    expect(requestsNeeded(over)).toBe(n);
    expect([p99Holds(n - 1, over), p99Holds(n, over)]).toEqual([false, true]);
  });

  it('holds at 100,000 requests with 900 over (0.9%), not with 1000 (1%)', () => {
    expect(p99Holds(100_000, 900)).toBe(true);
    expect(p99Holds(100_000, 1000)).toBe(false);
  });
});

describe("a quantile's order-statistic ranks", () => {
  it('the bounds where P(B ≤ k − 1) reaches the tail exactly count (6 requests, q = ½, tails of 1/64)', () => {
    // P(B ≤ 0) = 1/64 and P(B ≤ 5) = 63/64 exactly: at level 1 − 2/64 both ranks hold, a hair above neither.
    expect(quantileRanks(6, 0.5, 1 - 2 / 64)).toEqual([1, 6]);
    expect(quantileRanks(6, 0.5, 1 - 2 / 64 + 1e-9)).toEqual([null, null]);
    expect(quantileRanks(7, 0.5, 1 - 2 / 64)).toEqual([1, 7]);
  });

  it('none of 0 or 1 request', () => {
    expect(quantileRanks(0, 0.5)).toEqual([null, null]);
    expect(quantileRanks(1, 0.5)).toEqual([null, null]);
  });

  it.each([0.01, 0.5, 0.99])('the fewest requests with both bounds of the %d-quantile, not one fewer', (q) => {
    const n = requestsForInterval(q);
    expect(quantileRanks(n, q).includes(null)).toBe(false);
    expect(quantileRanks(n - 1, q).includes(null)).toBe(true);
  });

  it('a low quantile needs as many requests as its mirror: its lower bound is the one that waits', () => {
    expect(requestsForInterval(0.01)).toBe(requestsForInterval(0.99));
    expect(quantileRanks(requestsForInterval(0.01) - 1, 0.01)[0]).toBeNull();
  });
});

describe("the mean's Student-t interval", () => {
  it('from 2 rounds: t(95%, 1 df) = 12.706 × the standard error', () => {
    const m = meanInterval([100, 102]);
    expect(m?.value).toBe(101);
    expect(m?.ci?.[0]).toBeCloseTo(101 - 12.706, 9);
    expect(m?.ci?.[1]).toBeCloseTo(101 + 12.706, 9);
  });

  it('none from 1 round or 0', () => {
    expect(meanInterval([100])).toEqual({ value: 100, ci: null, rounds: 1 });
    expect(meanInterval([])).toBeNull();
  });
});
