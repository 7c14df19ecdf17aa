import { describe, expect, it } from 'vitest';
import { judge } from '../../harness/bench/analysis/analyze.js';
import { bootstrapMedianCI, mulberry32 } from '../../harness/stats/bootstrap.js';
import { medianInterval, metricStats } from '../../harness/stats/statistics.js';

const options = { resamples: 10_000, level: 0.95, seed: 42 };

describe('bootstrap', () => {
  it('is deterministic for a seed, and differs across seeds', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const c = mulberry32(8);
    const first = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(first);
    expect(c()).not.toBe(first[0]);
    const values = [1.9, 2.0, 2.1, 2.05, 1.95, 2.2];
    expect(bootstrapMedianCI(values, options)).toEqual(bootstrapMedianCI(values, options));
  });

  it('matches the exact bootstrap distribution of the median of 1..5', () => {
    // P(resampled median = 1) = P(≥3 of 5 draws are 1) = 0.05792 > 2.5%, and likewise for 5:
    // so the 95% percentile interval is exactly [1, 5].
    expect(bootstrapMedianCI([1, 2, 3, 4, 5], options)).toEqual([1, 5]);
  });

  it('gives a zero-width interval for zero variance', () => {
    expect(bootstrapMedianCI([2, 2, 2], options)).toEqual([2, 2]);
  });
});

describe('metric statistics', () => {
  it('median, MAD, CV and MAD outliers against hand-computed values', () => {
    // median 3; |x - 3| = 2,1,0,1,97 → MAD 1; 100 lies 97 > 3 × 1.4826 × 1 from the median.
    // mean 22; sample SD = sqrt((21² + 20² + 19² + 18² + 78²) / 4) = sqrt(1902.5) = 43.6176…; CV = 1.98262…
    const stats = metricStats({ id: 'x', perRound: [1, 2, 3, 4, 100] });
    expect(stats).toMatchObject({ n: 5, value: 3, mad: 1, outliers: [4] });
    expect(stats.cv).toBeCloseTo(1.982621, 5);
    // 5 rounds: [min, max] covers only 93.75%, so there is no 95% interval.
    expect(stats.ci).toBeNull();
  });

  it('reports no CI under six rounds, and no outliers when MAD is 0', () => {
    expect(metricStats({ id: 'x', perRound: [2] })).toMatchObject({
      n: 1,
      value: 2,
      ci: null,
      halfWidth: null,
      cv: null,
    });
    expect(metricStats({ id: 'x', perRound: [2, 2, 2, 9] })).toMatchObject({ mad: 0, outliers: [] });
    expect(metricStats({ id: 'x', perRound: [] })).toMatchObject({ n: 0, value: null });
  });

  it('names outliers by their round, not their position', () => {
    expect(metricStats({ id: 'x', perRound: [1, 2, 3, 4, 100], rounds: [10, 11, 12, 13, 14] }).outliers).toEqual([14]);
  });

  it('expresses the half-width relative to the value', () => {
    const stats = metricStats({ id: 'x', perRound: [2, 2, 2, 2, 2, 2] });
    expect(stats).toMatchObject({ ci: [2, 2], halfWidth: 0, method: 'order-statistic' });
  });
});

describe('order-statistic interval of the median', () => {
  it.each([
    // n, k (1-based order statistics k and n−k+1), exact coverage 1 − 2·P(Binomial(n, ½) ≤ k−1)
    [6, 1, 1 - 2 / 64],
    [8, 1, 1 - 2 / 256],
    [9, 2, 1 - (2 * 10) / 512],
    [10, 2, 1 - (2 * 11) / 1024],
    [20, 6, 0.9586105346679688],
    [40, 14, 0.9615226917157997],
  ])('n = %i: [x(k), x(n−k+1)] with k = %i, coverage %f', (n, k, coverage) => {
    const values = Array.from({ length: n }, (_, i) => n - i); // unsorted on purpose
    const interval = medianInterval(values);
    expect(interval?.ci).toEqual([k, n - k + 1]);
    expect(interval?.confidence).toBeCloseTo(coverage, 12);
    expect(interval?.confidence).toBeGreaterThanOrEqual(0.95);
  });

  it('none below six values: no interval of order statistics reaches 95%', () => {
    expect(medianInterval([1, 2, 3, 4, 5])).toBeNull();
  });

  it('covers the true median at least 95% of the time (simulated, seeded)', () => {
    const random = mulberry32(11);
    let covered = 0;
    const trials = 4000;
    for (let t = 0; t < trials; t++) {
      // Skewed data whose median is ln 2 (exponential with rate 1).
      const values = Array.from({ length: 7 }, () => -Math.log(1 - random()));
      const ci = medianInterval(values)?.ci;
      if (ci && ci[0] <= Math.LN2 && Math.LN2 <= ci[1]) covered++;
    }
    // Exact coverage for n = 7 is 1 − 2/128 = 98.4%; a bootstrap at this n covers far less.
    expect(covered / trials).toBeGreaterThan(0.975);
  });
});

describe('verdicts', () => {
  const at = (ci: [number, number] | null, n = 6) => ({
    n,
    value: ci ? (ci[0] + ci[1]) / 2 : 1,
    ci,
    confidence: ci ? 0.969 : null,
    method: null,
    halfWidth: null,
    mad: 0,
    cv: 0,
    outliers: [],
  });
  it.each([
    [[1.05, 1.2], { min: 1.05 }, 'pass'], // touching the bound counts as inside
    [[1.0, 1.05], { min: 1.05 }, 'inconclusive'],
    [[0.9, 1.04], { min: 1.05 }, 'fail'],
    [[1.2, 3.5], { min: 1.2, max: 3.5 }, 'pass'],
    [[3.4, 3.6], { min: 1.2, max: 3.5 }, 'inconclusive'],
    [[3.51, 3.6], { min: 1.2, max: 3.5 }, 'fail'],
    [[2, 2], { min: 1.2, max: 3.5 }, 'pass'], // zero variance
  ] as const)('CI %j against %j is %s', (ci, bounds, verdict) => {
    expect(judge(at([...ci]), bounds).verdict).toBe(verdict);
  });

  it('one round is inconclusive, saying why', () => {
    expect(judge(at(null, 1), { min: 1.05 })).toEqual({
      verdict: 'inconclusive',
      reason: '1 round(s): a 95% CI of a median needs at least 6',
    });
  });
});
