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

  it('S = 0 without ties: p 1, exact', () => {
    // 2 → 4, 2 → 3, 1 → 3 rise; 2 → 1, 4 → 1, 4 → 3 fall.
    expect(mannKendall([2, 4, 1, 3])).toEqual({ n: 4, s: 0, pValue: 1, method: 'exact' });
  });

  it('3 values with S = 1: P(|S| ≥ 1) is every permutation, p 1', () => {
    // With 3 pairs S is odd, so every order has |S| ≥ 1: P(D ≤ 1) = (1 + 2)/6 inversions 0 and 1, doubled.
    expect(mannKendall([1, 3, 2])).toMatchObject({ s: 1, pValue: 1, method: 'exact' });
  });

  // Normal approximation: var S = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)]/18 over the tie groups t, z = (|S| − 1)/√var
  // (continuity correction 1), p = erfc(z/√2). Expected values from that arithmetic written out in Python
  // (math.erfc, S by brute force over the pairs), not from this module.
  it.each([
    // 60 distinct values (i·7 mod 61): S 216, var 24583.33, z 1.37125.
    ['60 distinct, rising', Array.from({ length: 60 }, (_, i) => (i * 7) % 61), 216, 0.17029562510724128],
    // The same reversed: S negated, the same two-sided p.
    ['60 distinct, reversed', Array.from({ length: 60 }, (_, i) => ((59 - i) * 7) % 61), -216, 0.17029562510724128],
    // i·29 mod 61: a falling one, S −184, z 1.16716.
    ['60 distinct, falling', Array.from({ length: 60 }, (_, i) => (i * 29) % 61), -184, 0.24314542536823708],
    // ⌊(i·7 mod 61)/3⌋: 19 groups of 3 and one of 2; var (60·59·125 − 19·66 − 18)/18 = 24512.67, z 1.30936.
    ['60 with ties', Array.from({ length: 60 }, (_, i) => Math.floor(((i * 7) % 61) / 3)), 206, 0.19041293248146896],
    // 12 values, groups of 2, 2, 2, 3, 2: var (12·11·29 − 4·18 − 66)/18 = 205, z 2.09529.
    ['12 with ties of 2 and 3', [2, 1, 2, 3, 5, 1, 4, 4, 4, 6, 3, 5], 31, 0.03614514204656231],
  ])('%s: S %d, p normal', (_, values, s, p) => {
    const t = mannKendall(values);
    expect(t).toMatchObject({ n: values.length, s, method: 'normal' });
    expect(t.pValue).toBeCloseTo(p, 9);
  });

  it('a tied series with S = 0 has p 1 by the normal approximation', () => {
    // Two pairs rise (1 → 2), two fall (2 → 1), two tie: S = 0.
    expect(mannKendall([1, 2, 2, 1])).toMatchObject({ s: 0, pValue: 1, method: 'normal' });
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
  it('alpha exactly the p-value: no trend', () => {
    expect(trendless(oneSwap, mannKendall(oneSwap).pValue)).toBe(true);
  });
});
