/**
 * The gate's power (harness/stats/power.ts, the band's `caughtLog`): the smallest change it calls a
 * regression in 95% of runs, H + z(0.95) · √(σb² + (W ÷ z(0.975))²), pinned at its boundaries and checked
 * against the gate's own classification of changes drawn with that noise.
 */
import { describe, expect, it } from 'vitest';
import { BETWEEN_RUN_LEVEL, bandOf, betweenRun, FLOOR_RUNS } from '../../harness/bench/gate/bands.js';
import { classifyChange } from '../../harness/bench/gate/verdicts.js';
import { runSpread, studentTCritical } from '../../harness/stats/between-runs.js';
import { mulberry32 } from '../../harness/stats/bootstrap.js';
import { changeNoiseSdLog, normalCdf, normalQuantile, POWER, smallestCaughtLog } from '../../harness/stats/power.js';

const Z95 = 1.6448536269514722;
const Z975 = 1.959963984540054;

/**
 * How often a true change of `changeLog` (the worse way) lands outside a band of `halfWidthLog` when the
 * change the gate sees carries normal noise of `noiseSdLog`: Φ((δ − H) ÷ σ).
 */
function probabilityCaught(changeLog: number, halfWidthLog: number, noiseSdLog: number): number {
  return normalCdf((changeLog - halfWidthLog) / noiseSdLog);
}

describe('the standard normal', () => {
  it.each([
    [0.5, 0],
    [0.95, Z95],
    [0.975, Z975],
    [0.995, 2.5758293035489004],
    [0.05, -Z95],
  ])('z(%d) = %d', (p, z) => {
    expect(normalQuantile(p)).toBeCloseTo(z, 8);
    expect(normalCdf(z)).toBeCloseTo(p, 8);
  });

  it.each([0, 1, -0.1, Number.NaN])('refuses the probability %d, naming it', (p) => {
    expect(() => normalQuantile(p)).toThrow(`a probability must lie in (0, 1), got ${p}`);
  });

  it('is 0 and 1 in the far tails, where the series would overflow (the quantile bisects from ±40)', () => {
    expect(normalCdf(-40)).toBe(0);
    expect(normalCdf(40)).toBe(1);
    expect(normalCdf(-9)).toBe(0);
    expect(normalCdf(9)).toBe(1);
  });
});

describe('the smallest change caught: the band plus z(power) × the noise', () => {
  it('is stated at 95%', () => {
    expect(POWER).toBe(0.95);
  });

  it.each([
    // half-width, noise SD, power → smallest change caught (log scale)
    [0.05, 0, 0.95, 0.05],
    [0.05, 0.01, 0.95, 0.05 + Z95 * 0.01],
    [0.1, 0.02, 0.5, 0.1],
    [0, 0.01, 0.95, Z95 * 0.01],
    [0.08, 0.03, 0.975, 0.08 + Z975 * 0.03],
  ])('band %d, noise %d, power %d → %d', (halfWidth, sd, power, caught) => {
    expect(smallestCaughtLog(halfWidth, sd, power)).toBeCloseTo(caught, 9);
  });

  it.each([
    [-0.01, 0.01],
    [0.05, -0.01],
  ])('refuses a band of %d or a noise of %d, naming both', (halfWidth, sd) => {
    expect(() => smallestCaughtLog(halfWidth, sd)).toThrow(
      `a band and a spread must be 0 or more, got ${halfWidth} and ${sd}`,
    );
  });

  it.each([
    [0.05, 0.01],
    [0.1, 0.03],
    [0.049, 0.0001],
  ])('band %d, noise %d: caught 95% of the time at the figure, less just below it, more just above', (h, sd) => {
    const caught = smallestCaughtLog(h, sd);
    expect(probabilityCaught(caught, h, sd)).toBeCloseTo(0.95, 9);
    expect(probabilityCaught(caught - 1e-3 * sd, h, sd)).toBeLessThan(0.95);
    expect(probabilityCaught(caught + 1e-3 * sd, h, sd)).toBeGreaterThan(0.95);
    // At the band's edge itself, half the time.
    expect(probabilityCaught(h, h, sd)).toBeCloseTo(0.5, 12);
  });

  it.each([
    // between-run SD, within-run 95% half-width → the change's noise SD
    [0.01, 0, 0.01],
    [0, Z975 * 0.01, 0.01],
    [0.03, Z975 * 0.04, 0.05],
  ])('noise: between SD %d ⊕ within half-width %d ÷ z(0.975) = %d', (between, within, sd) => {
    expect(changeNoiseSdLog(between, within)).toBeCloseTo(sd, 9);
  });

  it('refuses a negative spread, naming both', () => {
    expect(() => changeNoiseSdLog(-0.01, 0.01)).toThrow('spreads must be 0 or more, got -0.01 and 0.01');
    expect(() => changeNoiseSdLog(0.01, -0.01)).toThrow('spreads must be 0 or more, got 0.01 and -0.01');
  });
});

