/** The between-run statistics (harness/stats/between-runs.ts) and the gate's one definition of a change against its band. */
import { describe, expect, it } from 'vitest';
import { floorFor } from '../../harness/bench/gate/bands.js';
import { classifyChange, metricChange } from '../../harness/bench/gate/verdicts.js';
import {
  classifyAgainstBand,
  predictionHalfWidthLog,
  runSpread,
  studentTCritical,
  studentTTwoSidedCdf,
} from '../../harness/stats/between-runs.js';

describe("Student's t", () => {
  // Two-sided critical values from the standard tables (scipy.stats.t.ppf agrees to 3 decimals).
  it.each([
    [0.95, 1, 12.706],
    [0.95, 2, 4.303],
    [0.95, 10, 2.228],
    [0.99, 3, 5.841],
    [0.99, 30, 2.75],
    [0.995, 3, 7.453],
    [0.995, 55, 2.925],
  ])('%s two-sided with %i df: %s', (level, df, t) => {
    expect(studentTCritical(level, df)).toBeCloseTo(t, 2);
    expect(studentTTwoSidedCdf(t, df)).toBeCloseTo(level, 3);
  });

  it('finds a critical value in the thousands to 1e-10 of itself: t(99.99%, 1 df) = tan(0.49995π)', () => {
    const t = studentTCritical(0.9999, 1);
    const exact = Math.tan((Math.PI / 2) * 0.9999);
    expect(Math.abs(t - exact) / exact).toBeLessThan(1e-10);
  });

  it('refuses degrees of freedom that are not a positive integer', () => {
    expect(() => studentTTwoSidedCdf(1, 0)).toThrow(RangeError);
    expect(() => studentTTwoSidedCdf(1, 2.5)).toThrow(RangeError);
  });
});

describe('the spread of runs and the prediction half-width', () => {
  it('needs 3 runs, all positive', () => {
    expect(runSpread([1, 1.1])).toBeNull();
    expect(runSpread([1, 1.1, 0])).toBeNull();
    const spread = runSpread([Math.E, 1, Math.E ** 2]);
    expect(spread).toMatchObject({ runs: 3 });
    expect(spread?.meanLog).toBeCloseTo(1, 12);
    expect(spread?.sdLog).toBeCloseTo(1, 12);
  });

  it('t(level, runs − 1) · sd · √(1 + 1/reference runs)', () => {
    const spread = { runs: 4, meanLog: 0, sdLog: 0.02 };
    expect(predictionHalfWidthLog(spread, 1, 0.995)).toBeCloseTo(7.453 * 0.02 * Math.SQRT2, 3);
    expect(predictionHalfWidthLog(spread, 4, 0.995)).toBeCloseTo(7.453 * 0.02 * Math.sqrt(1.25), 3);
  });
});

describe('a change against its band', () => {
  const h = Math.log(1.05);
  it.each([
    [1.05 * 1.0001, 'lower', 'regression'],
    [1.05 / 1.0001, 'lower', 'unchanged'],
    [1 / 1.05 / 1.0001, 'lower', 'improvement'],
    [1 / 1.05 / 1.0001, 'higher', 'regression'],
    [1.05 * 1.0001, 'higher', 'improvement'],
    [1, 'higher', 'unchanged'],
  ] as const)('change %s, %s is better → %s', (change, better, status) => {
    expect(classifyAgainstBand(change, better, h)).toBe(status);
  });

  it('the edge itself counts as inside', () => {
    expect(classifyAgainstBand(Math.exp(h), 'lower', h)).toBe('unchanged');
  });

  it('without a band (no within-run CI) nothing is called changed', () => {
    expect(classifyChange(2, 'lower', null)).toBe('unclear');
  });
});

describe('metricChange: within-run CI ⊕ between-run part, never below the noise band', () => {
  const now = {
    id: 'timeslice/spin/slowdown',
    better: 'lower' as const,
    value: 1.1,
    ci: [1.09, 1.11] as [number, number],
  };
  const reference = { values: [1], cis: [[0.99, 1.01] as [number, number]] };

  it('one baseline, no history: the default floor of that ratio', () => {
    const change = metricChange(now, reference, [], 0.02);
    const within = Math.hypot(Math.log(1.11 / 1.09) / 2, Math.log(1.01 / 0.99) / 2);
    expect(change?.band?.source).toEqual({ kind: 'floor' });
    expect(change?.band?.withinLog).toBeCloseTo(within, 12);
    expect(change?.band?.halfWidthLog).toBeCloseTo(Math.hypot(Math.log1p(floorFor(now.id)), within), 12);
    expect(change?.status).toBe('regression');
  });

  it('a history of 3 or more runs: learned from their spread', () => {
    const history = [1, 1.05, 1 / 1.05, 1.1];
    const change = metricChange(now, reference, history, 0.02);
    expect(change?.band?.source).toEqual({ kind: 'learned', runs: 4 });
    const spread = runSpread(history);
    if (!spread) throw new Error('no spread');
    expect(change?.band?.betweenLog).toBeCloseTo(predictionHalfWidthLog(spread, 1, 0.995), 12);
    // That spread makes a band wider than 10%: the same change is now within it.
    expect(change?.status).toBe('unchanged');
  });

  it('several reference runs: their geometric mean, and only the new run’s within-run CI', () => {
    const change = metricChange(now, { values: [1, 1.21], cis: [null, null] }, [], 0.02);
    expect(change?.baselineValue).toBeCloseTo(1.1, 12);
    expect(change?.change).toBeCloseTo(1, 12);
    expect(change?.band?.withinLog).toBeCloseTo(Math.log(1.11 / 1.09) / 2, 12);
  });

  it('a band narrower than the noise band is widened to it', () => {
    const tight = {
      ...now,
      id: 'streams/spin/speedup-k2',
      better: 'higher' as const,
      value: 1.03,
      ci: [1.029, 1.031] as [number, number],
    };
    const change = metricChange(tight, { values: [1], cis: [[0.999, 1.001]] }, [], 0.05);
    expect(change?.band?.halfWidthLog).toBeCloseTo(Math.log(1.05), 12);
    expect(change?.status).toBe('unchanged');
  });

  it('no within-run CI of either run: unclear, no band', () => {
    expect(metricChange(now, { values: [1], cis: [null] }, [], 0.02)).toMatchObject({
      band: null,
      ci: null,
      status: 'unclear',
    });
  });
});
