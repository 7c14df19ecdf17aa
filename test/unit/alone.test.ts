/**
 * One alone for every mode (issue 50): with every mode dividing by the same plain process alone, the
 * ratio of two modes' slowdowns is the inverse ratio of their contended throughputs, within the
 * slowdowns' intervals; a run whose modes divided by their own alones need not say so, and the check says
 * where it does not.
 */

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agreements, modesAt } from '../../harness/bench/analysis/alone.js';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { buildPlan } from '../../harness/bench/comparisons.js';
import {
  ALONE_ARM,
  type ClientResult,
  type Comparison,
  type Run,
  type Trial,
} from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { openRun } from '../../harness/record/evidence.js';
import { H100_SWEEP_RUN, ROOT } from '../helpers.js';
import { testConfig } from './config-fixture.js';

const config = testConfig({ modes: ['streams', 'timeslice', 'mps'], clients: 2, clientCounts: [2], tenancy: true });
const plan = buildPlan(config, null).comparisons.filter(
  (c) => c.workload.name === 'infer' && c.arms.some((a) => a.id === 'contended'),
);

function result(client: number, perS: number): ClientResult {
  return {
    client,
    pid: 1,
    variant: { streams: 1 },
    windowStartUs: 0,
    windowEndUs: 1_000_000,
    iterations: Math.round(perS),
    gpuMs: 1,
    latency: null,
    chunkIterations: 1,
  };
}

/** Six rounds of `c`: each arm at `rate(arm, round)` per second for every client it runs. */
function trials(c: Comparison, rate: (arm: string, round: number) => number): Trial[] {
  return [0, 1, 2, 3, 4, 5].flatMap((r) =>
    c.arms.map((arm) => ({
      id: `${c.id}#r${r}/${arm.id}`,
      comparisonId: c.id,
      arm: arm.id,
      round: r,
      startedAt: '',
      finishedAt: '',
      status: 'ok' as const,
      clients: arm.clients.map((x) => result(x.client, rate(arm.id, r))),
      overlap: null,
    })),
  );
}

/** A run of the plan where each mode's clients contend at `contended[mode]`/s, and its own alone and the plain alone as given. */
function runOf(
  comparisons: Comparison[],
  contended: Record<string, number>,
  own: Record<string, number>,
  plain: number,
): Run {
  const wobble = (r: number) => 1 + (r % 3) * 0.002;
  return {
    config,
    plan: comparisons,
    trials: comparisons.flatMap((c) =>
      trials(c, (arm, r) =>
        arm === ALONE_ARM
          ? plain * wobble(r)
          : arm === 'contended'
            ? (contended[c.mode] as number)
            : (own[c.mode] as number),
      ),
    ),
    samples: [],
    contamination: [],
    stops: [],
  } as unknown as Run;
}

const CONTENDED = { streams: 1800, timeslice: 1150, mps: 1700 };
const OWN = { streams: 3100, timeslice: 3250, mps: 3000 };

describe('the plain alone: one denominator for every mode', () => {
  it("makes each pair of modes' slowdown ratio their throughput ratio, and keeps each mode's own alone as solo-overhead", () => {
    const analysis = analyze(runOf(plan, CONTENDED, OWN, 3200));
    const [at] = modesAt(analysis);
    expect(at).toMatchObject({ workload: 'infer', clients: 2, plain: true });
    // The same plain process's rate in each mode's rounds (3200/s, ±0.2% by round; iterations are whole).
    expect(at?.modes.map((m) => m.alonePerS)).toEqual([3206, 3206, 3206]);
    const pairs = agreements(at as NonNullable<typeof at>);
    expect(pairs).toHaveLength(3);
    for (const p of pairs) expect(p).toMatchObject({ agree: true });
    const overhead = analysis.metrics.find((m) => m.metric.id === 'mps/infer@2/solo-overhead');
    expect(overhead?.stats.value).toBeCloseTo(3206 / 3000, 6);
  });

  it('finds the pairs that disagree where each mode divided by its own alone (a run before 2026-12-06)', () => {
    const before = plan.map((c) => ({ ...c, arms: c.arms.filter((a) => !a.plain) }));
    const [at] = modesAt(analyze(runOf(before, CONTENDED, OWN, 3200)));
    expect(at?.plain).toBe(false);
    const apart = agreements(at as NonNullable<typeof at>).filter((p) => !p.agree);
    // The own alones differ by 3-8%, far beyond the 0.2% the rounds wobble.
    expect(apart.map((p) => [p.a, p.b])).toEqual([
      ['streams/infer@2', 'timeslice/infer@2'],
      ['streams/infer@2', 'mps/infer@2'],
      ['timeslice/infer@2', 'mps/infer@2'],
    ]);
    expect(apart[0]?.differenceLog).toBeCloseTo(Math.log(3100 / 3250), 6);
  });

  it('a pair with a slowdown without an interval is not checked, not called in agreement', () => {
    const mode = (id: string, slowdown: number, halfWidthLog: number | null) => ({
      comparisonId: id,
      mode: id.split('/')[0] as string,
      alonePerS: 3000,
      contendedPerS: 3000 / slowdown,
      slowdown,
      halfWidthLog,
    });
    const pairs = agreements({
      workload: 'infer',
      clients: 2,
      plain: true,
      modes: [mode('streams/infer@2', 1.8, 0.01), mode('mps/infer@2', 1.9, null)],
    });
    expect(pairs).toEqual([expect.objectContaining({ allowedLog: null, agree: false })]);
  });

  it("the committed sweep of 2026-12-06 (H100, every mode against the plain alone): every pair's ratios agree", async () => {
    const run = await loadRun(await openRun(path.join(ROOT, 'evidence', '2026-12-06-h100-80gb-hbm3-7ef3af.tar.br')));
    const sets = modesAt(analyze(run));
    expect(sets.map((at) => [at.clients, at.plain, at.modes.length])).toEqual([
      [2, true, 4],
      [4, true, 4],
      [8, true, 4],
    ]);
    const pairs = sets.flatMap(agreements);
    expect(pairs).toHaveLength(18);
    expect(pairs.filter((p) => !p.agree)).toEqual([]);
  });

  it("the committed sweep of 2026-11-27, each mode against its own alone: its modes' ratios disagree", async () => {
    const sweep = modesAt(analyze(await loadRun(H100_SWEEP_RUN)));
    expect(sweep.map((at) => [at.clients, at.plain])).toEqual([
      [2, false],
      [4, false],
      [8, false],
    ]);
    // At 8 tenants, green's own alone (its twin) was 8% slower than the time-sliced client's alone.
    const at8 = agreements(sweep[2] as (typeof sweep)[number]);
    expect(at8.find((p) => p.a === 'green/infer@8' && p.b === 'timeslice/infer@8')?.agree).toBe(false);
  });
});
