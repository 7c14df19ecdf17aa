/**
 * The server tenant's verdicts users act on: a capacity step's p99 claim and its length, each copy's
 * command and environment, the ratios against the dedicated copy and their intervals, the SLO over a
 * group, the generator's ceiling, and plan's answer.
 */
import { describe, expect, it } from 'vitest';
import { syntheticPrompt } from '../../harness/load/request.js';
import { analyzeGroup, analyzeServe, ceilingOf, serveAnswer } from '../../harness/serve/analysis.js';
import { cpuSplit, defaultLoadWorkers, plannedGroups } from '../../harness/serve/command.js';
import { fillCommand, memFraction, modeEnv } from '../../harness/serve/copies.js';
import { ceilingLines, serveSummary } from '../../harness/serve/markdown.js';
import { resolveServeOptions } from '../../harness/serve/options.js';
import type { ServeGroup, ServeRun, ServeSettings, WindowStats } from '../../harness/serve/record.js';
import { promptLength } from '../../harness/serve/server-member.js';
import {
  p99Verdict,
  shortStepWarning,
  stepDurationMs,
  stepVerdict,
  verdictWindowS,
} from '../../harness/serve/steps.js';
import { groupMeasuredNothing, nothingMeasured } from '../../harness/serve/verdicts.js';
import { userErrorOf } from '../helpers.js';

function win(over: Partial<WindowStats> & { tps?: number; ttftP99?: number; e2eP50?: number } = {}): WindowStats {
  const { tps = 1000, ttftP99 = 100, e2eP50 = 1000, ...rest } = over;
  const lat = (p50: number, p99: number) => ({ count: 10, p50Ms: p50, p99Ms: p99, histogram: '' });
  return {
    copies: 1,
    concurrency: 8,
    ratePerS: null,
    windowMs: 1000,
    elapsedMs: 1000,
    requests: 400,
    ok: 400,
    good: 400,
    overTtft: 0,
    failures: [],
    outputTokens: tps,
    outputTokensPerS: tps,
    requestsPerS: 10,
    ttft: lat(ttftP99 / 2, ttftP99),
    itl: lat(5, 10),
    e2e: lat(e2eP50, e2eP50 * 2),
    lagP99Ms: 0,
    generatorCpuMs: 100,
    ...rest,
  };
}

const SETTINGS: ServeSettings = {
  measure: 'bench',
  serve: 'srv --port {port}',
  api: 'completions',
  readyPath: '/v1/models',
  readyTimeoutMs: 1000,
  modes: ['timeslice', 'mps'],
  copies: [1, 2, 4],
  concurrency: 8,
  inputTokens: 16,
  inputTokensMax: null,
  outputTokens: 16,
  windowMs: 1000,
  rounds: 6,
  threadPct: null,
  mpsMemCap: false,
  sloTtftP99Ms: 500,
  sloItlMaxMs: null,
  gpuHourUsd: 3.6,
  serverCpus: null,
  generatorCpu: null,
  requestTimeoutMs: 1000,
  ceilingStepMs: 100,
  maxStepMs: 120_000,
};

function group(
  mode: ServeGroup['mode'],
  copies: number,
  shared: number[],
  dedicated = 1000,
  extra: Partial<WindowStats> = {},
): ServeGroup {
  return {
    mode,
    copies,
    status: 'measured',
    reason: null,
    rounds: shared.map((tps) => ({ dedicated: win({ tps: dedicated }), shared: win({ tps, ...extra }) })),
    steps: [],
    env: {},
  };
}

function runOf(groups: ServeGroup[], settings: Partial<ServeSettings> = {}): ServeRun {
  return {
    schema: 'gpushare.serve/1',
    id: 'r',
    status: 'complete',
    createdAt: '2026-11-27T00:00:00Z',
    finishedAt: null,
    fingerprint: { gpus: [], driverVersion: null } as unknown as ServeRun['fingerprint'],
    gpuIndex: 0,
    settings: { ...SETTINGS, ...settings },
    ceiling: [],
    groups,
    daemons: [],
    host: { cpus: 2, cpuModel: null },
    warnings: [],
  };
}

