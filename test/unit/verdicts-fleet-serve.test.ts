/**
 * A fleet server's verdict (serve/fleet/verdicts.ts) and the Wilson interval under it (stats/attainment.ts):
 * pinned at the published interval's values and at the counts where the verdict turns.
 */
import { describe, expect, it } from 'vitest';
import { ATTAINMENT_TARGET, verdictOf } from '../../harness/serve/fleet/verdicts.js';
import { wilsonInterval } from '../../harness/stats/attainment.js';

describe('wilsonInterval', () => {
  it('matches the Wilson score interval (z = 1.96) at published values', () => {
    // 81 of 263: 0.2553 to 0.3662 (Wilson 1927's form, as in Newcombe 1998, table I).
    const w = wilsonInterval(81, 263);
    expect(w?.share).toBeCloseTo(81 / 263, 12);
    expect(w?.interval[0]).toBeCloseTo(0.2553, 4);
    expect(w?.interval[1]).toBeCloseTo(0.3662, 4);
    // 0 of 10 and 10 of 10: one bound at the edge, the other 0.2775 from it.
    expect(wilsonInterval(0, 10)?.interval[0]).toBe(0);
    expect(wilsonInterval(0, 10)?.interval[1]).toBeCloseTo(0.2775, 4);
    expect(wilsonInterval(10, 10)?.interval[1]).toBeCloseTo(1, 12);
    expect(wilsonInterval(10, 10)?.interval[0]).toBeCloseTo(0.7225, 4);
  });
  it('has none for no requests', () => {
    expect(wilsonInterval(0, 0)).toBeNull();
  });
});

describe('verdictOf: within, missed or unclear against 99%', () => {
  it('the target is 99%', () => {
    expect(ATTAINMENT_TARGET).toBe(0.99);
  });
  it('all good: within from the count whose lower bound reaches 99% (380), unclear one below', () => {
    // Lower bound of n of n is n / (n + z²): at least 0.99 from n = 99 z² ≈ 380.3.
    expect(verdictOf(381, 381).verdict).toBe('within');
    expect(verdictOf(380, 380).verdict).toBe('unclear');
  });
  it('missed once the upper bound falls below 99%, unclear while it does not', () => {
    const upper = (k: number, n: number) => wilsonInterval(k, n)?.interval[1] ?? Number.NaN;
    // At 1000 requests: 980 good has an upper bound 0.9876 (< 0.99, missed); 985 good 0.9910 (unclear).
    expect(upper(980, 1000)).toBeLessThan(0.99);
    expect(verdictOf(980, 1000).verdict).toBe('missed');
    expect(upper(985, 1000)).toBeGreaterThanOrEqual(0.99);
    expect(verdictOf(985, 1000).verdict).toBe('unclear');
  });
  it('no requests: unclear, no attainment', () => {
    expect(verdictOf(0, 0)).toEqual({ attainment: null, interval: null, verdict: 'unclear' });
  });
});
