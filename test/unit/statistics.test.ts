import { describe, expect, it } from 'vitest';
import { classifyChange } from '../../harness/gate.js';
import { bootstrapMedianCI, mulberry32 } from '../../harness/analysis/bootstrap.js';
import { metricStats } from '../../harness/analysis/statistics.js';
import { judge } from '../../harness/analysis/verdicts.js';

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
    expect(stats.ci).not.toBeNull();
  });

  it('reports no CI under three rounds, and no outliers when MAD is 0', () => {
    expect(metricStats({ id: 'x', perRound: [2] })).toMatchObject({ n: 1, value: 2, ci: null, halfWidth: null, cv: null });
    expect(metricStats({ id: 'x', perRound: [2, 2, 2, 9] })).toMatchObject({ mad: 0, outliers: [] });
    expect(metricStats({ id: 'x', perRound: [] })).toMatchObject({ n: 0, value: null });
  });

  it('expresses the half-width relative to the value', () => {
    const stats = metricStats({ id: 'x', perRound: [2, 2, 2] });
    expect(stats).toMatchObject({ ci: [2, 2], halfWidth: 0 });
  });
});

describe('verdicts', () => {
  const at = (ci: [number, number] | null, n = 5) => ({ n, value: ci ? (ci[0] + ci[1]) / 2 : 1, ci, halfWidth: null, mad: 0, cv: 0, outliers: [] });
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
    expect(judge(at(null, 1), { min: 1.05 })).toEqual({ verdict: 'inconclusive', reason: '1 round(s): a CI needs at least 3' });
  });
});

describe('regression against a baseline', () => {
  it.each([
    [[0.85, 0.95], 'higher', 'regression'],
    [[1.03, 1.1], 'higher', 'improvement'],
    [[0.99, 1.01], 'higher', 'unchanged'],
    [[0.97, 1.01], 'higher', 'unclear'],
    [[1.05, 1.15], 'lower', 'regression'],
    [[0.9, 0.97], 'lower', 'improvement'],
    [[1.0, 1.02], 'lower', 'unchanged'],
    [[0.98, 1.02], 'lower', 'unchanged'], // the band's edges count as noise
  ] as const)('change CI %j, %s is better → %s', (ci, better, status) => {
    expect(classifyChange([...ci], better, 0.02)).toBe(status);
  });

  it('without a CI nothing is called a regression', () => {
    expect(classifyChange(null, 'higher', 0.02)).toBe('unclear');
  });
});
