/**
 * One baseline for every mode, and the harness's own loop checked in every process: every mode's ratios
 * divide by the plain process alone (ALONE_ARM), each mode's own alone is a ratio of its own (solo-overhead),
 * green's in-slice alone is a second, named ratio; runs from before the plain alone keep their own alone;
 * the run command asks each process to check its loop in the first trial where it runs alone, and a check
 * over the limit warns.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { loopCheck } from '../../harness/bench/analysis/clients.js';
import { groupRounds } from '../../harness/bench/analysis/rounds.js';
import { buildPlan, loopCheckMs, orderTrials } from '../../harness/bench/comparisons.js';
import { settingMismatches } from '../../harness/bench/gate/gate.js';
import {
  ALONE_ARM,
  type ClientResult,
  type Comparison,
  measuredLoop,
  type Run,
  SLICE_SOLO_ARM,
  type Trial,
} from '../../harness/bench/record/schema.js';
import { LOOP_CHECK_MS, LOOP_OVERHEAD_LIMIT_PCT, type LoopOverhead } from '../../harness/workload/protocol.js';
import { testConfig } from './config-fixture.js';

const config = testConfig({
  modes: ['streams', 'green', 'timeslice'],
  clients: 2,
  clientCounts: [2, 4],
  tenancy: true,
});
const plan = buildPlan(config, null).comparisons;
const byId = (id: string) => plan.find((c) => c.id === id) as Comparison;
const base = { startedAt: '2026-11-27T00:00:00Z', finishedAt: '2026-11-27T00:00:01Z' };

function result(client: number, iterations: number, loopOverhead?: LoopOverhead): ClientResult {
  return {
    client,
    pid: 1,
    variant: { streams: 1 },
    windowStartUs: 0,
    windowEndUs: 1_000_000,
    iterations,
    gpuMs: 1,
    latency: null,
    chunkIterations: 1,
    ...(loopOverhead ? { loopOverhead } : {}),
  };
}

/** Round r of `c`: each arm's clients at the throughput `rate(arm)` (iterations in a 1 s window). */
function round(c: Comparison, r: number, rate: (arm: string) => number): Trial[] {
  return c.arms.map((arm) => ({
    ...base,
    id: `${c.id}#r${r}/${arm.id}`,
    comparisonId: c.id,
    arm: arm.id,
    round: r,
    status: 'ok' as const,
    clients: arm.clients.map((x) => result(x.client, rate(arm.id))),
    overlap: null,
  }));
}

function runOf(comparisons: Comparison[], trials: Trial[]): Run {
  return { config, plan: comparisons, trials, samples: [], contamination: [], stops: [] } as unknown as Run;
}

const metricValue = (run: Run, id: string) => analyze(run).metrics.find((m) => m.metric.id === id)?.stats.value;

