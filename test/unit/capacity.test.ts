/** Capacity at a latency target: the p99 claim's early-stopping test, histogram merging, the rate search, the result checks, the table and progress. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { capacityMarkdown } from '../../harness/capacity/markdown.js';
import { type CapacityArgs, resolveCapacityOptions } from '../../harness/capacity/options.js';
import { stepLine } from '../../harness/capacity/progress.js';
import { type CapacityPoint, type CapacityRun, loadCapacityRun } from '../../harness/capacity/record.js';
import { capacityStepMs, LATENCIES_A_WINDOW } from '../../harness/capacity/step-window.js';
import {
  type CapacityRow,
  capacityExitCode,
  capacitySummary,
  capacityTable,
  capacityText,
} from '../../harness/capacity/table.js';
import { nextRate } from '../../harness/experiment/rate-search.js';
import { p99Holds, requestsNeeded } from '../../harness/stats/p99.js';
import { encodeLatencies, invalidStep, type StepVerdict } from '../../harness/workload/open-loop.js';
import { workloadText } from '../../harness/workload/spec.js';
import { analyzeStep, capacityOf } from '../../harness/workload/verdicts.js';
import { CAPACITY_RUN, ROOT, userErrorOf } from '../helpers.js';

const client = (latenciesMs: number[], targetMs: number, scheduleLagMs = 0) => ({
  requests: latenciesMs.length,
  overTarget: latenciesMs.filter((v) => v > targetMs).length,
  scheduleLagMs,
  histogram: encodeLatencies(latenciesMs),
});

describe('the p99 claim', () => {
  it('needs 299 requests with none over the target, 473 with one (95% confidence that at most 1% are over)', () => {
    expect([p99Holds(298, 0), p99Holds(299, 0)]).toEqual([false, true]);
    expect(requestsNeeded(0)).toBe(299);
    expect(requestsNeeded(1)).toBe(473);
    expect(p99Holds(1000, 10)).toBe(false); // exactly 1% over is not "at most 1%" with confidence
  });
});

describe('a step', () => {
  it('merges the clients as one histogram: the p99 of all requests, not an average of per-client p99s', () => {
    const fast = Array.from({ length: 400 }, () => 1);
    const slow = Array.from({ length: 400 }, () => 9);
    const step = analyzeStep({ totalQps: 400, windowS: 2, clients: [client(fast, 10), client(slow, 10)] }, 10);
    expect(step.requests).toBe(800);
    expect(step.p99Ms).toBeCloseTo(9, 1);
    expect(step.p50Ms).toBeCloseTo(1, 1);
    expect(step.fairness).toBeCloseTo(9, 1);
    expect(step).toMatchObject({ overTarget: 0, goodputQps: 400, verdict: 'pass' });
  });

  it('fails with over 1% over the target, and is invalid when a generator lagged its schedule while idle', () => {
    const some = Array.from({ length: 400 }, (_, i) => (i % 50 === 0 ? 20 : 1));
    expect(analyzeStep({ totalQps: 200, windowS: 2, clients: [client(some, 10)] }, 10)).toMatchObject({
      overTarget: 8,
      verdict: 'fail',
    });
    const lagging = analyzeStep({ totalQps: 200, windowS: 2, clients: [client(Array(400).fill(1), 10, 3)] }, 10);
    expect(lagging.verdict).toBe('invalid');
    expect(lagging.reason).toMatch(/3\.0 ms late \(p99\) while its worker was idle/);
  });
});

describe('the rate search', () => {
  const policy = { startQps: 100, tolerance: 0.05, maxSteps: 12, minQps: 1 };
  /** Runs the search against a GPU whose capacity is `limit` req/s; returns the rates tried. */
  function search(limit: number, invalidAbove = Infinity): Array<{ totalQps: number; verdict: StepVerdict }> {
    const steps: Array<{ totalQps: number; verdict: StepVerdict }> = [];
    for (let rate = nextRate(steps, policy); rate !== null; rate = nextRate(steps, policy)) {
      steps.push({ totalQps: rate, verdict: rate > invalidAbove ? 'invalid' : rate <= limit ? 'pass' : 'fail' });
    }
    return steps;
  }

  it('doubles while steps pass, then bisects until the failing rate is within 5% of the passing one', () => {
    const steps = search(1000);
    expect(steps.slice(0, 5).map((s) => s.totalQps)).toEqual([100, 200, 400, 800, 1600]);
    const found = capacityOf(
      steps.map((s) => ({
        ...s,
        requests: 0,
        p50Ms: 0,
        p90Ms: 0,
        p99Ms: 0,
        p999Ms: 0,
        overTarget: 0,
        goodputQps: 0,
        fairness: 1,
        maxLagMs: 0,
        reason: '',
      })),
    );
    expect(found.capacityQps).toBeLessThanOrEqual(1000);
    expect((found.failedAtQps as number) / (found.capacityQps as number) - 1).toBeLessThanOrEqual(0.05 + 1e-9);
  });

  it('goes down when the first rate fails, and gives up below the floor', () => {
    expect(
      search(30)
        .slice(0, 3)
        .map((s) => s.totalQps),
    ).toEqual([100, 50, 25]);
    expect(search(0).every((s) => s.verdict === 'fail')).toBe(true);
  });

  it('an invalid step bounds the search from above like a failing one', () => {
    const steps = search(10_000, 500);
    expect(Math.max(...steps.filter((s) => s.verdict === 'pass').map((s) => s.totalQps))).toBeLessThanOrEqual(500);
  });
});

