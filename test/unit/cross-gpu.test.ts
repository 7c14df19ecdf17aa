/** The cross-GPU schedule policy and the busy check's per-GPU view of processes. */
import { describe, expect, it } from 'vitest';
import type { MetricAnalysis } from '../../harness/analysis/analyze.js';
import { gpuSchedule, type CrossGpuResult } from '../../harness/analysis/cross-gpu.js';
import { busyEvidence } from '../../harness/busy.js';
import type { Fingerprint } from '../../harness/run/schema.js';

function result(victimGpu: number, value: number | null, ci: [number, number] | null, verdict: MetricAnalysis['verdict'] = 'none'): CrossGpuResult {
  const metric = { stats: { value, ci }, verdict, reasons: verdict === 'invalid' ? ['overlap too short'] : [] } as unknown as MetricAnalysis;
  return { victimGpu, loadedGpus: [1 - victimGpu], metric };
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
    expect(reason).toBe('a loaded neighbour may cost GPU 0 over 2% (GPU 0 1.003× (95% CI 0.996–1.021); GPU 1 1.004× (95% CI 1.000–1.012)): the GPUs run one after another');
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
