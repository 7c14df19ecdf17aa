/**
 * The statistical rules behind every verdict, pinned at their boundaries: the outlier rule (scaled, not
 * raw, MAD), the order-statistic interval's coverage, the bootstrap's level and resamples, the rounds a
 * CI needs, and the gate's between-run band (its level, floors, noise band and edges). Each boundary at,
 * just below and just above its threshold, so that a changed constant or comparison fails here rather
 * than only in a byte-for-byte regeneration of the committed reports.
 */
import { describe, expect, it } from 'vitest';
import {
  BETWEEN_RUN_LEVEL,
  bandOf,
  betweenRun,
  DEFAULT_FLOORS,
  floorFor,
  logToRelative,
  sourceText,
} from '../../harness/bench/gate/bands.js';
import { MIN_ROUNDS_FOR_CHANGE, metricChange } from '../../harness/bench/gate/verdicts.js';
import {
  classifyAgainstBand,
  combineHalfWidths,
  intervalHalfWidthLog,
  MIN_RUNS_TO_LEARN,
  predictionHalfWidthLog,
  relativeToLog,
  runSpread,
  studentTCritical,
} from '../../harness/stats/between-runs.js';
import {
  bootstrapMedianCI,
  bootstrapRatioOfMediansCI,
  DEFAULT_BOOTSTRAP,
  mulberry32,
  seedOf,
} from '../../harness/stats/bootstrap.js';
import {
  CI_LEVEL,
  MAD_TO_SD,
  MIN_ROUNDS_FOR_CI,
  medianInterval,
  metricStats,
  OUTLIER_MADS,
} from '../../harness/stats/statistics.js';

describe('the documented constants', () => {
  it('95% intervals from 10,000 bootstrap resamples; 6 rounds for a CI; 3 MADs scaled by 1.4826', () => {
    expect(CI_LEVEL).toBe(0.95);
    expect(DEFAULT_BOOTSTRAP).toEqual({ resamples: 10_000, level: 0.95 });
    expect(MIN_ROUNDS_FOR_CI).toBe(6);
    expect(OUTLIER_MADS).toBe(3);
    expect(MAD_TO_SD).toBe(1.4826);
  });

  it("the gate's between-run band: a 99.5% prediction interval, learned from 3 runs or more", () => {
    expect(BETWEEN_RUN_LEVEL).toBe(0.995);
    expect(MIN_RUNS_TO_LEARN).toBe(3);
    expect(MIN_ROUNDS_FOR_CHANGE).toBe(3);
  });
});

describe('outliers: further than 3 scaled MADs (3 × 1.4826 × MAD) from the median', () => {
  // Nine values of median 0 and MAD 1 whatever the tenth is (once it is at least 1 away).
  const base = [-1, -1, -1, 0, 0, 0, 1, 1, 1];
  const edge = 3 * 1.4826;
  const outliersWith = (x: number) => metricStats({ id: 'm', perRound: [...base, x] }).outliers;

  it('the fixture has median 0 and MAD 1', () => {
    expect(metricStats({ id: 'm', perRound: [...base, 100] })).toMatchObject({ value: 0, mad: 1 });
  });

  it.each([
    ['at the edge', edge, []],
    ['just inside', edge - 1e-9, []],
    ['just outside', edge + 1e-9, [9]],
    ['below, mirrored: at the edge', -edge, []],
    ['below, mirrored: just outside', -edge - 1e-9, [9]],
    // A raw-MAD rule (3 × MAD) would flag these; the scaled rule does not.
    ['4 raw MADs away', 4, []],
    ['3 raw MADs away, just outside', 3 + 1e-9, []],
  ] as const)('a round %s (%d) → outliers %j', (_, x, expected) => {
    expect(outliersWith(x)).toEqual(expected);
  });

  it.each([
    // The same with MAD 2: the edge scales with the MAD (× MAD, not ÷).
    [2 * edge, []],
    [2 * edge + 1e-9, [9]],
    [edge + 1e-9, []],
  ] as const)('with MAD 2, a round at %d → outliers %j', (x, expected) => {
    const doubled = base.map((v) => 2 * v);
    expect(metricStats({ id: 'm', perRound: [...doubled, x] })).toMatchObject({ mad: 2, outliers: expected });
  });

  it('names outliers by their round, not their position', () => {
    const rounds = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19];
    expect(metricStats({ id: 'm', perRound: [...base, 5], rounds }).outliers).toEqual([19]);
  });

  it('flags none when the MAD is 0, however far a round lies', () => {
    expect(metricStats({ id: 'm', perRound: [1, 1, 1, 1, 1, 1, 50] })).toMatchObject({ mad: 0, outliers: [] });
  });
});