describe('the result checks on a step (bench’s, shared)', () => {
  const T = 1_000_000_000;
  const claim = (client: number, startUs: number, endUs: number) => ({
    client,
    windowStartUs: startUs,
    windowEndUs: endUs,
    iterations: 400,
    gpuMs: 0,
  });

  it('passes windows released together; a backlog served past the window is a result, not a misalignment', () => {
    expect(invalidStep([claim(0, T, T + 2e6), claim(1, T + 100, T + 2e6)], T, T + 2.1e6, 2000)).toBeNull();
    expect(invalidStep([claim(0, T, T + 2e6), claim(1, T, T + 4e6)], T, T + 4.1e6, 2000)).toBeNull();
  });

  it('refuses a window on the wall clock, one after the answer came, and windows that barely overlap', () => {
    expect(invalidStep([claim(0, 1.7e15, 1.7e15 + 2e6)], T, T + 2.1e6, 2000)).toMatch(
      /client 0 reported a window starting at 1700000000000000 µs.*CLOCK_MONOTONIC µs expected/,
    );
    expect(invalidStep([claim(0, T, T + 3e6)], T, T + 2.1e6, 2000)).toMatch(/after its result arrived/);
    expect(invalidStep([claim(0, T, T + 2e6), claim(1, T + 900_000, T + 2.9e6)], T, T + 3e6, 2000)).toBe(
      "the contended windows overlapped 55.0% of a client's window, below the 90% required",
    );
  });

  it('a step whose latencies the workload did not all report is invalid, saying what rate its window can measure', () => {
    const capped = { ...client(Array(400).fill(1), 10), requests: 500, unreported: 100 };
    expect(analyzeStep({ totalQps: 250, windowS: 2, clients: [capped] }, 10)).toMatchObject({
      verdict: 'invalid',
      reason:
        '100 of 500 requests served had no latency reported: the workload reports at most 400 a window, so 2000 ms steps measure up to about 200 req/s',
    });
    expect(analyzeStep({ totalQps: 250, windowS: 2, clients: [{ ...capped, unreported: 0 }] }, 10).verdict).toBe(
      'pass',
    );
  });

  it('a step the checks refused is invalid, whatever its latencies', () => {
    const step = { totalQps: 200, windowS: 2, clients: [client(Array(400).fill(1), 10)], invalid: 'the windows…' };
    expect(analyzeStep(step, 10)).toMatchObject({ verdict: 'invalid', reason: 'the windows…' });
    expect(analyzeStep({ ...step, invalid: null }, 10).verdict).toBe('pass');
  });
});

