/** The one analysis: rounds grouped once, every metric counting exactly the complete rounds, the stop rule reading it. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeComparison } from '../../harness/bench/analysis/analyze.js';
import { diagnose } from '../../harness/bench/analysis/diagnosis.js';
import type { Metric } from '../../harness/bench/analysis/metrics.js';
import { groupRounds, isComplete } from '../../harness/bench/analysis/rounds.js';
import { buildPlan } from '../../harness/bench/comparisons.js';
import { checkPatterns, DEFAULT_THRESHOLDS } from '../../harness/bench/gate/thresholds.js';
import { budgetShareS, stopDecision } from '../../harness/bench/policy.js';
import type { ClientResult, Comparison, RoundPolicy, Run, Trial } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import type { MetricStats } from '../../harness/stats/statistics.js';
import { implausibleResult } from '../../harness/workload/result-validity.js';
import { H200_RUN, userErrorOf } from '../helpers.js';
import { testConfig } from './config-fixture.js';

const base = { startedAt: '2026-11-22T00:00:00Z', finishedAt: '2026-11-22T00:00:01Z' };
const config = testConfig({ modes: ['streams', 'timeslice'] });
const plan = buildPlan(config, null).comparisons;
const timeslice = plan.find((c) => c.id === 'timeslice/gemm') as Comparison;
const streams = plan.find((c) => c.id === 'streams/pipeline') as Comparison;

function client(index: number, iterations: number, gpuMs = 1): ClientResult {
  return {
    client: index,
    pid: 1,
    variant: { streams: 1 },
    windowStartUs: 0,
    windowEndUs: 500_000,
    iterations,
    gpuMs,
    latency: null,
    chunkIterations: 1,
  };
}

function trial(c: Comparison, round: number, arm: string, status: Trial['status'], value: number): Trial {
  const id = `${c.id}#r${round}/${arm}`;
  const core = { ...base, id, comparisonId: c.id, arm, round };
  const clients =
    arm === 'contended'
      ? c.clientEnv.map((_, i) => client(i, value))
      : [client(Number(/c(\d+)$/.exec(arm)?.[1] ?? 0), value, value)];
  switch (status) {
    case 'ok':
      return { ...core, status, clients, overlap: null };
    case 'invalid':
      return { ...core, status, reason: 'overlap', clients, overlap: null };
    case 'failed':
      return { ...core, status, reason: 'crash', client: 0, exitCode: 1, stderrTail: '' };
    case 'timeout':
      return { ...core, status, reason: 'hang', phase: 'window', client: 0 };
    case 'skipped':
      return { ...core, status, reason: 'stopped' };
  }
}

function runOf(trials: Trial[], comparisons = plan): Run {
  return { config, plan: comparisons, trials, samples: [], contamination: [], stops: [] } as unknown as Run;
}

const policy: RoundPolicy = { minRounds: 6, maxRounds: 40, ciTarget: 0.02, gradedCiTarget: 0.01, timeBudgetS: 20 };

describe('rounds and metrics', () => {
  it('every metric counts exactly the complete rounds of the analysis, for any trial log (property)', () => {
    const statusArb = fc.constantFrom<Trial['status']>(
      'ok',
      'ok',
      'ok',
      'ok',
      'invalid',
      'failed',
      'timeout',
      'skipped',
    );
    const entry = fc.record({
      round: fc.integer({ min: 0, max: 30 }),
      arm: fc.integer({ min: 0, max: 10 }),
      status: statusArb,
      value: fc.integer({ min: 1, max: 1000 }),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 120 }), fc.boolean(), (entries, useStreams) => {
        const c = useStreams ? streams : timeslice;
        const trials = entries.map((e) =>
          trial(c, e.round, (c.arms[e.arm % c.arms.length] as Comparison['arms'][number]).id, e.status, e.value),
        );
        const analysis = analyzeComparison(runOf(trials), c, DEFAULT_THRESHOLDS);
        const complete = analysis.rounds.filter((r) => isComplete(c, r)).map((r) => r.index);
        expect(analysis.completeRounds).toBe(complete.length);
        // Rounds are those with any trial that ran: skipped ones are not runs.
        expect(analysis.rounds.map((r) => r.index)).toEqual(
          [...new Set(entries.filter((e) => e.status !== 'skipped').map((e) => e.round))].sort((a, b) => a - b),
        );
        for (const m of analysis.metrics) {
          expect(m.metric.perRound).toHaveLength(m.metric.rounds.length);
          expect(m.metric.rounds).toEqual(complete);
          expect(m.stats.n).toBe(complete.length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the last trial of an arm in a round is the one that counts (a resumed run never has two, but the grouping does not guess)', () => {
    const rounds = groupRounds(timeslice, [
      trial(timeslice, 0, 'solo-c0', 'failed', 1),
      trial(timeslice, 0, 'solo-c0', 'ok', 5),
    ]);
    expect(rounds[0]?.trials.get('solo-c0')?.status).toBe('ok');
  });

  it('gain-over-timeslice has a value in a single run (it was n/a), from the two modes’ medians', async () => {
    const run = await loadRun(H200_RUN);
    const analysis = analyze(run);
    const gain = analysis.metrics.find((m) => m.metric.id === 'mps/infer/gain-over-timeslice');
    const ts = analysis.metrics.find((m) => m.metric.id === 'timeslice/infer/slowdown')?.stats.value as number;
    const mps = analysis.metrics.find((m) => m.metric.id === 'mps/infer/slowdown')?.stats.value as number;
    expect(gain?.stats.value).toBeCloseTo(ts / mps, 12);
    expect(gain?.metric.parts?.numerator).toHaveLength(5);
  });
});

describe('the stop rule (a pure function of the analysis)', () => {
  // A streams comparison whose per-round speedup is 2 ± spread: rounds 0..n−1.
  function analysisWith(n: number, spread: number, invalid = false) {
    const trials = Array.from({ length: n }, (_, r) => {
      // Ten distinct levels across [1 − spread, 1 + spread], in a scrambled order.
      const wobble = 1 + (spread * (((r * 7) % 10) - 4.5)) / 4.5;
      return streams.arms.map((a) =>
        trial(
          streams,
          r,
          a.id,
          invalid && r === 0 && a.id === 'pinned-s1' ? 'failed' : 'ok',
          a.id.endsWith('s2') ? 50 : 100 * wobble,
        ),
      );
    }).flat();
    return analyzeComparison(runOf(trials), streams, DEFAULT_THRESHOLDS);
  }

  it('runs the minimum first', () => {
    expect(stopDecision(analysisWith(5, 0), policy, 5, false)).toBeNull();
  });

  it('stops at ci-target once every headline ratio is narrow enough', () => {
    expect(stopDecision(analysisWith(6, 0), policy, 6, false)).toBe('ci-target');
  });

  it('keeps going while a headline CI is wide, then stops at max-rounds or the time budget', () => {
    const wide = analysisWith(6, 0.2);
    expect(wide.metrics.find((m) => m.metric.headline)?.stats.halfWidth).toBeGreaterThan(0.02);
    expect(stopDecision(wide, policy, 6, false)).toBeNull();
    expect(stopDecision(wide, policy, 6, true)).toBe('time-budget');
    expect(stopDecision(analysisWith(40, 0.2), policy, 40, false)).toBe('max-rounds');
  });

  it('a fixed count when min = max; an invalid comparison stops (more rounds cannot mend it)', () => {
    expect(stopDecision(analysisWith(6, 0.2), { ...policy, maxRounds: 6 }, 6, false)).toBe('fixed-rounds');
    expect(stopDecision(analysisWith(8, 0.2, true), policy, 8, false)).toBe('invalid');
  });

  it('splits what is left of the time budget among the comparisons still to run', () => {
    expect(budgetShareS(policy, 5, 3)).toBe(5);
    expect(budgetShareS(policy, 25, 2)).toBe(0);
  });
});

describe('result plausibility', () => {
  const work = { kind: 'fixed-duration' as const, durationMs: 500 };
  const result = (start: number, end: number, iterations = 1000, gpuMs = 500): ClientResult => ({
    ...client(0, iterations, gpuMs),
    windowStartUs: start,
    windowEndUs: end,
  });
  const T = 1_000_000_000;

  it('accepts a window where it was released', () => {
    expect(implausibleResult(result(T + 200, T + 500_200), T, T + 600_000, work)).toBeNull();
  });

  it.each([
    [
      'the wall clock (time.time()) instead of CLOCK_MONOTONIC',
      result(1.7e15, 1.7e15 + 500_000),
      /reported a window starting at 1700000000000000 µs/,
    ],
    ['a window that ends after the answer came', result(T, T + 900_000), /after its result arrived/],
    ['absurd windows', result(T, T + 1e12), /after its result arrived/],
    ['a window of the wrong length', result(T, T + 100_000), /reported a 100\.0 ms window for a 500 ms trial/],
    ['absurd iteration counts', result(T, T + 500_000, 1e15), /reported 1000000000000000 iterations/],
    [
      'more GPU time than the window',
      result(T, T + 500_000, 1000, 5000),
      /5000\.0 ms of GPU time in a 500\.0 ms window/,
    ],
  ])('refuses %s', (_, r, message) => {
    expect(implausibleResult(r, T, T + 600_000, work)).toMatch(message);
  });
});

describe('thresholds patterns', () => {
  const ids = ['mps/infer/slowdown', 'timeslice/infer/slowdown', 'timeslice/gemm/slowdown'];
  it('a pattern that matches no metric is an error naming it and the nearest ids', () => {
    const thresholds = { noiseBand: 0.02, rules: [{ pattern: 'mps/infre/slowdown', bounds: { max: 1.2 } }] };
    expect(userErrorOf(() => checkPatterns(thresholds, ids, 'gates.yaml'))).toBe(
      'gates.yaml: thresholds pattern "mps/infre/slowdown" matches no metric of this run; nearest: mps/infer/slowdown, timeslice/infer/slowdown, timeslice/gemm/slowdown',
    );
  });

  it('patterns that match pass', () => {
    expect(() =>
      checkPatterns({ noiseBand: 0.02, rules: [{ pattern: '*/infer/slowdown', bounds: { max: 9 } }] }, ids, 'f'),
    ).not.toThrow();
  });
});

describe('why a CI is wide: the stop reason in words', () => {
  const metric = { name: 'slowdown' } as Metric;
  const stats = { n: 6, outliers: [] as number[] } as unknown as MetricStats;
  const because = (reason: string) =>
    diagnose(
      { stop: { comparisonId: 'mps/infer', rounds: 6, reason, halfWidths: {} } } as never,
      metric,
      stats,
      () => [],
    );

  it('an invalid comparison is named so, not as a failed trial', () => {
    expect(because('invalid')).toEqual([
      'stopped adding rounds at 6: a validity check failed, which more rounds cannot mend (the reason is on its own line)',
    ]);
    expect(because('aborted')).toEqual(['stopped adding rounds at 6: a trial failed or timed out']);
  });
});
