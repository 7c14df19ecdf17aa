/**
 * A custom command's run is read like a built-in's: "which mode measured cheaper" answers from the
 * user's own command, and a plan from a run says what that run did not measure instead of "no run
 * given". Also the two pure pieces of bringing a workload: its PYTHONPATH and check's open-loop rate.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { type Measured, measuredFromAnalysis, modeDecision } from '../../harness/bench/analysis/which-mode.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { advise } from '../../harness/deploy/advice.js';
import { adviceText } from '../../harness/deploy/advice-text.js';
import { openLoopRate } from '../../harness/workload/check.js';
import { HELPER_DIR, workloadEnv } from '../../harness/workload/client.js';
import { CUSTOM_RUN, ROOT } from '../helpers.js';

const H100 = { name: 'NVIDIA H100 80GB HBM3', memoryGiB: 79.6, mig: null };
const request = { models: 2, memGiB: 2, smPct: 20, sloP99Ms: null };

describe('a custom run', () => {
  it('answers "which mode" from the user\'s own command', async () => {
    const run = await loadRun(CUSTOM_RUN);
    const measured = measuredFromAnalysis(run, analyze(run));
    expect(measured.timeslice).toMatchObject({ workload: 'custom', clients: 2 });
    expect(measured.mps).toMatchObject({ workload: 'custom', clients: 2 });
    expect(measured.timeslice?.slowdown).toBeCloseTo(2.343, 3);
    expect(measured.mps?.slowdown).toBeCloseTo(1.47, 3);
    expect(modeDecision(measured)).toMatchObject({ kind: 'cheaper', mode: 'mps', workload: 'custom', clients: 2 });
  });

  it('gives plan its costs at the clients it measured', async () => {
    const run = await loadRun(CUSTOM_RUN);
    const text = adviceText(advise(request, H100, measuredFromAnalysis(run, analyze(run), request.models)));
    expect(text).toContain(
      `measured on run ${path.basename(CUSTOM_RUN)} (NVIDIA H100 80GB HBM3, driver 580.159.04) with 2 custom clients: slowdown 1.47×`,
    );
    expect(text).toContain('costs are those measured at 2 clients, the fewest measured at or above 2');
    expect(text).not.toContain('no run given');
  });
});

describe('a plan from a run that measured one mode, or none', () => {
  const timeslice = { workload: 'infer', clients: 2, slowdown: 2.7, aggregate: 0.74, p99Ratio: 3, contendedP99Ms: 1 };
  it('says the run did not measure MPS, not that no run was given', () => {
    const measured: Measured = { source: 'run r1 (GPU, driver 1)', timeslice, mps: null };
    const text = adviceText(advise(request, H100, measured));
    expect(text).toContain('! run r1 (GPU, driver 1) did not measure MPS on a contention workload: cost not measured');
    expect(text).toContain('costs are those measured at 2 clients');
    expect(text).not.toContain('no run given');
  });

  it('says the run measured neither, not that its costs are those at 2 clients', () => {
    const measured: Measured = { source: 'run r2 (GPU, driver 1)', timeslice: null, mps: null };
    const text = adviceText(advise(request, H100, measured));
    expect(text).toContain('run r2 (GPU, driver 1) did not measure time-slicing on a contention workload');
    expect(text).toContain(
      'run r2 (GPU, driver 1) measured neither time-slicing nor MPS on a contention workload: costs not measured',
    );
    expect(text).not.toMatch(/costs are those measured at \d+ clients/);
  });

  it('without a run: no run given', () => {
    expect(adviceText(advise(request, H100, null))).toContain('no run given: cost not measured');
  });
});

describe("a workload's environment", () => {
  it("puts the helper's directory first on PYTHONPATH, with the caller's after it", () => {
    expect(workloadEnv({ A: '1' }, undefined)).toEqual({ A: '1', PYTHONPATH: HELPER_DIR });
    expect(workloadEnv({}, '/mine')).toEqual({ PYTHONPATH: `${HELPER_DIR}${path.delimiter}/mine` });
    expect(workloadEnv({ PYTHONPATH: '/given' }, '/mine')).toEqual({
      PYTHONPATH: `${HELPER_DIR}${path.delimiter}/given`,
    });
    expect(HELPER_DIR).toBe(path.join(ROOT, 'workloads'));
  });
});

describe("check's open-loop rate", () => {
  it('is half the closed-loop rate of its window, between 10 and 1000 requests a second', () => {
    const window = (iterations: number) => ({ iterations, windowStartUs: 0, windowEndUs: 200_000 });
    expect(openLoopRate(window(40))).toBe(100);
    expect(openLoopRate(window(1))).toBe(10);
    expect(openLoopRate(window(4000))).toBe(1000);
  });
});
