/**
 * The gate on a committed run, a threshold moved across a ratio's CI: at, just inside and just outside
 * each end, the verdict and the exit code CI acts on. (Apart from verdicts-gate.test.ts, whose pure
 * tables the mutation run uses: analysing a whole run per mutant is too slow for it.)
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { gate } from '../../harness/bench/gate/gate.js';
import type { Thresholds } from '../../harness/bench/gate/thresholds.js';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { DEFAULT_RUN } from '../helpers.js';

describe(`the gate on a committed run (${DEFAULT_RUN.split('/').pop()}), a threshold moved across its CI`, () => {
  const id = 'streams/spin/speedup-k2';
  let run: Run;
  let ci: [number, number];
  beforeAll(async () => {
    run = await loadRun(DEFAULT_RUN);
    const alone = gate(run, null, { noiseBand: 0.05, rules: [{ pattern: id, bounds: {} }] }, { allowMismatch: false });
    ci = alone.verdicts.find((v) => v.metric.id === id)?.stats.ci as [number, number];
    expect(ci[0]).toBeLessThan(ci[1]);
  });
  const at = (bounds: { min?: number; max?: number }) => {
    const thresholds: Thresholds = { noiseBand: 0.05, rules: [{ pattern: id, bounds }] };
    const result = gate(run, null, thresholds, { allowMismatch: false });
    return { verdict: result.verdicts.find((v) => v.metric.id === id)?.verdict, exitCode: result.exitCode };
  };
  const e = 1e-9;

  it.each([
    ['min at the CI low end', 'pass', 0, (c: [number, number]) => ({ min: c[0] })],
    ['min just below the CI', 'pass', 0, (c: [number, number]) => ({ min: c[0] - e })],
    ['min just inside the CI', 'inconclusive', 3, (c: [number, number]) => ({ min: c[0] + e })],
    ['min at the CI high end', 'inconclusive', 3, (c: [number, number]) => ({ min: c[1] })],
    ['min just above the CI', 'fail', 1, (c: [number, number]) => ({ min: c[1] + e })],
    ['max at the CI high end', 'pass', 0, (c: [number, number]) => ({ max: c[1] })],
    ['max just inside the CI', 'inconclusive', 3, (c: [number, number]) => ({ max: c[1] - e })],
    ['max just below the CI', 'fail', 1, (c: [number, number]) => ({ max: c[0] - e })],
  ] as const)('threshold %s: %s, exit %i', (_, verdict, exitCode, bounds) => {
    expect(at(bounds(ci))).toEqual({ verdict, exitCode });
  });

  it('the run against itself: every change unchanged, exit 0', () => {
    const result = gate(run, run, { noiseBand: 0.05, rules: [{ pattern: id, bounds: {} }] }, { allowMismatch: false });
    expect(result.exitCode).toBe(0);
    expect(result.changes.length).toBeGreaterThan(0);
    for (const c of result.changes) expect(c.status).toBe('unchanged');
  });
});