describe('one baseline: the plain process alone on the whole GPU', () => {
  // The plain process alone: 3200/s. Tenant 0 alone: 3000/s on the whole GPU, 1000/s in its slice of half
  // the SMs; 800/s each together.
  const green = byId('green/infer@2');
  const rates = (arm: string) =>
    arm === ALONE_ARM ? 3200 : arm === 'solo-c0' ? 3000 : arm === SLICE_SOLO_ARM ? 1000 : 800;
  const run = runOf(
    [green],
    [0, 1, 2, 3, 4, 5].flatMap((r) => round(green, r, rates)),
  );

  it('every contention comparison but MIG and a cross-GPU check measures the plain alone first in its rounds', () => {
    for (const c of plan.filter((x) => x.arms.some((a) => a.id === 'contended')))
      expect([c.id, c.arms[0]]).toEqual([
        c.id,
        { id: ALONE_ARM, plain: true, clients: [{ client: 0, variant: { streams: 1 } }], work: c.arms[1]?.work },
      ]);
    const mig = buildPlan(testConfig({ modes: ['mig'], clients: 2 }), null).comparisons;
    expect(mig.flatMap((c) => c.arms.filter((a) => a.plain))).toEqual([]);
  });

  it("green's slowdown and aggregate throughput divide by the plain alone, as every mode's do; its own alone is solo-overhead", () => {
    expect(metricValue(run, 'green/infer@2/slowdown')).toBeCloseTo(3200 / 800, 9);
    expect(metricValue(run, 'green/infer@2/aggregate-throughput')).toBeCloseTo((2 * 800) / 3200, 9);
    expect(metricValue(run, 'green/infer@2/solo-overhead')).toBeCloseTo(3200 / 3000, 9);
  });

  it("a run recorded before the plain alone divides by each mode's own alone, and has no solo-overhead of its own", () => {
    const before: Comparison = { ...green, arms: green.arms.filter((a) => !a.plain) };
    const old = runOf(
      [before],
      [0, 1, 2, 3, 4, 5].flatMap((r) => round(before, r, rates)),
    );
    expect(metricValue(old, 'green/infer@2/slowdown')).toBeCloseTo(3000 / 800, 9);
    expect(metricValue(old, 'green/infer@2/aggregate-throughput')).toBeCloseTo((2 * 800) / 3000, 9);
    expect(metricValue(old, 'green/infer@2/solo-overhead')).toBeUndefined();
  });

  it('its in-slice alone is a second ratio, named so, and what the slice costs a lone tenant', () => {
    expect(metricValue(run, 'green/infer@2/in-slice-slowdown')).toBeCloseTo(1000 / 800, 9);
    expect(metricValue(run, 'green/infer@2/slice-cost')).toBeCloseTo(3000 / 1000, 9);
    const headlines = analyze(run)
      .verdicts.filter((v) => v.metric.comparisonId === green.id)
      .map((v) => v.metric.name);
    expect(headlines).toEqual(['slowdown']);
  });

  it('a green run recorded before the whole-GPU arm keeps only its in-slice ratios, named so', () => {
    const legacy: Comparison = { ...green, arms: green.arms.filter((a) => a.id !== SLICE_SOLO_ARM && !a.plain) };
    const old = runOf(
      [legacy],
      [0, 1, 2, 3, 4, 5].flatMap((r) => round(legacy, r, (a) => (a === 'solo-c0' ? 1000 : 800))),
    );
    const names = analyze(old).metrics.map((m) => m.metric.name);
    expect(names).toEqual(['in-slice-slowdown', 'in-slice-aggregate-throughput', 'fairness']);
    expect(metricValue(old, 'green/infer@2/in-slice-slowdown')).toBeCloseTo(1000 / 800, 9);
  });

  it('every slowdown says which alone it divides by', () => {
    const ts = byId('timeslice/infer@2');
    const before: Comparison = { ...ts, arms: ts.arms.filter((a) => !a.plain) };
    const runOfRates = (c: Comparison) =>
      runOf(
        [c],
        [0, 1, 2, 3, 4, 5].flatMap((r) => round(c, r, (a) => (a === 'contended' ? 500 : 1000))),
      );
    const description = (r: Run, id: string) => analyze(r).metrics.find((m) => m.metric.id === id)?.metric.description;
    expect(description(runOfRates(ts), 'timeslice/infer@2/slowdown')).toContain(
      'a plain process alone on the whole GPU, the same process for every mode',
    );
    expect(description(runOfRates(before), 'timeslice/infer@2/slowdown')).toContain(
      'one client alone on the whole GPU',
    );
    expect(description(run, 'green/infer@2/solo-overhead')).toContain('outside any green context');
  });
});

