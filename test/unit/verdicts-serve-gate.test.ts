/**
 * The server gate's verdicts (serve/verdicts.ts): a ratio's change against its band, edges included, and
 * the exit code CI acts on.
 */
import { describe, expect, it } from 'vitest';
import { serveChange, serveGateExitCode } from '../../harness/serve/verdicts.js';

describe('serveChange: a change against its band, edges included', () => {
  // Both CIs of zero width: the band is the between-run floor, ±10.5% (log1p(0.105) on the log scale).
  const at = (v: number) => ({ value: v, ci: [v, v] as [number, number], n: 6 });
  it.each([
    ['higher', 1.105, 'unchanged'],
    ['higher', 1.1051, 'improvement'],
    ['higher', 1 / 1.105, 'unchanged'],
    ['higher', 1 / 1.1051, 'regression'],
    ['lower', 1.1051, 'regression'],
    ['lower', 1 / 1.1051, 'improvement'],
  ] as const)('better %s, now ÷ before = %f: %s', (better, ratio, status) => {
    expect(serveChange('mps ×2', 'throughput', better, at(ratio), at(1))?.status).toBe(status);
  });

  it('without a CI in either run (fewer than 6 rounds) it is unclear; without a value, no change', () => {
    expect(serveChange('mps ×2', 'throughput', 'higher', { value: 2, ci: null, n: 4 }, at(1))?.status).toBe('unclear');
    expect(serveChange('mps ×2', 'throughput', 'higher', { value: null, ci: null, n: 0 }, at(1))).toBeNull();
  });

  it('the band is the two CIs in quadrature with the floor, never below the noise band', () => {
    const c = serveChange('mps ×2', 'throughput', 'higher', { value: 1, ci: [0.9, 1.1], n: 6 }, at(1));
    const within = Math.log(1.1 / 0.9) / 2;
    expect(c?.band).toBeCloseTo(Math.expm1(Math.hypot(Math.log1p(0.105), within)), 12);
    expect(serveChange('mps ×2', 'throughput', 'higher', at(1), at(1), 0.01)?.band).toBeCloseTo(0.05, 12);
  });
});

describe('serveChange: the change, its CI and what it reports', () => {
  const est = (value: number | null, ci: [number, number] | null = value === null ? null : [value, value]) => ({
    value,
    ci,
    n: 6,
  });

  it('is now ÷ before, with every field of the ratio it is of', () => {
    const c = serveChange('mps ×4', 'ttftP99', 'lower', est(2.2), est(2));
    expect(c).toMatchObject({ group: 'mps ×4', ratio: 'ttftP99', better: 'lower', value: 2.2, baselineValue: 2 });
    expect(c?.change).toBeCloseTo(1.1, 12);
  });

  it('its CI is the change times exp(∓ the two half-widths in quadrature)', () => {
    const c = serveChange('mps ×4', 'throughput', 'higher', est(2, [1.6, 2.5]), est(1, [0.8, 1.25]));
    const w = Math.hypot(Math.log(2.5 / 1.6) / 2, Math.log(1.25 / 0.8) / 2);
    expect(c?.ci?.[0]).toBeCloseTo(2 * Math.exp(-w), 12);
    expect(c?.ci?.[1]).toBeCloseTo(2 * Math.exp(w), 12);
  });

  it.each([
    ['now missing', est(null), est(1)],
    ['before missing', est(1), est(null)],
    ['now 0', est(0), est(1)],
    ['before 0', est(1), est(0)],
    ['now negative', est(-1), est(1)],
    ['before negative', est(1), est(-1)],
  ])('%s: no change', (_what, now, before) => {
    expect(serveChange('mps ×4', 'throughput', 'higher', now, before)).toBeNull();
  });

  it('a CI that reaches 0 (no log width) makes the change unclear, in either run', () => {
    expect(serveChange('g', 'throughput', 'higher', est(1, [0, 2]), est(1))?.status).toBe('unclear');
    expect(serveChange('g', 'throughput', 'higher', est(1), est(1, [0, 2]))?.status).toBe('unclear');
  });
});

describe('serveGateExitCode: what CI acts on', () => {
  it.each([
    [['unchanged', 'improvement'], 0, 0],
    [['unchanged', 'unclear'], 0, 0],
    [['unchanged'], 1, 3],
    [['regression'], 0, 1],
    [['regression', 'unchanged'], 2, 1],
    [[], 0, 0],
  ] as const)('changes %j with %d problems: exit %d', (statuses, problems, code) => {
    expect(
      serveGateExitCode(
        statuses.map((status) => ({ status })),
        problems,
      ),
    ).toBe(code);
  });
});
