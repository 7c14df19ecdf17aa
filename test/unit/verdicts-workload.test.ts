/**
 * An open-loop step's verdict at its boundaries (workload/verdicts.ts): the schedule lag that makes a
 * step measure the host (a 20% share of the target, 1 ms at least), the 1% over the target that fails
 * it, each reason word for word, the goodput and the clients' fairness.
 */
import { describe, expect, it } from 'vitest';
import { encodeLatencies, type StepAnalysis } from '../../harness/workload/open-loop.js';
import { analyzeStep, capacityOf, maxScheduleLagMs } from '../../harness/workload/verdicts.js';

/** A client whose `requests` had `overTarget` over it, its served latencies `latenciesMs`. */
const client = (requests: number, overTarget: number, latenciesMs: number[] = [1], scheduleLagMs = 0) => ({
  requests,
  overTarget,
  scheduleLagMs,
  histogram: encodeLatencies(latenciesMs),
});
const step = (clients: ReturnType<typeof client>[], windowS = 2) => ({ totalQps: 500, windowS, clients });

describe('maxScheduleLagMs: 20% of the target, 1 ms at least', () => {
  it.each([
    [1, 1],
    [5, 1],
    [6, 1.2],
    [10, 2],
    [100, 20],
  ])('a %d ms target allows %d ms', (targetMs, lagMs) => {
    expect(maxScheduleLagMs(targetMs)).toBeCloseTo(lagMs, 9);
  });
});

describe('analyzeStep at its edges (target 10 ms)', () => {
  it.each([
    [2, 'pass'],
    [2.001, 'invalid'],
  ])('a generator %d ms late (the limit 2 ms): %s', (lagMs, verdict) => {
    expect(analyzeStep(step([client(1000, 0, [1], lagMs)]), 10).verdict).toBe(verdict);
  });

  it('a lagging step says by how much, and the limit', () => {
    expect(analyzeStep(step([client(1000, 0, [1], 2.04)]), 10).reason).toBe(
      'a generator issued requests 2.0 ms late (p99) while its worker was idle (over 2 ms): the host, not the GPU, set the pace',
    );
  });

  it('a step the result checks refused is invalid with their reason, before anything else', () => {
    expect(analyzeStep({ ...step([client(0, 0, [])]), invalid: 'the windows overlapped 10%' }, 10)).toMatchObject({
      verdict: 'invalid',
      reason: 'the windows overlapped 10%',
    });
  });

  it('a step with no request is invalid, its fairness NaN', () => {
    expect(analyzeStep(step([client(0, 0, [])]), 10)).toMatchObject({
      verdict: 'invalid',
      reason: 'no request completed',
      fairness: Number.NaN,
    });
  });

  it.each([
    // 1,000 requests: 10 over (exactly 1%) is too few to claim p99 but not over 1%; 11 are over 1%.
    [10, '10 of 1000 requests over 10 ms: too few requests to claim p99 at 95% (1693 needed)'],
    [11, '11 of 1000 requests over 10 ms (over 1%)'],
  ])('%i of 1,000 over: fail, "%s"', (over, reason) => {
    expect(analyzeStep(step([client(1000, over)]), 10)).toMatchObject({ verdict: 'fail', reason });
  });

  it('a passing step names the confidence and the count over', () => {
    expect(analyzeStep(step([client(299, 0)]), 10)).toMatchObject({
      verdict: 'pass',
      reason: 'p99 ≤ 10 ms holds at 95% confidence: 0 of 299 requests over',
    });
  });

  it('goodput counts the requests within the target per second of window', () => {
    expect(analyzeStep(step([client(1000, 40), client(600, 0)], 4), 10).goodputQps).toBe(390);
  });

  it("fairness is the largest client's p99 over the smallest; a client with no latency is left out", () => {
    const fast = Array.from({ length: 100 }, () => 2);
    const slow = Array.from({ length: 100 }, () => 6);
    const fairness = (clients: ReturnType<typeof client>[]) => analyzeStep(step(clients), 10).fairness;
    expect(fairness([client(100, 0, fast), client(100, 0, slow)])).toBeCloseTo(3, 2);
    expect(fairness([client(100, 0, fast), client(100, 0, slow), client(0, 0, [])])).toBeCloseTo(3, 2);
    expect(fairness([client(100, 0, fast), client(100, 0, fast)])).toBe(1);
  });
});

describe('capacityOf: the highest passing rate, and the lowest failing one above it', () => {
  const at = (totalQps: number, verdict: StepAnalysis['verdict'], p99Ms = 1) =>
    ({ totalQps, verdict, p99Ms }) as StepAnalysis;
  const found = (steps: StepAnalysis[]) => {
    const { capacityQps, failedAtQps, at: step } = capacityOf(steps);
    return [capacityQps, failedAtQps, step?.p99Ms ?? null];
  };
  it.each([
    ['passes in any order: the highest', [at(500, 'pass', 5), at(400, 'pass', 4), at(800, 'fail')], [500, 800, 5]],
    [
      'a fail below the capacity (noise) is not its bound',
      [at(300, 'fail'), at(400, 'pass'), at(600, 'fail')],
      [400, 600, 1],
    ],
    ['a fail at the capacity rate is not above it', [at(400, 'pass'), at(400, 'fail')], [400, null, 1]],
    ['two passes at one rate: the first is reported', [at(400, 'pass', 4), at(400, 'pass', 9)], [400, null, 4]],
    ['the lowest of the fails above', [at(400, 'pass'), at(900, 'fail'), at(600, 'fail')], [400, 600, 1]],
    ['an invalid step is no fail', [at(400, 'pass'), at(600, 'invalid')], [400, null, 1]],
    ['nothing passed: every fail bounds it', [at(300, 'fail'), at(200, 'fail')], [null, 200, null]],
  ] as const)('%s', (_name, steps, want) => {
    expect(found([...steps])).toEqual(want);
  });
});
