/**
 * The statistics of `fleet history`: the Student-t tail for fractional degrees of freedom, Welch's test
 * (harness/stats/welch.ts), E-divisive's split statistic (e-divisive.ts) and the split-and-merge search
 * for change points (change-points.ts), on synthetic series with known steps. Reference values are
 * scipy 1.17's (`scipy.stats.t.sf`, `scipy.special.betainc`, `scipy.stats.ttest_ind(equal_var=False)`).
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../harness/core/random.js';
import { studentTTwoSidedCdf } from '../../harness/stats/between-runs.js';
import {
  DEFAULT_CHANGE_LEVEL,
  findChangePoints,
  firstPassLevel,
  MIN_SEGMENT_RUNS,
} from '../../harness/stats/change-points.js';
import { bestSplit, DistanceSums, qHat } from '../../harness/stats/e-divisive.js';
import { regularizedIncompleteBeta, studentTTwoSidedP, welchTest } from '../../harness/stats/welch.js';

describe('the regularized incomplete beta function', () => {
  it.each([
    [0.3, 0.5, 0.5, 0.36901011956554536],
    [0.7, 2.25, 0.5, 0.22971253750000162],
    [0.99, 5, 0.5, 0.7571581091015623],
    [0.42, 1, 1, 0.42],
    [0.8, 10, 3, 0.5583457484800002],
    [0, 3, 0.5, 0],
    [1, 3, 0.5, 1],
  ])('I_%s(%s, %s) = %s', (x, a, b, expected) => {
    expect(regularizedIncompleteBeta(x, a, b)).toBeCloseTo(expected, 12);
  });

  it('refuses arguments outside its domain', () => {
    expect(() => regularizedIncompleteBeta(1.01, 1, 1)).toThrow(RangeError);
    expect(() => regularizedIncompleteBeta(-0.01, 1, 1)).toThrow(RangeError);
    expect(() => regularizedIncompleteBeta(0.5, 0, 1)).toThrow(RangeError);
  });
});

describe("Student's t two-sided p for any degrees of freedom", () => {
  it.each([
    [2.0, 4.5, 0.10825790718112499],
    [7.3, 3.46, 0.003223002711636943],
    [1.0, 1.0, 0.5000000000000001],
    [0.5, 2.7, 0.6549470619957614],
    [3.0, 10.25, 0.012999554617264344],
    [10.0, 2.2, 0.007104463710258442],
    [0.0, 5.5, 1],
    [4.0, 30.7, 0.0003701041155961929],
    [-4.0, 30.7, 0.0003701041155961929],
    // Far above the beta's mean, where only the symmetric fraction converges in time.
    [0.05, 200, 0.9601722868732665],
    [0.01, 1000, 0.9920232819321873],
  ])('t = %s, df = %s: p = %s', (t, df, p) => {
    expect(studentTTwoSidedP(t, df)).toBeCloseTo(p, 10);
    expect(Math.abs(studentTTwoSidedP(t, df) - p) / p).toBeLessThan(1e-9);
  });

  it('agrees with the exact series for integer degrees of freedom', () => {
    for (const df of [1, 2, 3, 4, 7, 10, 31])
      for (const t of [0.3, 1, 2.5, 6])
        expect(studentTTwoSidedP(t, df)).toBeCloseTo(1 - studentTTwoSidedCdf(t, df), 12);
  });

  it('is 0 at an infinite t and refuses a NaN t or df ≤ 0', () => {
    expect(studentTTwoSidedP(Infinity, 3)).toBe(0);
    expect(() => studentTTwoSidedP(Number.NaN, 3)).toThrow(RangeError);
    expect(() => studentTTwoSidedP(1, 0)).toThrow(RangeError);
  });
});

describe("Welch's test", () => {
  it.each([
    [[1.0, 1.1, 0.9, 1.05], [1.3, 1.25, 1.4], 4.955562903105555, 4.733990147783254, 0.004948606143320093],
    [
      [0.01, -0.02, 0.015, 0.0, 0.005, -0.01],
      [0.06, 0.045, 0.05, 0.058, 0.049, 0.041],
      8.266848077269142,
      7.880974532159981,
      3.761040304992427e-5,
    ],
  ])('%j against %j: t %s, df %s, p %s (scipy; t of b − a)', (a, b, t, df, p) => {
    const w = welchTest(a, b);
    expect(w.t).toBeCloseTo(t, 10);
    expect(w.df).toBeCloseTo(df, 10);
    expect(w.p).toBeCloseTo(p, 12);
    expect(Math.abs(w.p - p) / p).toBeLessThan(1e-9);
  });

  it('two samples without spread: p 0 when their means differ, 1 when equal', () => {
    expect(welchTest([1, 1, 1], [2, 2, 2])).toMatchObject({ t: Infinity, p: 0 });
    expect(welchTest([2, 2, 2], [1, 1, 1])).toMatchObject({ t: -Infinity, p: 0 });
    expect(welchTest([1, 1], [1, 1, 1])).toMatchObject({ t: 0, p: 1 });
  });

  it('refuses a sample of fewer than 2 values', () => {
    expect(() => welchTest([1], [1, 2])).toThrow(RangeError);
  });
});

/** Q̂ written out as Matteson & James define it, term by term. */
function qHatByDefinition(x: number[], y: number[]): number {
  const [n, m] = [x.length, y.length];
  let between = 0;
  for (const a of x) for (const b of y) between += Math.abs(a - b);
  let withinX = 0;
  for (let i = 0; i < n; i++) for (let k = i + 1; k < n; k++) withinX += Math.abs((x[i] as number) - (x[k] as number));
  let withinY = 0;
  for (let j = 0; j < m; j++) for (let k = j + 1; k < m; k++) withinY += Math.abs((y[j] as number) - (y[k] as number));
  const energy = (2 / (n * m)) * between - withinX / ((n * (n - 1)) / 2) - withinY / ((m * (m - 1)) / 2);
  return ((n * m) / (n + m)) * energy;
}

