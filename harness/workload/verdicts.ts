/**
 * The verdicts of open-loop steps, shared by capacity and mix: a step passes where "p99 ≤ target"
 * holds at 95% (the binomial test of stats/p99.ts), fails where over 1% of its requests were over the
 * target, and is invalid where it measured the host, not the GPU; and the capacity a search found.
 */
import { P99_CONFIDENCE, p99Holds, requestsNeeded } from '../stats/p99.js';
import { decodeLatencies, emptyLatencies, type Step, type StepAnalysis } from './open-loop.js';

/**
 * A step is invalid when a generator's p99 lag (requests issued late while its worker was idle)
 * exceeds this share of the target, or 1 ms if more: then the host, not the GPU, sets the pace.
 */
export const MAX_SCHEDULE_LAG_SHARE = 0.2;

export function maxScheduleLagMs(targetMs: number): number {
  return Math.max(1, MAX_SCHEDULE_LAG_SHARE * targetMs);
}

/** A step's verdict: pass where p99 ≤ the target holds at 95%, fail over 1%, invalid where the step is no measurement. */
export function analyzeStep(step: Step, targetMs: number): StepAnalysis {
  const merged = emptyLatencies();
  const perClientP99: number[] = [];
  for (const c of step.clients) {
    const h = decodeLatencies(c.histogram);
    if (h.totalCount > 0) perClientP99.push(h.getValueAtPercentile(99));
    merged.add(h);
    h.destroy();
  }
  const at = (p: number) => merged.getValueAtPercentile(p) / 1000;
  // Every request of the step, those never served (counted over the target) included; percentiles are of the served ones.
  const requests = step.clients.reduce((sum, c) => sum + c.requests, 0);
  const overTarget = step.clients.reduce((sum, c) => sum + c.overTarget, 0);
  const within = requests - overTarget;
  const maxLagMs = Math.max(0, ...step.clients.map((c) => c.scheduleLagMs));
  const analysis = {
    totalQps: step.totalQps,
    requests,
    p50Ms: at(50),
    p90Ms: at(90),
    p99Ms: at(99),
    p999Ms: at(99.9),
    overTarget,
    goodputQps: within / step.windowS,
    // NaN when no client reported a latency: max() ÷ max(1, min()) is −∞ ÷ ∞.
    fairness: Math.max(...perClientP99) / Math.max(1, Math.min(...perClientP99)),
    maxLagMs,
  };
  const reported = merged.totalCount;
  merged.destroy();
  if (step.invalid) return { ...analysis, verdict: 'invalid', reason: step.invalid };
  if (requests === 0) return { ...analysis, verdict: 'invalid', reason: 'no request completed' };
  const unreported = step.clients.reduce((sum, c) => sum + (c.unreported ?? 0), 0);
  if (unreported > 0)
    return {
      ...analysis,
      verdict: 'invalid',
      // The numbers: the workload reports a fixed number of latencies a window, so the window's length
      // bounds the rate it measures (capacity's steps shorten for the helper's; this one reported fewer).
      reason: `${unreported} of ${reported + unreported} requests served had no latency reported: the workload reports at most ${reported} a window, so ${Math.round(step.windowS * 1000)} ms steps measure up to about ${Math.floor(reported / step.windowS)} req/s`,
    };
  if (maxLagMs > maxScheduleLagMs(targetMs))
    return {
      ...analysis,
      verdict: 'invalid',
      reason: `a generator issued requests ${maxLagMs.toFixed(1)} ms late (p99) while its worker was idle (over ${maxScheduleLagMs(targetMs)} ms): the host, not the GPU, set the pace`,
    };
  if (p99Holds(requests, overTarget))
    return {
      ...analysis,
      verdict: 'pass',
      reason: `p99 ≤ ${targetMs} ms holds at ${P99_CONFIDENCE * 100}% confidence: ${overTarget} of ${requests} requests over`,
    };
  if (overTarget > requests / 100)
    return {
      ...analysis,
      verdict: 'fail',
      reason: `${overTarget} of ${requests} requests over ${targetMs} ms (over 1%)`,
    };
  return {
    ...analysis,
    verdict: 'fail',
    reason: `${overTarget} of ${requests} requests over ${targetMs} ms: too few requests to claim p99 at ${P99_CONFIDENCE * 100}% (${requestsNeeded(overTarget)} needed)`,
  };
}

/**
 * The capacity a search found: the highest passing rate, and the lowest rate above it that failed (an
 * invalid step bounds the search, but is no measurement that the rate fails).
 */
export function capacityOf(steps: ReadonlyArray<StepAnalysis>): {
  capacityQps: number | null;
  failedAtQps: number | null;
  at: StepAnalysis | null;
} {
  const passing = steps.filter((s) => s.verdict === 'pass');
  const at = passing.length > 0 ? passing.reduce((a, b) => (b.totalQps > a.totalQps ? b : a)) : null;
  const above = steps
    .filter((s) => s.verdict === 'fail' && (at === null || s.totalQps > at.totalQps))
    .map((s) => s.totalQps);
  return { capacityQps: at?.totalQps ?? null, failedAtQps: above.length > 0 ? Math.min(...above) : null, at };
}
