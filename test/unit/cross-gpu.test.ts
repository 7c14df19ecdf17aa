/** The cross-GPU schedule policy and the busy check's per-GPU view of processes. */
import { describe, expect, it } from 'vitest';
import { type CrossGpuResult, gpuSchedule } from '../../harness/bench/analysis/cross-gpu.js';
import type { ComparisonAnalysis, MetricAnalysis } from '../../harness/bench/analysis/types.js';
import { crossGpuPlan } from '../../harness/bench/comparisons.js';
import { busyEvidence } from '../../harness/session/busy.js';
import type { Fingerprint } from '../../harness/system/nvidia/schema.js';
import { testConfig } from './config-fixture.js';

function result(
  victimGpu: number,
  value: number | null,
  ci: [number, number] | null,
  verdict: MetricAnalysis['verdict'] = 'none',
): CrossGpuResult {
  const metric = {
    metric: { workload: 'infer' },
    stats: { value, ci },
    verdict,
    reasons: verdict === 'invalid' ? ['overlap too short'] : [],
  } as unknown as MetricAnalysis;
  return {
    crossGpu: { victimGpu, loadedGpus: [1 - victimGpu], loadersPerGpu: 2 },
    comparison: {} as ComparisonAnalysis,
    metric,
  };
}

describe('gpuSchedule', () => {
  it.each([
    ['every CI within 2%', [result(0, 1.003, [0.996, 1.012]), result(1, 1.0, [0.99, 1.02])], true],
    ['one CI reaching past 2%', [result(0, 1.003, [0.996, 1.021]), result(1, 1.0, [0.99, 1.01])], false],
    ['a measured cost', [result(0, 1.2, [1.18, 1.22]), result(1, 1.0, [0.99, 1.01])], false],
    ['no CI', [result(0, 1.0, null), result(1, 1.0, [0.99, 1.01])], false],
    ['an invalid check', [result(0, 1.0, [0.99, 1.01], 'invalid'), result(1, 1.0, [0.99, 1.01])], false],
    ['no check at all', [], false],
  ])('%s → parallel %s', (_what, results, parallel) => {
    expect(gpuSchedule(results).parallel).toBe(parallel);
  });

  it('names the GPUs that may be disturbed, with their numbers', () => {
    const { reason } = gpuSchedule([result(0, 1.003, [0.996, 1.021]), result(1, 1.004, [1.0, 1.012])]);
    expect(reason).toBe(
      'a loaded neighbour may cost GPU 0 over 2% (GPU 0 infer 1.003× (95% CI 0.996–1.021); GPU 1 infer 1.004× (95% CI 1.000–1.012)): the GPUs run one after another',
    );
  });
});

describe('busyEvidence', () => {
  const gpu = (index: number, uuid: string) => ({ index, uuid, utilGpuPct: 0, memoryUsedMiB: 0 });
  const fingerprint = {
    gpus: [gpu(0, 'GPU-a'), gpu(1, 'GPU-b')],
    computeApps: [{ pid: 7, name: 'python3', usedMemoryMiB: 874, gpuUuid: 'GPU-b' }],
  } as unknown as Fingerprint;

  it('counts a process only against the GPU it runs on', () => {
    expect(busyEvidence(fingerprint, 0)).toEqual([]);
    expect(busyEvidence(fingerprint, 1)).toEqual(['compute process 7 (python3, 874 MiB)']);
  });
});

describe('crossGpuPlan', () => {
  const fingerprint = {
    gpus: [
      { index: 0, uuid: 'GPU-a' },
      { index: 1, uuid: 'GPU-b' },
      { index: 2, uuid: 'GPU-c' },
    ],
  } as unknown as Fingerprint;

  it('checks each GPU with a launch-bound and a copy-bound workload, loading every other GPU', () => {
    const plan = crossGpuPlan(testConfig(), fingerprint, [0, 1, 2]);
    expect(plan.map((c) => c.id)).toEqual([
      'cross/infer@gpu0',
      'cross/infer@gpu1',
      'cross/infer@gpu2',
      'cross/pipeline@gpu0',
      'cross/pipeline@gpu1',
      'cross/pipeline@gpu2',
    ]);
    const gpu1 = plan.find((c) => c.id === 'cross/pipeline@gpu1');
    expect(gpu1?.clientEnv.map((e) => e.CUDA_VISIBLE_DEVICES)).toEqual(['GPU-b', 'GPU-a', 'GPU-a', 'GPU-c', 'GPU-c']);
    expect(gpu1?.arms.map((a) => a.id)).toEqual(['solo-c0', 'contended']);
  });

  it('has nothing to check on one GPU', () => {
    expect(crossGpuPlan(testConfig(), fingerprint, [0])).toEqual([]);
  });
});