describe('the capacity table: only what was measured', () => {
  const ok = Array(400).fill(1);
  const slow = Array(400).fill(20);
  const step = (totalQps: number, latencies: number[], invalid: string | null = null) => ({
    totalQps,
    windowS: 2,
    clients: [client(latencies, 10)],
    invalid,
  });
  const runOf = (points: CapacityPoint[], status: CapacityRun['status'] = 'complete') =>
    ({ status, settings: { sloP99Ms: 10 }, points }) as unknown as CapacityRun;
  /** A point without its mode and client count, each status with its own fields. */
  type Body = CapacityPoint extends infer P ? (P extends CapacityPoint ? Omit<P, 'mode' | 'clients'> : never) : never;
  const row = (point: Body, status?: CapacityRun['status']) =>
    capacityTable(runOf([{ mode: 'timeslice', clients: 2, ...point } as CapacityPoint], status))[0] as CapacityRow;

  it('a point whose every step was invalid is invalid with the reason, never "failed", and exits 3', () => {
    const r = row({ status: 'measured', steps: [step(200, ok, 'late windows'), step(100, ok, 'late windows')] });
    expect(r).toMatchObject({ status: 'invalid', reason: 'no valid step in 2: late windows', capacityQps: null });
    expect(capacityText(r)).toBe('invalid: no valid step in 2: late windows');
    expect(capacityExitCode([r])).toBe(3);
  });

  it('no rate passed and the lowest tried was invalid: invalid, though a higher rate failed', () => {
    const r = row({ status: 'measured', steps: [step(200, slow), step(100, ok, 'late windows')] });
    expect(r.status).toBe('invalid');
    expect(r.reason).toBe('no rate passed, and the lowest tried (100 req/s) was invalid: late windows');
  });

  it('a point interrupted before its first step says so (also in runs recorded before points were marked)', () => {
    const r = row({ status: 'interrupted', reason: 'SIGINT came before its first step', steps: [] });
    expect(capacityText(r)).toBe('interrupted: SIGINT came before its first step');
    expect(row({ status: 'measured', steps: [] }, 'interrupted')).toMatchObject({ status: 'interrupted' });
    expect(row({ status: 'measured', steps: [] }, 'complete')).toMatchObject({ status: 'invalid' });
  });

  it('a bound is said as one: ≥ N when no rate failed within --max-steps, when only invalid rates lie above, or when interrupted', () => {
    const untried = row({ status: 'measured', steps: [step(100, ok), step(200, ok)] });
    expect(capacityText(untried)).toBe('≥ 200 req/s (no rate failed within --max-steps 2)');
    expect(capacityExitCode([untried])).toBe(0);
    const invalidAbove = row({ status: 'measured', steps: [step(100, ok), step(200, ok, 'late windows')] });
    expect(invalidAbove).toMatchObject({ capacityQps: 100, failedAtQps: null, above: 'invalid' });
    expect(capacityText(invalidAbove)).toBe('≥ 100 req/s (the rates tried above it were invalid)');
    const stopped = row({
      status: 'interrupted',
      reason: 'SIGINT came after 1 step, before its search ended',
      steps: [step(100, ok)],
    });
    expect(capacityText(stopped)).toBe('≥ 100 req/s (interrupted before a rate failed)');
  });

  it("the console's table has a header over its columns", () => {
    const found = row({ status: 'measured', steps: [step(100, ok), step(200, slow), step(120, ok)] });
    const lines = capacitySummary([found]).split('\n');
    expect(lines[0]).toBe('mode       clients  capacity (total req/s); p99 at it');
    expect(lines[1]).toMatch(/^timeslice +2 clients {2}120 req\/s \(fails at 200\); p99 /);
    expect(capacitySummary([])).toBe('');
  });

  it('a bracket and a failing lowest rate are measurements', () => {
    const found = row({
      status: 'measured',
      steps: [step(100, ok), step(200, slow), step(150, ok, 'x'), step(120, ok)],
    });
    expect(capacityText(found)).toBe('120 req/s (fails at 200)');
    expect(capacityText(found, '')).toBe('120 (fails at 200)');
    const none = row({ status: 'measured', steps: [step(100, slow), step(50, slow)] });
    expect(capacityText(none)).toBe('none: the lowest rate tried, 50 req/s, failed');
    expect(capacityExitCode([found, none])).toBe(0);
  });
});

