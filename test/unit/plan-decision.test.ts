/**
 * plan ranks the measured options by the mode decision: cheaper only where the slowdown intervals
 * separate; measured the same, isolation first; an option measured at another client count is not
 * weighed against the others.
 */
import { describe, expect, it } from 'vitest';
import type { Measured, MeasuredMode } from '../../harness/bench/analysis/which-mode.js';
import { advise } from '../../harness/deploy/advice.js';
import { builtinMigGpu } from '../../harness/deploy/mig-profiles.js';

const mode = (slowdown: number, ci: [number, number], clients = 2): MeasuredMode => ({
  workload: 'infer',
  clients,
  slowdown,
  slowdownCi: ci,
  aggregate: clients / slowdown,
  aggregateCi: [clients / ci[1], clients / ci[0]],
  p99Ratio: 1,
  contendedP99Ms: 1,
});
const A10 = { name: 'A10', memoryGiB: 24, mig: null };
const request = { models: 2, memGiB: 2, smPct: 10, sloP99Ms: null };
const measured = (m: Partial<Measured>): Measured => ({ source: 'run r', timeslice: null, mps: null, ...m });

describe('plan, from measured costs', () => {
  it('overlapping intervals: measured the same, time-slicing first by isolation, MPS the runner-up', () => {
    const a = advise(
      request,
      A10,
      measured({ mps: mode(0.99, [0.918, 1.054]), timeslice: mode(1.01, [0.936, 1.039]) }),
    );
    expect(a.recommendation).toBe('timeslice');
    expect(a.why).toMatch(
      /^fits; time-slicing and MPS measured the same here: 2 infer clients each slowed 1\.01× \[0\.936, 1\.039\] time-sliced and 0\.99× \[0\.918, 1\.054\] under MPS/,
    );
    expect(a.runnerUp).toEqual({
      mode: 'mps',
      why: 'fits, and measured the same as time-slicing here (the 95% intervals of the slowdown overlap): 0.99× [0.918, 1.054] at 2 clients; isolation put time-slicing first',
    });
  });

  it('separated intervals: the lower, even behind MIG', () => {
    const a = advise(
      request,
      { name: 'A100-80GB', memoryGiB: 80, mig: builtinMigGpu('A100-80GB') ?? null },
      measured({ mps: mode(1.2, [1.1, 1.29]), timeslice: mode(1.4, [1.3, 1.5]) }),
    );
    expect(a.recommendation).toBe('mig');
    expect(a.runnerUp).toEqual({
      mode: 'mps',
      why: "fits, and measured the lowest per-model slowdown of the options that fit, its 95% interval below every other's: 1.20× [1.100, 1.290] at 2 clients",
    });
  });

  it('an option measured at another client count is not weighed, and comes after the weighed', () => {
    const a = advise(
      request,
      A10,
      measured({ mps: mode(1.2, [1.1, 1.29]), timeslice: mode(1.4, [1.3, 1.5]), streams: mode(1.0, [0.9, 1.05], 8) }),
    );
    expect(a.recommendation).toBe('mps');
    const streams = a.assessments.find((x) => x.mode === 'streams');
    expect(streams?.fits).toBe(true);
    expect(a.runnerUp?.mode).toBe('timeslice');
  });
});