describe('the order-statistic interval of the median', () => {
  const six = [6, 1, 5, 2, 4, 3];
  it('5 rounds: none reaches 95% ([min, max] covers 93.75%); 6 rounds: [min, max] at 96.875%', () => {
    expect(medianInterval([1, 2, 3, 4, 5])).toBeNull();
    expect(medianInterval(six)).toEqual({ ci: [1, 6], confidence: 1 - 2 / 64 });
  });

  it.each([
    // Level at, just below and just above the coverage of [x(1), x(6)] (96.875%).
    [0.96875, { ci: [1, 6], confidence: 0.96875 }],
    [0.96875 - 1e-9, { ci: [1, 6], confidence: 0.96875 }],
    [0.96875 + 1e-9, null],
  ] as const)('6 rounds at level %d → %j', (level, expected) => {
    expect(medianInterval(six, level)).toEqual(expected);
  });

  it.each([
    // 8 rounds: [x(2), x(7)] covers 1 − 2·9/256 = 92.97%, [x(1), x(8)] 99.22%.
    [1 - 18 / 256, [2, 7]],
    [1 - 18 / 256 + 1e-9, [1, 8]],
    [0.95, [1, 8]],
  ] as const)('8 rounds at level %d → %j', (level, ci) => {
    expect(medianInterval([8, 7, 6, 5, 4, 3, 2, 1], level)?.ci).toEqual(ci);
  });

  it.each([
    // The narrowest interval that reaches the level: [x(3), x(4)] of 6 covers 31.25%, [x(3), x(3)] of 5 24.6%.
    [[1, 2, 3, 4, 5, 6], 0.3125, { ci: [3, 4], confidence: 0.3125 }],
    [[1, 2, 3, 4, 5, 6], 0.3125 + 1e-9, { ci: [2, 5], confidence: 1 - 14 / 64 }],
    [[1, 2, 3, 4, 5], 0, { ci: [3, 3], confidence: 1 - 2 * (16 / 32) }],
  ] as const)('%j at level %d → %j', (values, level, expected) => {
    const got = medianInterval(values, level);
    expect(got?.ci).toEqual(expected.ci);
    expect(got?.confidence).toBeCloseTo(expected.confidence, 12);
  });

  it.each([
    [MIN_ROUNDS_FOR_CI - 1, false],
    [MIN_ROUNDS_FOR_CI, true],
    [MIN_ROUNDS_FOR_CI + 1, true],
  ])('metricStats with %i rounds has a CI: %s', (n, has) => {
    const stats = metricStats({ id: 'm', perRound: Array.from({ length: n }, (_, i) => 1 + i / 100) });
    expect(stats.ci !== null).toBe(has);
    expect(stats.method).toBe(has ? 'order-statistic' : null);
    if (has) expect(stats.confidence).toBeGreaterThanOrEqual(0.95);
  });

  it('the point estimate is the median, the half-width relative to it, the CV sample SD ÷ mean', () => {
    const stats = metricStats({ id: 'm', perRound: [1, 2, 3, 4, 5, 6] });
    expect(stats.value).toBe(3.5);
    expect(stats.halfWidth).toBeCloseTo(2.5 / 3.5, 12);
    expect(stats.cv).toBeCloseTo(Math.sqrt(3.5) / 3.5, 12);
    expect(metricStats({ id: 'm', perRound: [2] })).toMatchObject({ value: 2, cv: null, ci: null });
    expect(metricStats({ id: 'm', perRound: [1, 3] }).cv).toBeCloseTo(Math.SQRT2 / 2, 12);
    expect(metricStats({ id: 'm', perRound: [] })).toMatchObject({ n: 0, value: null, outliers: [] });
  });
});

const DEFAULT_OPTIONS = { resamples: 10_000, level: 0.95, seed: 1 };

