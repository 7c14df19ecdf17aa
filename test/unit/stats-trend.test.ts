/** Mann–Kendall's trend test (stats/trend.ts): S, its exact and normal p-values, and the level's boundary. */
import { describe, expect, it } from 'vitest';
import { EXACT_MAX, mannKendall, trendless } from '../../harness/stats/trend.js';

describe('mannKendall', () => {
  it.each([
    // n, values, S, two-sided p: exact counts of permutations by inversions (n! of them).
    ['5 rising', [1, 2, 3, 4, 5], 10, 2 / 120],
    ['5 falling', [5, 4, 3, 2, 1], -10, 2 / 120],
    ['5 with one swap', [1, 3, 2, 4, 5], 8, (2 * (1 + 4)) / 120],
    ['5 with two inversions', [2, 3, 1, 4, 5], 6, (2 * (1 + 4 + 9)) / 120],
    ['4 rising: the least p of 4', [1, 2, 3, 4], 6, 2 / 24],
    ['3 rising: never below 1/3', [1, 2, 3], 3, 2 / 6],
  ])('%s: S %d, p exact', (_, values, s, p) => {
    const t = mannKendall(values);
    expect(t.s).toBe(s);
    expect(t.method).toBe('exact');
    expect(t.pValue).toBeCloseTo(p, 12);
  });

  it("matches Kendall's table at n = 10, S = 21: one-sided p 0.036", () => {
    // 6 + 6 = 12 inversions: S = 45 − 2 × 12 = 21.
    const t = mannKendall([4, 3, 2, 1, 8, 7, 6, 5, 9, 10]);
    expect(t.s).toBe(21);
    expect(t.pValue / 2).toBeCloseTo(0.036, 3);
  });

  it('a flat or too short series has no trend (p 1); ties take the normal approximation', () => {
    expect(mannKendall([1, 2])).toMatchObject({ s: 0, pValue: 1, method: 'none' });
    expect(mannKendall([3, 3, 3, 3, 3])).toMatchObject({ s: 0, pValue: 1, method: 'normal' });
    const tied = mannKendall([1, 1, 2, 3, 4, 5]);
    expect(tied.method).toBe('normal');
    // S = 14 of 15 pairs; variance (6·5·17 − 2·1·9)/18 = 27.33; z = 13/5.228 = 2.487; p = 0.0129.
    expect(tied.s).toBe(14);
    expect(tied.pValue).toBeCloseTo(0.0129, 3);
  });

  it('takes the normal approximation past EXACT_MAX values', () => {
    const rising = Array.from({ length: EXACT_MAX + 1 }, (_, i) => i);
    expect(mannKendall(rising).method).toBe('normal');
    expect(mannKendall(rising.slice(0, EXACT_MAX)).method).toBe('exact');
    expect(mannKendall(rising).pValue).toBeLessThan(1e-10);
  });
});

describe('trendless: p at the level is no trend', () => {
  const oneSwap = [1, 3, 2, 4, 5]; // p = 10/120
  it.each([
    [10 / 120 - 1e-9, true],
    [10 / 120 + 1e-9, false],
    [0.1, false],
    [0.05, true],
  ])('alpha %f: trendless %s', (alpha, expected) => {
    expect(trendless(oneSwap, alpha)).toBe(expected);
  });
});