describe('progress', () => {
  it('a line per step: rate, p99 against the target, verdict, and the time left at most (steps left × a step)', () => {
    const step = analyzeStep({ totalQps: 800, windowS: 2, clients: [client(Array(400).fill(1), 2)] }, 2);
    const at = { mode: 'timeslice', clients: 2, step: 3, maxSteps: 12, targetMs: 2, stepsLeft: 9 + 12, stepMs: 2500 };
    expect(stepLine(at, step)).toBe(
      '  timeslice × 2, step 3 of at most 12: 800 req/s, p99 1.00 ms (target 2 ms): pass; at most 0:53 left\n',
    );
    expect(stepLine({ ...at, stepsLeft: 0 }, { ...step, verdict: 'invalid', reason: 'late' })).toMatch(
      /: invalid: late; done\n$/,
    );
  });
});

describe('the committed capacity run', () => {
  it('regenerates its report byte for byte (it predates the result checks, and says nothing of them)', async () => {
    const run = (await loadCapacityRun(CAPACITY_RUN)) as CapacityRun;
    // Its committed report.
    const committed = readFileSync(path.join(ROOT, 'reports', `${run.id}.md`), 'utf8');
    // The version it was made with, as its report says.
    expect(capacityMarkdown(run, '0.1.0')).toBe(committed);
  });
});

describe('capacity options: which workload', () => {
  const resolve = (args: Partial<CapacityArgs>) => resolveCapacityOptions({ sloP99Ms: '10', rest: [], ...args });

  it('measures the command after -- (as bench: workload "custom"), infer when given none', () => {
    const custom = { name: 'custom', builtin: false, argv: ['python3', 'my_model.py'], params: {} };
    expect(resolve({ rest: ['python3', 'my_model.py'] }).settings.workload).toEqual(custom);
    expect(resolve({ workloads: 'custom', rest: ['python3', 'my_model.py'] }).settings.workload).toEqual(custom);
    expect(workloadText(custom)).toBe('python3 my_model.py');
    expect(resolve({}).settings.workload.name).toBe('infer');
    expect(resolve({ workloads: 'spin', set: ['spin.spin-us=100'] }).settings.workload.params).toMatchObject({
      'spin-us': 100,
    });
  });

  it.each([
    [
      { workloads: 'infer', rest: ['./my-server'] },
      'the command after -- is the workload "custom": drop --workloads infer (or give --workloads custom), or drop the command',
    ],
    [
      { workloads: 'custom' },
      'workload "custom" needs your command after --, e.g. gpushare capacity --slo-p99-ms 10 -- ./my-workload --size 8',
    ],
    [
      { workloads: 'infer,gemm' },
      '--workloads infer,gemm: capacity measures one workload per run; give one, e.g. --workloads infer',
    ],
    [
      { rest: ['./my-server'], set: ['infer.batch=4'] },
      '--set infer.…: this run measures your command, not infer; drop the --set or measure infer',
    ],
  ])('refuses %j in one line', (args, message) => {
    expect(userErrorOf(() => resolve(args))).toBe(message);
  });
});

describe("a step's window", () => {
  it.each([
    // --window-ms where the rate fits it: 2000 ms at 10000 req/s a client is 20000 latencies, all reported.
    [10_000, 1, 2000, 2000],
    // Over it, shortened to what a client reports: 20000 latencies at 10001 req/s is 1999 ms.
    [10_001, 1, 2000, 1999],
    [20_000, 1, 2000, 1000],
    // Per client process: two processes report twice as many.
    [20_000, 2, 2000, 2000],
    // Never under --window-ms's own floor, 100 ms.
    [1_000_000, 1, 2000, 100],
    // Longer where the rate is too low for 640 requests (at most 20 s), whatever --window-ms.
    [100, 1, 2000, 6400],
    [10, 1, 2000, 20_000],
    [100, 1, 10_000, 10_000],
  ])('at %i req/s over %i processes with --window-ms %i: %i ms', (qps, processes, windowMs, ms) => {
    expect(capacityStepMs(qps, processes, windowMs)).toBe(ms);
  });

  it("counts the latencies gpushare's helper reports a window, as the helper caps them", () => {
    const wire = readFileSync(path.join(ROOT, 'workloads', 'gpushare_protocol', 'wire.py'), 'utf8');
    expect(Number(/^LATENCY_CAP = (\d+)$/m.exec(wire)?.[1])).toBe(LATENCIES_A_WINDOW);
  });
});