describe('the bootstrap of a ratio of medians (two unpaired samples)', () => {
  // Many distinct values, so that the resampled ratios take many values and their quantiles move
  // with the level, the resample count and the seed.
  const numerator = Array.from({ length: 41 }, (_, i) => 2 + ((i * 7919) % 41) / 100);
  const denominator = Array.from({ length: 41 }, (_, i) => 1 + ((i * 104_729) % 43) / 97);
  const exact = (n: number, d: number[], level: number, resamples: number, seed: number) =>
    bootstrapRatioOfMediansCI(numerator.slice(0, n), d.slice(0, n), { resamples, level, seed });

  it('is a 95% percentile interval of 10,000 resamples, seeded by the ratio id', () => {
    const stats = metricStats({ id: 'r', perRound: [], parts: { numerator, denominator }, value: 2 });
    const ci = exact(41, denominator, 0.95, 10_000, seedOf('r'));
    expect(stats).toMatchObject({ ci, confidence: 0.95, method: 'bootstrap-ratio-of-medians' });
    // The data tell these apart: another level, resample count or seed gives another interval.
    expect(exact(41, denominator, 0.9, 10_000, seedOf('r'))).not.toEqual(ci);
    expect(exact(41, denominator, 0.99, 10_000, seedOf('r'))).not.toEqual(ci);
    expect(exact(41, denominator, 0.95, 1_000, seedOf('r'))).not.toEqual(ci);
    expect(exact(41, denominator, 0.95, 10_000, seedOf('s'))).not.toEqual(ci);
    expect(stats.halfWidth).toBeCloseTo(((ci[1] as number) - (ci[0] as number)) / 2 / 2, 12);
  });

  it.each([
    [MIN_ROUNDS_FOR_CI - 1, false],
    [MIN_ROUNDS_FOR_CI, true],
  ])('with %i rounds in the smaller sample it has a CI: %s', (n, has) => {
    const stats = metricStats({
      id: 'r',
      perRound: [],
      parts: { numerator, denominator: denominator.slice(0, n) },
      value: 2,
    });
    expect(stats.ci !== null).toBe(has);
    expect(stats.n).toBe(n);
  });

  it('is an interval of median(numerator) ÷ median(denominator), with no outliers or MAD', () => {
    expect(bootstrapRatioOfMediansCI([4, 4, 4, 4, 4, 4], [2, 2, 2, 2, 2, 2], DEFAULT_OPTIONS)).toEqual([2, 2]);
    const [lo, hi] = bootstrapRatioOfMediansCI(numerator, denominator, DEFAULT_OPTIONS);
    const point = 2.2 / (1 + 21 / 97);
    expect(lo).toBeLessThan(point);
    expect(hi).toBeGreaterThan(point);
    expect(hi).toBeLessThan(2);
    const stats = metricStats({ id: 'r', perRound: [1, 2, 30], parts: { numerator, denominator }, value: 2 });
    expect(stats).toMatchObject({ outliers: [], mad: null, cv: null });
  });

  it('has no CI without a value', () => {
    expect(metricStats({ id: 'r', perRound: [], parts: { numerator, denominator }, value: null }).ci).toBeNull();
  });
});

describe('the percentile interval', () => {
  const values = Array.from({ length: 31 }, (_, i) => (i * 7919) % 31);
  const at = (level: number) => bootstrapMedianCI(values, { resamples: 2000, level, seed: 7 });

  it('narrows as the level falls, to one point at level 0', () => {
    const [lo99, hi99] = at(0.99);
    const [lo95, hi95] = at(0.95);
    const [lo50, hi50] = at(0.5);
    expect(lo99).toBeLessThanOrEqual(lo95);
    expect(lo95).toBeLessThan(lo50);
    expect(hi50).toBeLessThan(hi95);
    expect(hi95).toBeLessThanOrEqual(hi99);
    const [lo0, hi0] = at(0);
    expect(lo0).toBe(hi0);
  });

  it('a median of [0, 1] resamples is 0, ½ or 1 (¼, ½, ¼): its 95% interval [0, 1], its 40% one [½, ½]', () => {
    expect(bootstrapMedianCI([0, 1], { resamples: 10_000, level: 0.95, seed: 1 })).toEqual([0, 1]);
    expect(bootstrapMedianCI([0, 1], { resamples: 10_000, level: 0.4, seed: 1 })).toEqual([0.5, 0.5]);
  });

  it('the same values and seed give the same interval; the seed is FNV-1a of the id', () => {
    expect(at(0.95)).toEqual(at(0.95));
    expect(seedOf('')).toBe(0x811c9dc5);
    expect(seedOf('a')).toBe(0xe40c292c);
    // mulberry32's published sequence: every committed report's intervals were drawn from it.
    const zero = mulberry32(0);
    expect([zero(), zero(), zero()]).toEqual([0.26642920868471265, 0.0003297457005828619, 0.2232720274478197]);
    const byId = mulberry32(seedOf('mps/gemm/slowdown'));
    expect(seedOf('mps/gemm/slowdown')).toBe(1597201144);
    expect([byId(), byId()]).toEqual([0.027028247946873307, 0.5457560890354216]);
    const a = mulberry32(42);
    const b = mulberry32(42);
    const draws = Array.from({ length: 1000 }, () => a());
    expect(draws).toEqual(Array.from({ length: 1000 }, () => b()));
    for (const x of draws) expect(x >= 0 && x < 1).toBe(true);
    expect(new Set(draws).size).toBeGreaterThan(990);
  });
});