describe("E-divisive's split statistic", () => {
  const z = [0.3, -1.2, 0.8, 0.1, 2.5, 2.2, 3.1, 2.7, -0.4, 0.05];
  const sums = new DistanceSums(z);

  it.each([
    [0, 4, 8],
    [0, 2, 10],
    [1, 5, 9],
    [4, 6, 10],
  ])('Q̂ of z[%i, %i) against z[%i, …) is the definition’s', (s, tau, kappa) => {
    expect(qHat(sums, s, tau, kappa)).toBeCloseTo(qHatByDefinition(z.slice(s, tau), z.slice(tau, kappa)), 12);
  });

  it('refuses a side of fewer than 2 values', () => {
    expect(() => qHat(sums, 0, 1, 5)).toThrow(RangeError);
    expect(() => qHat(sums, 0, 4, 5)).toThrow(RangeError);
  });

  it('splits at the start of the block that differs, stopping κ before the series returns', () => {
    expect(bestSplit(sums, 0, z.length, 3)).toMatchObject({ tau: 4, kappa: 8 });
  });

  it('keeps at least minSize values either side, and has no split below 2 × minSize', () => {
    const step = [0, 0, 0, 0, 0, 0, 0, 0, 5, 5];
    const s = new DistanceSums(step);
    expect(bestSplit(s, 0, 10, 3)?.tau).toBe(7);
    expect(bestSplit(s, 0, 10, 2)?.tau).toBe(8);
    expect(bestSplit(s, 0, 6, 3)).toMatchObject({ tau: 3, kappa: 6 });
    expect(bestSplit(s, 0, 5, 3)).toBeNull();
    expect(() => bestSplit(s, 0, 10, 1)).toThrow(RangeError);
  });
});

