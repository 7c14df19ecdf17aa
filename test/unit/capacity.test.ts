/** Capacity at a latency target: the p99 claim's early-stopping test, histogram merging, and the rate search. */
import { describe, expect, it } from 'vitest';
import {
  analyzeStep,
  capacityOf,
  encodeLatencies,
  nextRate,
  p99Holds,
  requestsNeeded,
  type StepVerdict,
} from '../../harness/capacity/search.js';

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