describe("the gate's change CI for runs of 3–5 rounds: the same 95% bootstrap, seeded by change:<id>", () => {
  const now = { id: 'mps/gemm/slowdown', better: 'lower' as const, value: 1.5, ci: null };
  const perRound = [1.4, 1.5, 1.6, 1.45, 1.55];
  const before = [1.0, 1.1, 0.95, 1.05, 1.02];
  it.each([
    [MIN_ROUNDS_FOR_CHANGE - 1, false],
    [MIN_ROUNDS_FOR_CHANGE, true],
    [MIN_ROUNDS_FOR_CHANGE + 1, true],
  ])('%i rounds each: a CI %s', (n, has) => {
    const change = metricChange(
      { ...now, perRound: perRound.slice(0, n) },
      { values: [1.02], cis: [null], perRound: [before.slice(0, n)] },
      [],
      0.05,
    );
    expect(change?.ci !== null).toBe(has);
    expect(change?.status).toBe(has ? 'regression' : 'unclear');
    if (has)
      expect(change?.ci).toEqual(
        bootstrapRatioOfMediansCI(perRound.slice(0, n), before.slice(0, n), {
          resamples: 10_000,
          level: 0.95,
          seed: seedOf('change:mps/gemm/slowdown'),
        }),
      );
  });

  it('two runs with CIs: their half-widths added in quadrature on the log scale, around the change', () => {
    const change = metricChange({ ...now, value: 2, ci: [1.8, 2.2] }, { values: [1], cis: [[0.9, 1.1]] }, [], 0.05);
    const w = Math.hypot(intervalHalfWidthLog([1.8, 2.2]), intervalHalfWidthLog([0.9, 1.1]));
    expect(change?.change).toBe(2);
    expect(change?.ci?.[0]).toBeCloseTo(2 * Math.exp(-w), 12);
    expect(change?.ci?.[1]).toBeCloseTo(2 * Math.exp(w), 12);
  });

  it('several reference runs: their geometric mean, and the new run’s CI alone', () => {
    const change = metricChange({ ...now, value: 2, ci: [1.8, 2.2] }, { values: [1, 4], cis: [null, null] }, [], 0.05);
    expect(change?.baselineValue).toBeCloseTo(2, 12);
    expect(change?.baselineRuns).toBe(2);
    const w = intervalHalfWidthLog([1.8, 2.2]);
    expect(change?.ci?.[1]).toBeCloseTo(Math.exp(w), 12);
  });

  it('the bootstrap needs 3 rounds in each run, and one reference run', () => {
    const one = (nowRounds: number, beforeRounds: number, values = [1.02]) =>
      metricChange(
        { ...now, perRound: perRound.slice(0, nowRounds) },
        { values, cis: values.map(() => null), perRound: values.map(() => before.slice(0, beforeRounds)) },
        [],
        0.05,
      )?.ci ?? null;
    expect(one(3, 2)).toBeNull();
    expect(one(2, 3)).toBeNull();
    expect(one(3, 3)).not.toBeNull();
    expect(one(3, 3, [1.02, 1.03])).toBeNull();
  });

  it('a bootstrap of many rounds is seeded by change:<id>, not the id alone', () => {
    const many = Array.from({ length: 41 }, (_, i) => 1.5 + ((i * 7919) % 41) / 100);
    const ref = Array.from({ length: 41 }, (_, i) => 1 + ((i * 104_729) % 43) / 97);
    const ci = metricChange({ ...now, perRound: many }, { values: [1.2], cis: [null], perRound: [ref] }, [], 0.05)?.ci;
    const seeded = (seed: string) =>
      bootstrapRatioOfMediansCI(many, ref, { resamples: 10_000, level: 0.95, seed: seedOf(seed) });
    expect(ci).toEqual(seeded('change:mps/gemm/slowdown'));
    expect(ci).not.toEqual(seeded(''));
    expect(ci).not.toEqual(seeded('mps/gemm/slowdown'));
  });

  it('either run without rounds: no bootstrap', () => {
    expect(metricChange(now, { values: [1], cis: [null], perRound: [before] }, [], 0.05)?.ci).toBeNull();
    expect(metricChange({ ...now, perRound }, { values: [1], cis: [null] }, [], 0.05)?.ci).toBeNull();
  });

  it('against several runs, their own CIs are not added (the between-run part holds them)', () => {
    const change = metricChange(
      { ...now, value: 2, ci: [1.8, 2.2] },
      {
        values: [1, 1],
        cis: [
          [0.5, 2],
          [0.5, 2],
        ],
      },
      [],
      0.05,
    );
    const w = intervalHalfWidthLog([1.8, 2.2]);
    expect(change?.ci?.[0]).toBeCloseTo(2 * Math.exp(-w), 12);
  });

  it('a CI reaching 0 is no CI: the bootstrap stands in, or there is none', () => {
    const withZero = (ci: [number, number], reference: [number, number] | null, rounds?: number[]) =>
      metricChange(
        { ...now, value: 2, ci, ...(rounds ? { perRound: rounds } : {}) },
        { values: [1], cis: [reference], ...(rounds ? { perRound: [before] } : {}) },
        [],
        0.05,
      );
    expect(withZero([0, 3], [0.9, 1.1])?.ci).toBeNull();
    expect(withZero([1.8, 2.2], [0, 1.1])?.ci).toBeNull();
    expect(withZero([1.8, 2.2], null)?.ci).toBeNull();
    expect(withZero([0, 3], [0.9, 1.1], perRound)?.ci).toEqual(
      bootstrapRatioOfMediansCI(perRound, before, {
        resamples: 10_000,
        level: 0.95,
        seed: seedOf('change:mps/gemm/slowdown'),
      }),
    );
  });

  it('a band learned from the history when it holds 3 runs', () => {
    const change = metricChange(
      { ...now, value: 1, ci: [0.99, 1.01] },
      { values: [1], cis: [[0.99, 1.01]] },
      [1, 1.01, 0.99],
      0.0,
    );
    expect(change?.band?.source).toEqual({ kind: 'learned', runs: 3 });
  });

  it('no change without a positive value or reference', () => {
    expect(metricChange({ ...now, value: null }, { values: [1], cis: [null] }, [], 0.05)).toBeNull();
    expect(metricChange({ ...now, value: 0 }, { values: [1], cis: [null] }, [], 0.05)).toBeNull();
    expect(metricChange(now, { values: [0], cis: [null] }, [], 0.05)).toBeNull();
  });
});

