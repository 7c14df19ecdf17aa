import { describe, expect, it } from 'vitest';
import { summarizeLatencies, throughputPerS } from '../../harness/bench/analysis/measures.js';
import { comparisonMetrics as metricsOfRounds } from '../../harness/bench/analysis/metrics.js';
import { groupRounds } from '../../harness/bench/analysis/rounds.js';
import { buildPlan } from '../../harness/bench/comparisons.js';
import { ALONE_ARM, type ClientResult, type Comparison, type Trial } from '../../harness/bench/record/schema.js';
import { overlap } from '../../harness/workload/result-validity.js';
import { testConfig } from './config-fixture.js';

const base = { startedAt: '2026-11-21T00:00:00Z', finishedAt: '2026-11-21T00:00:01Z' };

function client(index: number, iterations: number, gpuMs: number, startUs = 0, endUs = 1e6): ClientResult {
  return {
    client: index,
    pid: 100 + index,
    variant: { streams: 1 },
    windowStartUs: startUs,
    windowEndUs: endUs,
    iterations,
    gpuMs,
    latency: null,
    chunkIterations: 1,
  };
}

function ok(comparisonId: string, round: number, arm: string, clients: ClientResult[]): Trial {
  return {
    ...base,
    id: `${comparisonId}#r${round}/${arm}`,
    comparisonId,
    arm,
    round,
    status: 'ok',
    clients,
    overlap: null,
  };
}

const comparisonMetrics = (c: Comparison, trials: Trial[]) => metricsOfRounds(c, groupRounds(c, trials));

const plan = buildPlan(testConfig({ modes: ['streams', 'timeslice'] }), null);
const streams = plan.comparisons.find((c) => c.id === 'streams/spin') as Comparison;
const timeslice = plan.comparisons.find((c) => c.id === 'timeslice/gemm') as Comparison;

describe('measures', () => {
  it('summarizes latencies exactly', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => 100 - i);
    // Linear interpolation between order statistics: p90 of 1..100 = 90 + 0.1 × (91 − 90).
    const summary = summarizeLatencies(latencies);
    expect(summary).toMatchObject({ count: 100, meanMs: 50.5, p50Ms: 50.5, maxMs: 100 });
    expect(summary?.p90Ms).toBeCloseTo(90.1, 10);
    expect(summary?.p99Ms).toBeCloseTo(99.01, 10);
    expect(summarizeLatencies([])).toBeNull();
  });

  it('throughput is iterations per second of the window', () => {
    expect(throughputPerS(client(0, 500, 1, 0, 250_000))).toBe(2000);
  });

  it('overlap is the shared span over each window', () => {
    const o = overlap([client(0, 1, 1, 0, 1_000_000), client(1, 1, 1, 100_000, 1_200_000)]);
    expect(o.perClient).toEqual([0.9, 900_000 / 1_100_000]);
    expect(o.min).toBeCloseTo(0.8182, 4);
    expect(overlap([client(0, 1, 1, 0, 10), client(1, 1, 1, 20, 30)]).min).toBe(0);
    expect(overlap([client(0, 1, 1)])).toEqual({ perClient: [1], min: 1 });
  });
});

describe('ratios', () => {
  it('streams speedup is the median over rounds of the paired 1-stream ÷ K-stream times', () => {
    const gpu1 = [100, 110, 90];
    const gpu2 = [50, 50, 60];
    const trials = gpu1.flatMap((ms, r) => [
      ok(streams.id, r, 's1', [client(0, 1, ms)]),
      ok(streams.id, r, 's2', [client(0, 1, gpu2[r] as number)]),
    ]);
    const speedup = comparisonMetrics(streams, trials).find((m) => m.name === 'speedup-k2');
    expect(speedup?.perRound).toEqual([2, 2.2, 1.5]);
    expect(speedup?.value).toBe(2);
  });

  it('a round missing one arm is left out, not guessed', () => {
    const trials = [
      ok(streams.id, 0, 's1', [client(0, 1, 100)]),
      ok(streams.id, 0, 's2', [client(0, 1, 40)]),
      ok(streams.id, 1, 's1', [client(0, 1, 100)]),
    ];
    const speedup = comparisonMetrics(streams, trials).find((m) => m.name === 'speedup-k2');
    expect(speedup?.perRound).toEqual([2.5]);
  });

  it('contention: per-client slowdown, mean, fairness and aggregate throughput against the plain alone', () => {
    const trials = [
      ok(timeslice.id, 0, ALONE_ARM, [client(0, 1000, 1)]),
      ok(timeslice.id, 0, 'solo-c0', [client(0, 800, 1)]),
      ok(timeslice.id, 0, 'solo-c1', [client(1, 800, 1)]),
      ok(timeslice.id, 0, 'contended', [client(1, 200, 1), client(0, 500, 1)]),
    ];
    const metrics = Object.fromEntries(comparisonMetrics(timeslice, trials).map((m) => [m.name, m.value]));
    expect(metrics['slowdown-c0']).toBe(2);
    expect(metrics['slowdown-c1']).toBe(5);
    expect(metrics.slowdown).toBe(3.5);
    expect(metrics.fairness).toBe(2.5);
    expect(metrics['aggregate-throughput']).toBeCloseTo(700 / 1000, 12);
    // What the mode costs a client alone: the plain process ÷ its own client 0 alone.
    expect(metrics['solo-overhead']).toBe(1000 / 800);
  });

  it('contention in a run recorded before the plain alone: each client against its own alone', () => {
    const before = { ...timeslice, arms: timeslice.arms.filter((a) => !a.plain) };
    const trials = [
      ok(timeslice.id, 0, 'solo-c0', [client(0, 1000, 1)]),
      ok(timeslice.id, 0, 'solo-c1', [client(1, 800, 1)]),
      ok(timeslice.id, 0, 'contended', [client(1, 200, 1), client(0, 500, 1)]),
    ];
    const metrics = Object.fromEntries(comparisonMetrics(before, trials).map((m) => [m.name, m.value]));
    expect(metrics['slowdown-c0']).toBe(2);
    expect(metrics['slowdown-c1']).toBe(4);
    expect(metrics.slowdown).toBe(3);
    expect(metrics.fairness).toBe(2);
    expect(metrics['aggregate-throughput']).toBeCloseTo(700 / 900, 12);
    expect(metrics['solo-overhead']).toBeUndefined();
  });

  it('uses every round that ran, however many the policy started with', () => {
    // Rounds 0–11: twice the minimum of 6, as adaptive rounds leave them.
    const trials = Array.from({ length: 12 }, (_, r) => [
      ok(streams.id, r, 's1', [client(0, 1, 100 + r)]),
      ok(streams.id, r, 's2', [client(0, 1, 50)]),
    ]).flat();
    const speedup = comparisonMetrics(streams, trials).find((m) => m.name === 'speedup-k2');
    expect(speedup?.rounds).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(speedup?.perRound).toHaveLength(12);
  });

  it('invalid and failed trials do not count', () => {
    const trials: Trial[] = [
      ok(timeslice.id, 0, 'solo-c0', [client(0, 1000, 1)]),
      ok(timeslice.id, 0, 'solo-c1', [client(1, 1000, 1)]),
      {
        ...base,
        id: 'x',
        comparisonId: timeslice.id,
        arm: 'contended',
        round: 0,
        status: 'invalid',
        reason: 'no overlap',
        clients: [client(0, 1, 1), client(1, 1, 1)],
        overlap: null,
      },
    ];
    const slowdown = comparisonMetrics(timeslice, trials).find((m) => m.name === 'slowdown');
    expect(slowdown).toMatchObject({ perRound: [], value: null });
  });
});