describe('a capacity step', () => {
  it('passes with 299 requests none over the TTFT target, and cannot tell with 298', () => {
    expect(stepVerdict(10, win({ requests: 299, overTtft: 0 }), 500).verdict).toBe('pass');
    const short = stepVerdict(10, win({ requests: 298, overTtft: 0 }), 500);
    expect(short.verdict).toBe('invalid');
    expect(short.reason).toContain('299 needed');
  });
  it('passes with 473 requests one over, fails over 1%', () => {
    expect(stepVerdict(10, win({ requests: 473, overTtft: 1 }), 500).verdict).toBe('pass');
    expect(stepVerdict(10, win({ requests: 472, overTtft: 1 }), 500).verdict).toBe('invalid');
    expect(stepVerdict(10, win({ requests: 400, overTtft: 5 }), 500).verdict).toBe('fail');
  });
  it("is the generator's when it sent more than 20% of the target late", () => {
    expect(stepVerdict(10, win({ lagP99Ms: 100 }), 500).verdict).toBe('pass');
    expect(stepVerdict(10, win({ lagP99Ms: 100.01 }), 500).verdict).toBe('invalid');
  });
  it('runs long enough for 473 requests and 10% more, at least the window, at most --max-step-s', () => {
    expect(stepDurationMs(100, 1000, 120_000)).toBe(5203);
    expect(stepDurationMs(1000, 1000, 120_000)).toBe(1000);
    expect(stepDurationMs(1, 1000, 120_000)).toBe(120_000);
  });
  it('warns when the search cannot make its first claim within --max-step-s: 8 req/s a copy needs 65.04 s', () => {
    expect(shortStepWarning(1, 3000, 120_000)).toBeNull();
    // 520.3 requests at 8 req/s: a step capped at 65.04 s just holds them, one at 65.03 s does not.
    expect(shortStepWarning(1, 3000, 65_040)).toBeNull();
    expect(shortStepWarning(1, 3000, 65_030)).toContain('give --max-step-s 66 or more');
    expect(shortStepWarning(1, 3000, 15_000)).toBe(
      'a rate search from 8 req/s holds about 120 requests in a 15 s step, fewer than the 473 a p99 claim needs and 10% to spare, and goes down from there: no step can get a verdict (give --max-step-s 66 or more)',
    );
    // Two copies start at 16 req/s.
    expect(shortStepWarning(2, 3000, 33_000)).toBeNull();
  });
  it('p99 within the target: holds at 95%, fails past 1%, else too few to tell', () => {
    expect(p99Verdict(299, 0)).toBe('holds');
    expect(p99Verdict(298, 0)).toBe('too few requests');
    expect(p99Verdict(200, 2)).toBe('too few requests');
    expect(p99Verdict(200, 3)).toBe('fails');
  });
});