describe('a change against its band: the edges count as unchanged', () => {
  const h = Math.log(1.1);
  const e = 1e-9;
  it.each([
    [Math.exp(h), 'lower', 'unchanged'],
    [Math.exp(h - e), 'lower', 'unchanged'],
    [Math.exp(h + e), 'lower', 'regression'],
    [Math.exp(h + e), 'higher', 'improvement'],
    [Math.exp(-h), 'lower', 'unchanged'],
    [Math.exp(-h + e), 'higher', 'unchanged'],
    [Math.exp(-h - e), 'lower', 'improvement'],
    [Math.exp(-h - e), 'higher', 'regression'],
    [1, 'higher', 'unchanged'],
  ] as const)('change %d, %s better → %s', (change, better, status) => {
    expect(classifyAgainstBand(change, better, h)).toBe(status);
  });
});

describe('the band: between-run part ⊕ within-run CI, never below the noise band', () => {
  const within: [number, number] = [Math.exp(-0.03), Math.exp(0.03)];

  it.each([
    // √(0.04² + 0.03²) = 0.05 on the log scale: a noise band at, just below and just above it.
    [Math.expm1(0.05), 0.05],
    [Math.expm1(0.05) - 1e-6, 0.05],
    [Math.expm1(0.05) + 1e-6, Math.log1p(Math.expm1(0.05) + 1e-6)],
  ])('noise band %d → half-width %d', (noise, halfWidth) => {
    const band = bandOf({ source: { kind: 'floor' }, betweenLog: 0.04, betweenSdLog: 0.01 }, within, noise);
    expect(band.withinLog).toBeCloseTo(0.03, 12);
    expect(band.halfWidthLog).toBeCloseTo(halfWidth, 9);
  });

  it.each([
    [MIN_RUNS_TO_LEARN - 1, 'floor'],
    [MIN_RUNS_TO_LEARN, 'learned'],
    [MIN_RUNS_TO_LEARN + 1, 'learned'],
  ] as const)('%i runs of history → %s', (runs, kind) => {
    const history = [1.0, 1.1, 0.9, 1.05].slice(0, runs);
    const between = betweenRun('mps/gemm/slowdown', history, 1);
    expect(between.source.kind).toBe(kind);
    if (kind === 'floor') expect(between.betweenLog).toBeCloseTo(Math.log1p(0.06), 12);
    else {
      const spread = runSpread(history);
      expect(spread).not.toBeNull();
      const t = studentTCritical(0.995, runs - 1);
      expect(between.betweenLog).toBeCloseTo(t * (spread?.sdLog ?? 0) * Math.SQRT2, 9);
      expect(between.source).toEqual({ kind: 'learned', runs });
    }
  });

  it('the prediction half-width shrinks with more reference runs, and needs one', () => {
    const spread = { runs: 5, meanLog: 0, sdLog: 0.1 };
    const t = studentTCritical(0.995, 4);
    expect(predictionHalfWidthLog(spread, 1, 0.995)).toBeCloseTo(t * 0.1 * Math.SQRT2, 12);
    expect(predictionHalfWidthLog(spread, 4, 0.995)).toBeCloseTo(t * 0.1 * Math.sqrt(1.25), 12);
    expect(() => predictionHalfWidthLog(spread, 0, 0.995)).toThrow('a reference needs at least one run, got 0');
    expect(() => studentTCritical(1, 3)).toThrow('level must lie in (0, 1), got 1');
    expect(() => studentTCritical(0, 3)).toThrow(RangeError);
    expect(() => studentTCritical(0.95, 0)).toThrow('degrees of freedom must be a positive integer, got 0');
  });

  it.each([
    ['streams/spin/speedup-k2', 0.005],
    ['streams/pipeline/x-speedup-k4', 0.09],
    ['timeslice/spin/slowdown', 0.03],
    ['timeslice/gemm/slowdown', 0.045],
    ['timeslice/infer/slowdown', 0.095],
    ['mps/spin/slowdown', 0.015],
    ['mps/gemm/slowdown', 0.06],
    ['mps/infer/slowdown', 0.105],
    ['green/gemm/slowdown', 0.105],
    ['streams/spin/speedup-kx', 0.105],
  ])('the floor of %s is ±%d', (id, relative) => {
    expect(floorFor(id)).toBe(relative);
  });

  it('the catch-all floor is the widest', () => {
    const widest = Math.max(...DEFAULT_FLOORS.map((f) => f.relative));
    expect(DEFAULT_FLOORS.at(-1)?.relative).toBe(widest);
  });

  it('log and relative widths convert both ways; parts add in quadrature', () => {
    expect(relativeToLog(0.1)).toBeCloseTo(Math.log(1.1), 15);
    expect(logToRelative(Math.log(1.1))).toBeCloseTo(0.1, 15);
    expect(intervalHalfWidthLog([1, Math.E ** 2])).toBeCloseTo(1, 15);
    expect(combineHalfWidths(3, 4)).toBe(5);
    expect(sourceText({ kind: 'learned', runs: 12 })).toBe('learned from 12 runs');
    expect(sourceText({ kind: 'floor' })).toBe('default floor');
  });
});