describe("the band's between-run standard deviation and the change it catches", () => {
  it('learned: the history’s SD × √(1 + 1/reference runs), its half-width ÷ t(99.5%, runs − 1)', () => {
    const history = [1.0, 1.1, 0.9, 1.05, 0.97];
    const part = betweenRun('mps/gemm/slowdown', history, 4);
    const sd = runSpread(history)?.sdLog ?? Number.NaN;
    expect(part.betweenSdLog).toBeCloseTo(sd * Math.sqrt(1 + 1 / 4), 9);
    expect(part.betweenLog / part.betweenSdLog).toBeCloseTo(studentTCritical(BETWEEN_RUN_LEVEL, 4), 9);
  });

  it('the floor: its half-width ÷ t(99.5%, 57), the 58 runs it was learned from', () => {
    expect(FLOOR_RUNS).toBe(58);
    const part = betweenRun('mps/gemm/slowdown', [], 1);
    expect(studentTCritical(BETWEEN_RUN_LEVEL, 57)).toBeCloseTo(2.9204, 4);
    expect(part.betweenSdLog).toBeCloseTo(Math.log1p(0.06) / studentTCritical(BETWEEN_RUN_LEVEL, 57), 12);
  });

  const within: [number, number] = [Math.exp(-Z975 * 0.01), Math.exp(Z975 * 0.01)];
  it.each([
    // between half-width, between SD, noise band → band half-width, smallest change caught
    [0.06, 0.02, 0.05, Math.hypot(0.06, Z975 * 0.01), Math.hypot(0.06, Z975 * 0.01) + Z95 * Math.hypot(0.02, 0.01)],
    [0.001, 0.0003, 0.05, Math.log(1.05), Math.log(1.05) + Z95 * Math.hypot(0.0003, 0.01)],
  ])(
    'between ±%d (SD %d), noise band %d → band %d, catches %d',
    (betweenLog, betweenSdLog, noise, halfWidth, caught) => {
      const band = bandOf({ source: { kind: 'floor' }, betweenLog, betweenSdLog }, within, noise);
      expect(band.halfWidthLog).toBeCloseTo(halfWidth, 9);
      expect(band.caughtLog).toBeCloseTo(caught, 9);
    },
  );

  it('the gate itself calls a true change of that size a regression in 95% of runs with noise of that SD', () => {
    const band = bandOf({ source: { kind: 'learned', runs: 20 }, betweenLog: 0.07, betweenSdLog: 0.025 }, within, 0.05);
    const sd = changeNoiseSdLog(0.025, band.withinLog);
    const random = mulberry32(50);
    const draws = 20_000;
    let caught = 0;
    for (let i = 0; i < draws; i++) {
      // Box–Muller: one standard normal draw from two uniforms.
      const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      if (classifyChange(Math.exp(band.caughtLog + sd * z), 'lower', band) === 'regression') caught++;
    }
    // 95% ± 3 binomial standard deviations of 20,000 draws (0.46%).
    expect(Math.abs(caught / draws - 0.95)).toBeLessThan(3 * Math.sqrt((0.95 * 0.05) / draws));
  });
});