describe("each copy's command and environment", () => {
  it('fills every placeholder, each time it appears', () => {
    expect(
      fillCommand('s --port {port} --id {index} --gpu {gpu_uuid} --mem {mem_fraction} --p2 {port}', {
        port: 8001,
        index: 3,
        gpuUuid: 'GPU-x',
        memFraction: 0.18,
      }),
    ).toBe('s --port 8001 --id 3 --gpu GPU-x --mem 0.18 --p2 8001');
  });
  it('gives memory in proportion to requests: bench, 45% the dedicated copy and 45% split among a group', () => {
    expect(memFraction('bench', 'dedicated', 1)).toBe(0.45);
    expect(memFraction('bench', 'mps', 1)).toBe(0.45);
    expect(memFraction('bench', 'mps', 4)).toBe(0.11);
    expect(memFraction('bench', 'timeslice', 3)).toBe(0.15);
    expect(memFraction('capacity', 'dedicated', 1)).toBe(0.9);
    expect(memFraction('capacity', 'mps', 4)).toBe(0.22);
  });
  it('gives MPS copies the pipe directory, and mps-threads 100 ÷ copies % each unless --thread-pct', () => {
    const mps = { CUDA_MPS_PIPE_DIRECTORY: '/p' };
    expect(modeEnv('timeslice', 4, mps, null)).toEqual({});
    expect(modeEnv('dedicated', 1, mps, null)).toEqual({});
    expect(modeEnv('mps', 4, mps, null)).toEqual(mps);
    expect(modeEnv('mps-threads', 3, mps, null)).toEqual({ ...mps, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '33' });
    expect(modeEnv('mps-threads', 3, mps, 50)).toEqual({ ...mps, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '50' });
  });
  it('with --mps-mem-cap, pins each MPS copy to its share of device 0, the one GPU it sees; never a plain copy', () => {
    const mps = { CUDA_MPS_PIPE_DIRECTORY: '/p' };
    expect(modeEnv('mps', 4, mps, null, 8908)).toEqual({ ...mps, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=8908M' });
    expect(modeEnv('mps-threads', 2, mps, null, 100)).toMatchObject({ CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=100M' });
    expect(modeEnv('timeslice', 2, mps, null, 100)).toEqual({});
    expect(modeEnv('dedicated', 1, mps, null, 100)).toEqual({});
  });
  it('plans each mode at each count; capacity measures a dedicated copy first', () => {
    expect(plannedGroups(SETTINGS).map((g) => `${g.mode}${g.copies}`)).toEqual([
      'timeslice1',
      'mps1',
      'timeslice2',
      'mps2',
      'timeslice4',
      'mps4',
    ]);
    expect(plannedGroups({ ...SETTINGS, measure: 'capacity', copies: [2] }).map((g) => `${g.mode}${g.copies}`)).toEqual(
      ['dedicated1', 'timeslice2', 'mps2'],
    );
  });
});

describe('a group against the dedicated copy', () => {
  const ceiling = ceilingOf(runOf([]));
  it('is the median of the per-round ratios, with the order-statistic CI of that median from 6 rounds', () => {
    const g = analyzeGroup(runOf([]), group('mps', 2, [900, 800, 850, 870, 820, 860]), ceiling);
    expect(g.ratios?.throughput.value).toBeCloseTo(0.855, 9);
    expect(g.ratios?.throughput.ci).toEqual([0.8, 0.9]);
    expect(g.tokensPerS?.value).toBeCloseTo(855, 9);
    const five = analyzeGroup(runOf([]), group('mps', 2, [900, 800, 850, 870, 820]), ceiling);
    expect(five.ratios?.throughput.ci).toBeNull();
  });
  it('holds the TTFT p99 SLO over every shared request at 95%, fails past 1%, else cannot tell', () => {
    const holds = analyzeGroup(runOf([]), group('mps', 2, [1, 1, 1], 1, { requests: 100, overTtft: 0 }), ceiling);
    expect(holds.slo).toEqual({ verdict: 'holds', requests: 300, over: 0 });
    const fails = analyzeGroup(runOf([]), group('mps', 2, [1, 1, 1], 1, { requests: 100, overTtft: 2 }), ceiling);
    expect(fails.slo?.verdict).toBe('fails');
    const few = analyzeGroup(runOf([]), group('mps', 2, [1], 1, { requests: 200, overTtft: 0 }), ceiling);
    expect(few.slo?.verdict).toBe('too few requests');
  });
  it('costs --gpu-hour-usd ÷ tokens per hour, per 1M output tokens', () => {
    const g = analyzeGroup(runOf([]), group('mps', 2, [1000, 1000, 1000], 500), ceiling);
    // $3.60 an hour at 1000 tokens/s: 3.6M tokens an hour, $1 per 1M; the dedicated copy at 500: $2.
    expect(g.costPer1M?.shared).toBeCloseTo(1, 9);
    expect(g.costPer1M?.dedicated).toBeCloseTo(2, 9);
  });
});

describe("the generator's ceiling", () => {
  // A null-server rate's step. The p99 is the report's, not the ceiling's: 40 ms tails at every rate move nothing.
  const step = (ratePerS: number, e2eP50: number, lagP99Ms = 1) => ({
    ratePerS,
    window: {
      ...win(),
      requestsPerS: ratePerS,
      lagP99Ms,
      e2e: { count: 1, p50Ms: e2eP50, p99Ms: 40, histogram: '' },
    },
  });

  it('is the highest null-server rate whose e2e p50 stays within 1% of the lowest e2e p50 the run measured', () => {
    const run = runOf([group('mps', 1, [1000])]);
    run.groups[0]?.rounds.forEach((r) => {
      r.dedicated.e2e.p50Ms = 500;
    });
    run.ceiling = [step(100, 2), step(200, 5), step(400, 5.01)];
    const c = ceilingOf(run);
    expect(c.allowedMs).toBe(5);
    expect(c.ratePerS).toBe(200);
    // A send lag p99 over 1% ends it as well: the generator was falling behind.
    run.ceiling = [step(100, 2), step(200, 2, 5.01), step(400, 2)];
    expect(ceilingOf(run).ratePerS).toBe(100);
    run.ceiling = [step(100, 2), step(200, 5), step(400, 5.01)];
    // A window above it is flagged.
    const g = analyzeServe(run).groups[0];
    expect(g?.overCeiling).toBe(0);
  });
  it('starts at the first rate within: slower low rates before it neither end the sweep nor are the ceiling, and are named', () => {
    const run = runOf([group('mps', 1, [1000])]);
    run.groups[0]?.rounds.forEach((r) => {
      r.dedicated.e2e.p50Ms = 500;
    });
    // As an H100 host measured: slower at 25 and 50 req/s than the 1% allowed, within from 100 to 3,200, out at 6,400.
    run.ceiling = [step(25, 6.7), step(50, 5.01), step(100, 3), step(3200, 2), step(6400, 2, 5.2), step(12800, 3)];
    const c = ceilingOf(run);
    expect(c).toMatchObject({ allowedMs: 5, fromPerS: 100, ratePerS: 3200, atLeast: false });
    const line = ceilingLines(analyzeServe(run).ceiling)[0];
    expect(line).toContain('3200 requests/s');
    expect(line).toContain(
      "Below 100 req/s the null servers' e2e p50 was over it (6.700 ms at 25 req/s, 5.010 ms at 50 req/s)",
    );
    // None within: no ceiling, nothing named below.
    run.ceiling = [step(25, 6.7), step(50, 5.01)];
    expect(ceilingOf(run)).toMatchObject({ ratePerS: null, fromPerS: null });
  });
});

describe('cores', () => {
  it('gives half the allowed cores to the generator and its workers and the rest to the servers, from 4 cores with taskset', () => {
    expect(cpuSplit([8, 9, 10, 11], true)).toEqual({ generatorCpu: 8, generatorCpus: '8,9', serverCpus: '10,11' });
    const sixteen = cpuSplit(
      Array.from({ length: 16 }, (_, i) => i),
      true,
    );
    expect(sixteen?.generatorCpus).toBe('0,1,2,3,4,5,6,7');
    // --load-workers sets the generator's share; the servers keep 2 cores at least.
    expect(cpuSplit([0, 1, 2, 3, 4, 5], true, 1)).toEqual({
      generatorCpu: 0,
      generatorCpus: '0',
      serverCpus: '1,2,3,4,5',
    });
    expect(cpuSplit([0, 1, 2, 3], true, 16)?.serverCpus).toBe('2,3');
    expect(defaultLoadWorkers(2, null)).toBe(1);
    expect(defaultLoadWorkers(64, null)).toBe(16);
    expect(defaultLoadWorkers(16, sixteen)).toBe(8);
    expect(cpuSplit([0, 1, 2], true)).toBeNull();
    expect(cpuSplit([0, 1, 2, 3], false)).toBeNull();
    expect(cpuSplit([], true)).toBeNull();
  });
});

describe("the ceiling's words", () => {
  const step = (ratePerS: number, e2eP50: number, ok = 400) => ({
    ratePerS,
    window: { ...win({ ok }), requestsPerS: ratePerS, e2e: { count: 1, p50Ms: e2eP50, p99Ms: 40, histogram: '' } },
  });
  const runWith = (steps: ReturnType<typeof step>[]) => {
    const run = runOf([group('mps', 1, [1000])]);
    for (const r of run.groups[0]?.rounds ?? []) {
      r.dedicated.e2e.p50Ms = 500;
      r.shared.e2e.p50Ms = 500;
    }
    run.ceiling = steps;
    return run;
  };
  it('says "at least" when the top of the sweep was still within 1%, and flags nothing under it', () => {
    const run = runWith([step(100, 1), step(200, 5)]);
    const a = analyzeServe(run);
    expect(a.ceiling).toMatchObject({ ratePerS: 200, atLeast: true });
    expect(ceilingLines(a.ceiling)[0]).toContain('at least 200 requests/s');
    expect(a.groups[0]?.overCeiling).toBe(0);
  });
  it('stops at the first rate that fell out: a step with a failed request, though fast, is not the ceiling', () => {
    const a = analyzeServe(runWith([step(100, 1), step(200, 1, 399), step(400, 1)]));
    expect(a.ceiling).toMatchObject({ ratePerS: 100, atLeast: false });
  });
  it('with none found, says so and counts every window unverified', () => {
    const a = analyzeServe(runWith([step(100, 6)]));
    expect(a.ceiling.ratePerS).toBeNull();
    expect(ceilingLines(a.ceiling)[0]).toContain('no window is verified against it');
    expect(a.groups[0]?.overCeiling).toBe(2);
    expect(ceilingLines(analyzeServe(runWith([])).ceiling)[0]).toContain('not measured');
  });
});

describe("plan's answer from a server run", () => {
  it('is the most copies whose TTFT p99 held with no failed request, then the most tokens/s', () => {
    const run = runOf([
      group('timeslice', 2, [1000, 1000, 1000]),
      group('mps', 2, [1500, 1500, 1500]),
      group('mps', 4, [1, 1, 1], 1000, { overTtft: 100 }),
    ]);
    const plan = serveAnswer(run, analyzeServe(run));
    expect(plan.mode).toBe('mps');
    expect(plan.copies).toBe(2);
    expect(plan.answer).toContain('2 copies per GPU under mps');
  });
  it('never names a group with a failed request, though its TTFT p99 held and it had the most copies', () => {
    const run = runOf([
      group('timeslice', 2, [1000, 1000, 1000]),
      // One failed request per window, not counted over the TTFT target: the SLO holds on what was served.
      group('mps', 4, [3000, 3000, 3000], 1000, { ok: 399 }),
    ]);
    const analysis = analyzeServe(run);
    expect(analysis.groups[1]).toMatchObject({ failedRequests: 3, slo: { verdict: 'holds' } });
    const plan = serveAnswer(run, analysis);
    expect([plan.mode, plan.copies]).toEqual(['timeslice', 2]);
  });
  it('names a tie where the throughput intervals overlap', () => {
    const run = runOf([
      group('timeslice', 2, [900, 1000, 1100, 950, 1050, 1000]),
      group('mps', 2, [950, 1050, 1150, 1000, 1100, 1050]),
    ]);
    const plan = serveAnswer(run, analyzeServe(run));
    expect(plan.mode).toBe('mps');
    expect(plan.tiedWith).toEqual(['timeslice']);
  });
  it('too few requests for a claim is no verdict, not a failure: the requests a claim needs and the --window-s that gets them', () => {
    // 6 rounds of 1 s windows, 22 requests each: 132 of the 299 a claim with none over needs; 299 × 1.1 ÷ 132 s.
    const run = runOf([group('timeslice', 1, [1, 1, 1, 1, 1, 1], 1, { requests: 22, overTtft: 0 })]);
    const analysis = analyzeServe(run);
    expect(serveAnswer(run, analysis)).toMatchObject({
      mode: null,
      answer:
        'no verdict: a p99 claim needs 299 requests with none over the SLO (473 with one) and the most a group had was 132: give --window-s 3 or more',
    });
    expect(serveSummary(run, analysis)).toContain('; SLO no verdict (132 requests, 299 needed)\n');
    // A group that missed the SLO beside one with too few: no group held it, and the short one has no verdict.
    const mixed = runOf([
      group('timeslice', 1, [1, 1, 1, 1, 1, 1], 1, { requests: 22, overTtft: 0 }),
      group('mps', 1, [1, 1, 1, 1, 1, 1], 1, { requests: 100, overTtft: 20 }),
    ]);
    expect(serveAnswer(mixed, analyzeServe(mixed)).answer).toBe(
      'no mode and count measured held TTFT p99 <= 500 ms at 8 requests resident per copy; no verdict for 1 of 2 groups: a p99 claim needs 299 requests with none over the SLO (473 with one) and the most a group had was 132: give --window-s 3 or more',
    );
  });
  it.each([
    [1, 132, 3],
    [1, 328, 2],
    [1, 329, 1],
    [2, 132, 5],
  ])(
    'at %i s windows and %i requests, --window-s %i gets the 299 a claim needs and 10%% more',
    (windowS, requests, got) => {
      expect(verdictWindowS(windowS * 1000, [{ requests, over: 0 }])).toBe(got);
    },
  );
  it('answers none when no group held the SLO, or a request failed', () => {
    const run = runOf([group('mps', 2, [1000], 1000, { requests: 400, ok: 399, overTtft: 1 })]);
    expect(serveAnswer(run, analyzeServe(run)).mode).toBeNull();
  });
});

describe('a window or group that measured nothing', () => {
  const none = { count: 0, p50Ms: null, p99Ms: null, histogram: '' };
  it('no request ended ok: each failure kind named; ok requests with no token; one token is something', () => {
    expect(nothingMeasured(win({ ok: 0, failures: ['http-error: HTTP 307', 'timeout: no complete response'] }))).toBe(
      'none of 400 requests ended ok (http-error: HTTP 307; timeout: no complete response)',
    );
    expect(nothingMeasured(win({ requests: 0, ok: 0 }))).toBe('no request was sent');
    expect(nothingMeasured(win({ ttft: none }))).toBe('all 400 requests that ended ok carried no output token');
    expect(nothingMeasured(win({ ok: 1, ttft: { ...none, count: 1 } }))).toBeNull();
  });

  it('a recorded group called measured with such a window in either arm of a round reads as failed', () => {
    for (const arm of ['dedicated', 'shared'] as const) {
      const g = group('mps', 2, [1000, 1000]);
      (g.rounds[1] as ServeGroup['rounds'][number])[arm] = win({ ok: 0, failures: ['http-error: HTTP 307'] });
      const run = runOf([g]);
      const analysis = analyzeServe(run);
      expect(analysis.groups[0]).toMatchObject({
        status: 'failed',
        reason: `round 2, the ${arm} window measured nothing: none of 400 requests ended ok (http-error: HTTP 307)`,
      });
      expect(serveAnswer(run, analysis)).toMatchObject({
        mode: null,
        answer: 'no group was measured: each failed or was skipped (its reason is above)',
      });
    }
  });

  it('a rate search: failed when no step measured anything; a step with nothing after one with something is a failed step', () => {
    const step = (rate: number, w: WindowStats) => stepVerdict(rate, w, 500);
    const broken = { ...group('mps', 1, []), steps: [step(8, win({ ok: 0 })), step(4, win({ ok: 0 }))] };
    expect(groupMeasuredNothing(broken)).toBe(
      'no step of the rate search measured anything: at 8 req/s, none of 400 requests ended ok (no failure recorded)',
    );
    const overloaded = { ...group('mps', 1, []), steps: [step(8, win()), step(16, win({ ok: 0, overTtft: 400 }))] };
    expect(groupMeasuredNothing(overloaded)).toBeNull();
    expect(overloaded.steps[1]?.verdict).toBe('fail');
  });
});

describe('a run of many windows', () => {
  it("300,000 windows (more than Math.min(...) takes as arguments): the generator's ceiling still finds the lowest e2e p50", () => {
    // 145 groups of 1000 rounds is what a record may hold; one group of them all here, for a test that runs in a moment.
    const g = group('mps', 2, [1000]);
    const round = g.rounds[0] as ServeGroup['rounds'][number];
    const lowest = { ...round, shared: win({ e2eP50: 400 }) };
    const many = { ...g, rounds: [...Array.from({ length: 150_000 }, () => round), lowest] };
    expect(ceilingOf(runOf([many])).allowedMs).toBe(4);
  });
});

describe('--ready-path', () => {
  it.each(['//127.0.0.2:9/health', '/\\127.0.0.2/health', '///x'])(
    'refuses %s, which leaves the copy’s host',
    (readyPath) => {
      expect(userErrorOf(() => resolveServeOptions({ serve: 's {port}', readyPath }, 'bench'))).toContain(
        "it names another host (a path starting with // or /\\); give a path on the copy's own server",
      );
    },
  );
  it('takes a path on the copy, query and all', () => {
    expect(resolveServeOptions({ serve: 's {port}', readyPath: '/health?x=//y' }, 'bench').settings.readyPath).toBe(
      '/health?x=//y',
    );
  });
});

describe('--input-tokens', () => {
  const of = (inputTokens: string) => resolveServeOptions({ serve: 's {port}', inputTokens }, 'bench').settings;
  it('is one length, or a uniform range low-high', () => {
    expect(of('128')).toMatchObject({ inputTokens: 128, inputTokensMax: null });
    expect(of('64-256')).toMatchObject({ inputTokens: 64, inputTokensMax: 256 });
    expect(of('64-64')).toMatchObject({ inputTokens: 64, inputTokensMax: 64 });
  });
  it('refuses a range backwards, and what is no length', () => {
    expect(userErrorOf(() => of('256-64'))).toBe('--input-tokens 256-64: give the range low-high, e.g. 64-256');
    expect(userErrorOf(() => of('0-64'))).toContain('--input-tokens');
    expect(userErrorOf(() => of('many'))).toContain('--input-tokens');
  });
});

describe('prompts', () => {
  it('start with a word of their own, so no prefix cache can skip a prefill', () => {
    expect(syntheticPrompt(4)).toBe('hello world hello world');
    expect(syntheticPrompt(4, 'a1b2')).toBe('a1b2 world hello world');
  });
  it('draw a length in the range by request index alone: every copy and arm asks the same', () => {
    const lengths = Array.from({ length: 200 }, (_, i) => promptLength(64, 256, i));
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(64);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(256);
    expect(new Set(lengths).size).toBeGreaterThan(50);
    expect(Array.from({ length: 200 }, (_, i) => promptLength(64, 256, i))).toEqual(lengths);
    expect(promptLength(7, 7, 3)).toBe(7);
  });
});
