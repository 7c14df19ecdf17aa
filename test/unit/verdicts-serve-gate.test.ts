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