describe('the check of the protocol loop', () => {
  const asked = (c: Comparison, rounds = 2) =>
    orderTrials(c, rounds)
      .filter((t) => loopCheckMs(t) !== null)
      .map((t) => `r${t.round}/${t.arm.id}`);

  it('is asked once per process, in round 0, in the first arm where it runs alone', () => {
    expect(asked(byId('timeslice/infer@2'))).toEqual(['r0/solo-c0', 'r0/solo-c1']);
    expect(asked(byId('timeslice/infer@4'))).toEqual(['r0/solo-c0']);
    expect(asked(byId('streams/infer@2'))).toEqual(['r0/solo-c0']);
    // Green: on the whole GPU, not in its slice.
    expect(asked(byId('green/infer@2'))).toEqual(['r0/solo-c0']);
    // The lab's fixed work: its one-stream arm, not the two-stream one.
    const lab = plan.find((c) => c.mode === 'streams' && c.tenants === undefined && c.arms.some((a) => a.id === 's1'));
    expect(asked(lab as Comparison)).toEqual(['r0/s1']);
    // The plain process is a plain client alone, as time-slicing's solo arms check: not checked again.
    expect(orderTrials(byId('timeslice/infer@2'), 1).map(loopCheckMs)).toEqual([
      null,
      LOOP_CHECK_MS,
      LOOP_CHECK_MS,
      null,
    ]);
  });

  const overhead = (pct: number): LoopOverhead => ({
    bareUsPerRequest: 300,
    loopUsPerRequest: 300 * (1 + pct / 100),
    overheadPct: pct,
    pairs: 4,
    requestsPerBlock: 100,
  });
  const checked = (pct: number) => {
    const c = byId('timeslice/infer@4');
    const trials = round(c, 0, () => 1000).map((t) =>
      t.status === 'ok' && t.arm === 'solo-c0' ? { ...t, clients: [result(0, 1000, overhead(pct))] } : t,
    );
    return { c, run: runOf([c], trials), check: loopCheck(groupRounds(c, trials)) };
  };

  it("with 8 pairs, flags only where every pair is over the limit (the median's interval lies above it)", () => {
    const ranged = (pct: number, low: number) => {
      const c = byId('timeslice/infer@4');
      const o = { ...overhead(pct), overheadPctLow: low, overheadPctHigh: pct + 1, pairs: 8 };
      const trials = round(c, 0, () => 1000).map((t) =>
        t.status === 'ok' && t.arm === 'solo-c0' ? { ...t, clients: [result(0, 1000, o)] } : t,
      );
      return loopCheck(groupRounds(c, trials)).flagged;
    };
    expect(ranged(2.34, LOOP_OVERHEAD_LIMIT_PCT)).toBe(false);
    expect(ranged(2.34, LOOP_OVERHEAD_LIMIT_PCT + 0.01)).toBe(true);
    expect(ranged(0.5, -0.4)).toBe(false);
  });

  it(`without an interval (4 pairs), flags a median over ${LOOP_OVERHEAD_LIMIT_PCT}% of a request, and only then`, () => {
    expect(checked(LOOP_OVERHEAD_LIMIT_PCT).check).toMatchObject({ worstPct: LOOP_OVERHEAD_LIMIT_PCT, flagged: false });
    expect(checked(LOOP_OVERHEAD_LIMIT_PCT + 0.01).check.flagged).toBe(true);
    expect(checked(-0.5).check).toMatchObject({ worstPct: -0.5, flagged: false });
  });

  it("a flagged check is a warning on the comparison's ratios", () => {
    const warnings = (pct: number) =>
      analyze(checked(pct).run).metrics.find((m) => m.metric.id === 'timeslice/infer@4/slowdown')?.warnings ?? [];
    expect(warnings(1.5).join(' ')).toContain('protocol loop cost 1.50% of a request');
    expect(warnings(0.5)).toEqual([]);
  });

  it('no check recorded (a run before 2026-11-27) is no check, not a pass', () => {
    const c = byId('timeslice/infer@4');
    expect(
      loopCheck(
        groupRounds(
          c,
          round(c, 0, () => 1000),
        ),
      ),
    ).toEqual({ checks: [], worstPct: null, flagged: false });
  });
});

describe('runs of two loops are not measured alike', () => {
  const c = byId('timeslice/infer@2');
  const check: LoopOverhead = {
    bareUsPerRequest: 300,
    loopUsPerRequest: 301,
    overheadPct: 0.3,
    pairs: 4,
    requestsPerBlock: 100,
  };
  const old = runOf(
    [c],
    round(c, 0, () => 1000),
  );
  const checked = runOf(
    [c],
    round(c, 0, () => 1000).map((t) =>
      t.status === 'ok' && t.arm === 'solo-c0' ? { ...t, clients: [result(0, 1000, check)] } : t,
    ),
  );

  it('a run says its loop, or its loop checks do; before 2026-11-27 it was loop 1', () => {
    expect(measuredLoop(old)).toBe(1);
    expect(measuredLoop(checked)).toBe(2);
    expect(measuredLoop({ ...old, loop: 2 })).toBe(2);
  });

  it('the gate and the fleet report name a loop that differs as a setting', () => {
    expect(settingMismatches({ ...old, loop: 2 }, old)).toEqual(['protocol loop: 1 before vs 2 now']);
    expect(settingMismatches(checked, { ...old, loop: 2 })).toEqual([]);
  });
});