/** Runs of a ratio near 2 with log-normal noise of `sd` (seeded), × `step` from index `at` on. */
function series(length: number, seed: number, sd: number, at = length, step = 1): number[] {
  const random = mulberry32(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Array.from({ length }, (_, i) => 2 * Math.exp(sd * normal()) * (i >= at ? step : 1));
}

const search = (values: number[], floor: number, level = DEFAULT_CHANGE_LEVEL) =>
  findChangePoints(values, { level, minLogMagnitude: Math.log1p(floor), seed: 1 });

describe('change points of a series of runs', () => {
  it('states its constants: p below 0.001, 3 runs a side, a first pass at 10 × the level below 0.05', () => {
    expect(DEFAULT_CHANGE_LEVEL).toBe(0.001);
    expect(MIN_SEGMENT_RUNS).toBe(3);
    expect([0.001, 0.01, 0.049, 0.05, 0.1, 0.49, 0.5, 0.9].map(firstPassLevel)).toEqual([
      0.01, 0.1, 0.49, 0.1, 0.2, 0.98, 0.5, 0.9,
    ]);
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8])('finds none in 12 runs without a change (noise 1%%, seed %i)', (seed) => {
    expect(search(series(12, seed, 0.01), 0).changes).toEqual([]);
  });

  it.each([
    [5, 11],
    [6, 12],
    [7, 13],
    [6, 14],
  ])('names run %i (0-based) of 12 after a planted 5%% step under 1%% noise (seed %i)', (at, seed) => {
    const { changes } = search(series(12, seed, 0.01, at, 1.05), 0.03);
    expect(changes.map((c) => c.index)).toEqual([at]);
    const [change] = changes;
    expect(change?.ratio).toBeGreaterThan(1.03);
    expect(change?.ratio).toBeLessThan(1.07);
    expect(change?.ci[0]).toBeLessThanOrEqual(change?.ratio as number);
    expect(change?.ci[1]).toBeGreaterThanOrEqual(change?.ratio as number);
    expect([change?.before, change?.after]).toEqual([at, 12 - at]);
    expect(change?.p).toBeLessThan(DEFAULT_CHANGE_LEVEL);
  });

  it('finds a step down as well as up, and a step that comes back', () => {
    const down = series(12, 21, 0.01, 6, 1 / 1.05);
    expect(search(down, 0.03).changes.map((c) => [c.index, c.ratio < 1])).toEqual([[6, true]]);
    const back = series(18, 22, 0.005).map((v, i) => (i >= 6 && i < 12 ? v * 1.05 : v));
    const found = search(back, 0.03).changes;
    expect(found.map((c) => c.index)).toEqual([6, 12]);
    expect(found.map((c) => [c.before, c.after])).toEqual([
      [6, 6],
      [6, 6],
    ]);
  });

  it('does not report a clear 2% step under a 5% floor: removed for its size', () => {
    const values = series(12, 31, 0.002, 6, 1.02);
    expect(search(values, 0).changes.map((c) => c.index)).toEqual([6]);
    const { changes, removed } = search(values, 0.05);
    expect(changes).toEqual([]);
    expect(removed).toMatchObject([{ index: 6, failed: 'magnitude' }]);
  });

  it('keeps a change whose size is exactly the floor ("at least"), not one a hair under it', () => {
    const values = series(12, 31, 0.002, 6, 1.02);
    const ratio = search(values, 0).changes[0]?.ratio as number;
    const at = (minLogMagnitude: number) =>
      findChangePoints(values, { level: DEFAULT_CHANGE_LEVEL, minLogMagnitude, seed: 1 }).changes.length;
    expect(at(Math.log(ratio))).toBe(1);
    expect(at(Math.log(ratio) * (1 + 1e-9))).toBe(0);
  });

  it('keeps a change whose p is below the level, not one whose p equals it', () => {
    const values = series(12, 41, 0.01, 6, 1.03);
    const p = welchTest(values.slice(0, 6).map(Math.log), values.slice(6).map(Math.log)).p;
    const at = (level: number) => findChangePoints(values, { level, minLogMagnitude: 0, seed: 1 });
    expect(at(p * (1 + 1e-9)).changes.map((c) => [c.index, c.p])).toEqual([[6, p]]);
    const { changes, removed } = at(p);
    expect(changes).toEqual([]);
    expect(removed).toEqual([{ index: 6, ratio: expect.any(Number), p, failed: 'p' }]);
  });

  it('has nothing to test in fewer than 2 × 3 runs', () => {
    expect(search([1, 1, 1, 2, 2], 0)).toEqual({ changes: [], removed: [] });
  });

  it('gives the same interval for the same series and seed, and refuses values that are not ratios', () => {
    const values = series(12, 12, 0.01, 6, 1.05);
    expect(search(values, 0.03)).toEqual(search(values, 0.03));
    expect(() => search([1, 2, 0, 1, 2, 1], 0)).toThrow(RangeError);
    expect(() => findChangePoints([1, 2, 3, 4, 5, 6], { level: 1, minLogMagnitude: 0, seed: 1 })).toThrow(RangeError);
  });
});
