/**
 * The statistics of `fleet history`: the Student-t tail for fractional degrees of freedom, Welch's test
 * (harness/stats/welch.ts), E-divisive's split statistic (e-divisive.ts) and the split-and-merge search
 * for change points (change-points.ts), on synthetic series with known steps. Reference values are
 * scipy 1.17's (`scipy.stats.t.sf`, `scipy.special.betainc`, `scipy.stats.ttest_ind(equal_var=False)`).
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../harness/core/random.js';
import { studentTTwoSidedCdf } from '../../harness/stats/between-runs.js';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP } from '../../harness/stats/bootstrap.js';
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

  it.each([
    [0.5, 0.5],
    [3, 0.5],
    [0.5, 50],
    [500, 0.5],
    [2, 7],
  ])('is exactly 0 at x = 0 and 1 at x = 1 (a = %d, b = %d)', (a, b) => {
    expect([regularizedIncompleteBeta(0, a, b), regularizedIncompleteBeta(1, a, b)]).toEqual([0, 1]);
  });

  it('far below the mean, where only the direct fraction converges in time, to 1e-12 relative (mpmath)', () => {
    const expected = 0.0002056160777666363; // I_0.01(3, 10)
    expect(Math.abs(regularizedIncompleteBeta(0.01, 3, 10) - expected) / expected).toBeLessThan(1e-12);
  });

  it('refuses arguments outside its domain, naming them', () => {
    expect(() => regularizedIncompleteBeta(1.01, 1, 1)).toThrow('I_x(a, b) needs x in [0, 1], got 1.01');
    expect(() => regularizedIncompleteBeta(-0.01, 1, 1)).toThrow('I_x(a, b) needs x in [0, 1], got -0.01');
    expect(() => regularizedIncompleteBeta(0.5, 0, 1)).toThrow('the beta function needs a, b > 0, got 0, 1');
    expect(() => regularizedIncompleteBeta(0.5, 1, 0)).toThrow('the beta function needs a, b > 0, got 1, 0');
    expect(() => regularizedIncompleteBeta(0.5, 1, -1)).toThrow(RangeError);
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
    // Where the switch between the two fractions matters at many degrees of freedom (mpmath, 30 digits).
    [2.6, 100_000, 0.009323746339315141],
  ])('t = %s, df = %s: p = %s', (t, df, p) => {
    expect(studentTTwoSidedP(t, df)).toBeCloseTo(p, 10);
    expect(Math.abs(studentTTwoSidedP(t, df) - p) / p).toBeLessThan(1e-9);
  });

  it('agrees with the exact series for integer degrees of freedom', () => {
    for (const df of [1, 2, 3, 4, 7, 10, 31])
      for (const t of [0.3, 1, 2.5, 6])
        expect(studentTTwoSidedP(t, df)).toBeCloseTo(1 - studentTTwoSidedCdf(t, df), 12);
  });

  it('is 0 at an infinite t and refuses a NaN t or df ≤ 0, naming it', () => {
    expect(studentTTwoSidedP(Infinity, 3)).toBe(0);
    expect(studentTTwoSidedP(-Infinity, 3)).toBe(0);
    expect(() => studentTTwoSidedP(Number.NaN, 3)).toThrow('the t statistic is NaN');
    expect(() => studentTTwoSidedP(1, 0)).toThrow('degrees of freedom must be positive, got 0');
    expect(() => studentTTwoSidedP(1, -1)).toThrow('degrees of freedom must be positive, got -1');
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
    // Their degrees of freedom: n_a + n_b − 2, as the pooled test's.
    expect(welchTest([1, 1, 1], [2, 2, 2, 2, 2]).df).toBe(6);
  });

  it('takes samples of 2 values (scipy: t −2.2361, df 1.4706, p 0.19873)', () => {
    const w = welchTest([3, 5], [1, 2]);
    expect(w.t).toBeCloseTo(-2.23606797749979, 10);
    expect(w.df).toBeCloseTo(1.4705882352941178, 10);
    expect(w.p).toBeCloseTo(0.19872738893452602, 10);
  });

  it('refuses a sample of fewer than 2 values, saying how many it got', () => {
    expect(() => welchTest([1], [1, 2])).toThrow("Welch's test needs 2 values a sample, got 1 and 2");
    expect(() => welchTest([1, 2], [1])).toThrow("Welch's test needs 2 values a sample, got 2 and 1");
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
  // Built in each test, not once for the file: a mutant of the table's loops must reach every test.
  const sumsOf = () => new DistanceSums(z);

  it('sums |z_i − z_j| over every block of indices, to the end of the series', () => {
    const sums = sumsOf();
    for (let a0 = 0; a0 <= z.length; a0++)
      for (let a1 = a0; a1 <= z.length; a1++)
        for (const [b0, b1] of [
          [0, z.length],
          [a0, z.length],
          [0, a1],
        ] as const) {
          let expected = 0;
          for (let i = a0; i < a1; i++)
            for (let j = b0; j < b1; j++) expected += Math.abs((z[i] as number) - (z[j] as number));
          expect(sums.block(a0, a1, b0, b1)).toBeCloseTo(expected, 12);
        }
  });

  it.each([
    [0, 4, 8],
    [0, 2, 10],
    [1, 5, 9],
    [4, 6, 10],
  ])('Q̂ of z[%i, %i) against z[%i, …) is the definition’s', (s, tau, kappa) => {
    expect(qHat(sumsOf(), s, tau, kappa)).toBeCloseTo(qHatByDefinition(z.slice(s, tau), z.slice(tau, kappa)), 12);
  });

  it('refuses a side of fewer than 2 values, saying how many each has', () => {
    expect(() => qHat(sumsOf(), 0, 1, 5)).toThrow('each side of a split needs 2 values, got 1 and 4');
    expect(() => qHat(sumsOf(), 0, 4, 5)).toThrow('each side of a split needs 2 values, got 4 and 1');
  });

  it('splits at the start of the block that differs, stopping κ before the series returns', () => {
    expect(bestSplit(sumsOf(), 0, z.length, 3)).toMatchObject({ tau: 4, kappa: 8 });
  });

  it('takes the first (τ, κ) of equal statistics: a flat series splits at start + minSize', () => {
    expect(bestSplit(new DistanceSums([1, 1, 1, 1, 1, 1, 1, 1]), 0, 8, 2)).toEqual({ tau: 2, kappa: 4, q: 0 });
  });

  it('keeps at least minSize values either side, and has no split below 2 × minSize', () => {
    const step = [0, 0, 0, 0, 0, 0, 0, 0, 5, 5];
    const s = new DistanceSums(step);
    expect(bestSplit(s, 0, 10, 3)?.tau).toBe(7);
    expect(bestSplit(s, 0, 10, 2)?.tau).toBe(8);
    expect(bestSplit(s, 0, 6, 3)).toMatchObject({ tau: 3, kappa: 6 });
    expect(bestSplit(s, 0, 5, 3)).toBeNull();
    expect(() => bestSplit(s, 0, 10, 1)).toThrow('the least segment is 2 values, got 1');
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

  it('proposes a split whose p is below the first-pass level, not one whose p equals it', () => {
    // Six runs of noise: the split at 3 has p 0.9175; at level p ÷ 2 the first pass is 2 × level = p exactly.
    const values = [1, 1.1, 0.95, 1.05, 0.9, 1.08];
    const logs = values.map(Math.log);
    const p = welchTest(logs.slice(0, 3), logs.slice(3)).p;
    const at = (level: number) => findChangePoints(values, { level, minLogMagnitude: 0, seed: 1 });
    expect(at(p / 2)).toEqual({ changes: [], removed: [] });
    // Just above, the split proposes it and the merge (at the level itself) removes it.
    expect(at(p / 2 + 1e-9)).toEqual({ changes: [], removed: [{ index: 3, ratio: 1.05, p, failed: 'p' }] });
  });

  it('splits next where the statistic is largest, not in the last segment', () => {
    // A large step at 12 is found first; then the clean 10% step at 6 beats the noise after 12.
    const values = [
      1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.1, 1.11, 1.09, 1.105, 1.095, 1.1, 2.0, 2.2, 1.9, 2.1, 1.8, 2.15,
    ];
    expect(search(values, 0).changes.map((c) => [c.index, c.before, c.after])).toEqual([
      [6, 6, 6],
      [12, 6, 6],
    ]);
  });

  // A step of ×1.3 at 6 with a noisy side before it, then a clean step of ×1.03 at 12, and the same series reversed.
  const noisy = [1.0, 1.12, 0.9, 1.08, 0.94, 1.03];
  const clean = (level: number) => [1, 1.002, 0.998, 1.001, 0.999, 1].map((v) => v * level);
  const twoSteps = [...noisy, ...clean(1.3), ...clean(1.34)];

  it.each([
    ['forward', 6, twoSteps],
    ['reversed', 12, [...twoSteps].reverse()],
  ] as const)(
    '%s: of two changes failing p, the one of larger p (the noisy ×1.3, at %i) is removed first',
    (_, index, values) => {
      const { removed } = findChangePoints(values, { level: 1e-4, minLogMagnitude: 0, seed: 1 });
      expect(removed[0]).toMatchObject({ index, failed: 'p' });
      expect(Math.abs(Math.log(removed[0]?.ratio as number))).toBeGreaterThan(Math.log(1.2));
    },
  );

  it.each([
    ['forward', 12, 6, twoSteps],
    ['reversed', 6, 12, [...twoSteps].reverse()],
  ] as const)(
    '%s: of two changes passing p, the smaller (at %i) is removed for its size, however small its p',
    (_, small, kept, values) => {
      const { changes, removed } = findChangePoints(values, { level: 0.001, minLogMagnitude: 0.05, seed: 1 });
      expect(removed).toEqual([
        { index: small, ratio: expect.any(Number), p: expect.any(Number), failed: 'magnitude' },
      ]);
      expect(Math.abs(Math.log(removed[0]?.ratio as number))).toBeCloseTo(Math.log(1.34 / 1.3), 12);
      expect(changes.map((c) => c.index)).toEqual([kept]);
    },
  );

  // A step of ×2 and back: both changes have the same p and the same size (log 2), so ties decide.
  const doubled = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02];
  const upAndBack = [...doubled, ...doubled.map((v) => 2 * v), ...doubled];

  it.each([
    ['p', { level: 2e-9, minLogMagnitude: 0 }],
    ['magnitude', { level: 0.01, minLogMagnitude: 0.7 }],
  ] as const)('of two changes failing %s equally, the first is removed first', (failed, options) => {
    const { removed } = findChangePoints(upAndBack, { ...options, seed: 1 });
    expect(removed.map((r) => r.index)).toEqual([6, 12]);
    expect(removed[0]).toMatchObject({ ratio: 2, failed });
  });

  it("seeds each change's interval by the seed plus its index", () => {
    const values = series(12, 12, 0.01, 6, 1.05);
    const [change] = findChangePoints(values, { level: DEFAULT_CHANGE_LEVEL, minLogMagnitude: 0, seed: 40 }).changes;
    const ci = (seed: number) =>
      bootstrapRatioOfMediansCI(values.slice(6), values.slice(0, 6), { ...DEFAULT_BOOTSTRAP, seed });
    expect(change?.index).toBe(6);
    expect(change?.ci).toEqual(ci(46));
    expect(change?.ci).not.toEqual(ci(34));
  });

  it('has nothing to test in fewer than 2 × 3 runs', () => {
    expect(search([1, 1, 1, 2, 2], 0)).toEqual({ changes: [], removed: [] });
  });

  it('gives the same interval for the same series and seed, and refuses values that are not ratios', () => {
    const values = series(12, 12, 0.01, 6, 1.05);
    expect(search(values, 0.03)).toEqual(search(values, 0.03));
    expect(() => search([1, 2, 0, 1, 2, 1], 0)).toThrow('change points are found on positive values (ratios)');
    expect(() => search([1, 2, -1, 1, 2, 1], 0)).toThrow('change points are found on positive values (ratios)');
    const options = { level: 0.01, minLogMagnitude: 0, seed: 1 };
    expect(() => findChangePoints([1, 2, 3, 4, 5, 6], { ...options, level: 1 })).toThrow(
      'the level must lie in (0, 1), got 1',
    );
    expect(() => findChangePoints([1, 2, 3, 4, 5, 6], { ...options, level: 0 })).toThrow(
      'the level must lie in (0, 1), got 0',
    );
    expect(() => findChangePoints([1, 2, 3, 4, 5, 6], { ...options, minSize: 1 })).toThrow(
      "a segment needs 2 values for Welch's test, got 1",
    );
    // Two a side is enough for Welch's test.
    expect(findChangePoints([1, 1.01, 2, 2.01], { ...options, minSize: 2 }).changes.map((c) => c.index)).toEqual([2]);
  });
});
