/**
 * Open-loop steps (clients serving arrivals at a rate for a window), shared by capacity and mix: how a
 * step is recorded, whether its results are a measurement at all, its clients' latencies merged as one
 * HDR histogram (never averaged percentiles), a pass/fail by an early-stopping test of the p99 claim,
 * and the capacity a search found (the search itself is experiment/rate-search.ts). Pure functions of
 * the recorded steps.
 */
import * as hdr from 'hdr-histogram-js';
import { z } from 'zod';
import {
  DEFAULT_MIN_OVERLAP,
  implausibleResult,
  overlap,
  overlapShortfall,
  type WindowClaim,
} from './result-checks.js';

/** The range every latency histogram is recorded over (see encodeLatencies): 1 µs to an hour, 3 significant digits. */
const HISTOGRAM_RANGE = { lowestUs: 1, highestUs: 3_600_000_000, digits: 3 } as const;

/**
 * Why `text` is not a latency histogram as gpushare records one, or null. Read back, a record's
 * histograms are merged and their percentiles taken: one that does not decode threw an internal
 * error, and one of another range (a crafted wide one) made a mix report take minutes.
 */
export function histogramProblem(text: string): string | null {
  let h: hdr.Histogram;
  try {
    h = decodeLatencies(text);
  } catch (error) {
    return `not a compressed HdrHistogram (${String((error as Error).message).split('\n')[0]})`;
  }
  try {
    const { lowestUs, highestUs, digits } = HISTOGRAM_RANGE;
    // Decoded, it has it: the library's typings leave it out.
    const lowest = (h as unknown as { lowestDiscernibleValue: number }).lowestDiscernibleValue;
    if (lowest !== lowestUs || h.highestTrackableValue !== highestUs || h.numberOfSignificantValueDigits !== digits)
      return `an HdrHistogram of ${lowest} to ${h.highestTrackableValue} µs at ${h.numberOfSignificantValueDigits} digits, not the ${lowestUs} to ${highestUs} µs at ${digits} digits gpushare records`;
    if (!(h.totalCount >= 0) || !(h.maxValue <= highestUs)) return 'an HdrHistogram with counts outside its range';
    return null;
  } finally {
    h.destroy();
  }
}

/** A latency histogram as a record stores it (compressed base64), checked to be one gpushare wrote. */
export const HistogramTextSchema = z.string().superRefine((text, ctx) => {
  const problem = histogramProblem(text);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

/** One client's share of a step, as recorded: its latency histogram (µs, compressed HdrHistogram). */
export const ClientStepSchema = z.object({
  requests: z.number(),
  /** Its requests slower than the target, counted exactly from the raw latencies when recorded, with those never served. */
  overTarget: z.number(),
  /** Requests served whose latency the workload did not report (over its cap of latencies per window): the step is then invalid. */
  unreported: z.number().optional(),
  /** How late the generator issued requests while its worker was idle, ms, p99 (its own lag, not queueing). */
  scheduleLagMs: z.number(),
  /** The same, the worst request. */
  scheduleLagMaxMs: z.number().optional(),
  histogram: HistogramTextSchema,
});
export type ClientStep = z.infer<typeof ClientStepSchema>;

/** One rate tried: the total request rate, split evenly over the clients. */
export const StepSchema = z.object({
  totalQps: z.number(),
  windowS: z.number(),
  clients: z.array(ClientStepSchema),
  /**
   * Why the result checks bench runs too (each window against the release time, plausibility, the
   * clients' overlap) refused the step, or null when it passed them; absent in runs recorded before
   * capacity ran them.
   */
  invalid: z.string().nullable().optional(),
});
export type Step = z.infer<typeof StepSchema>;

/**
 * Why a step's clients' results cannot be taken as measured, or null: a window that does not start at
 * the release time (`startAtUs`) or ends after its answer came (`receivedUs`), an implausible count, or
 * arrival windows that overlap less than bench requires by default.
 */
export function invalidStep(
  claims: readonly WindowClaim[],
  startAtUs: number,
  receivedUs: number,
  durationMs: number,
): string | null {
  const work = { kind: 'fixed-duration' as const, durationMs };
  const implausible = claims.map((c) => implausibleResult(c, startAtUs, receivedUs, work)).find((why) => why !== null);
  if (implausible) return implausible;
  // A client with a backlog serves it past its window's end, which is a result, not a misalignment:
  // the contention that counts is that of the arrivals, [start, start + the step's duration].
  const arrivals = claims.map((c) => ({
    windowStartUs: c.windowStartUs,
    windowEndUs: Math.min(c.windowEndUs, c.windowStartUs + durationMs * 1000),
  }));
  return overlapShortfall(overlap(arrivals), DEFAULT_MIN_OVERLAP);
}

export type StepVerdict = 'pass' | 'fail' | 'invalid';

export interface StepAnalysis {
  totalQps: number;
  requests: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** Requests slower than the target. */
  overTarget: number;
  /** Requests within the target per second of window. */
  goodputQps: number;
  /** Largest ÷ smallest per-client p99 (1 = fair). */
  fairness: number;
  maxLagMs: number;
  verdict: StepVerdict;
  reason: string;
}

/**
 * A step is invalid when a generator's p99 lag (requests issued late while its worker was idle)
 * exceeds this share of the target, or 1 ms if more: then the host, not the GPU, sets the pace.
 */
export const MAX_SCHEDULE_LAG_SHARE = 0.2;

export function maxScheduleLagMs(targetMs: number): number {
  return Math.max(1, MAX_SCHEDULE_LAG_SHARE * targetMs);
}
/** The p99 claim is made at this confidence (one-sided binomial test, as MLPerf's early stopping). */
export const P99_CONFIDENCE = 0.95;

/** Records latencies (ms) into a histogram of µs, 3 significant digits, as a workload's step is stored. */
export function encodeLatencies(latenciesMs: readonly number[]): string {
  const h = hdr.build({
    lowestDiscernibleValue: HISTOGRAM_RANGE.lowestUs,
    highestTrackableValue: HISTOGRAM_RANGE.highestUs,
    numberOfSignificantValueDigits: HISTOGRAM_RANGE.digits,
    useWebAssembly: false,
  });
  for (const ms of latenciesMs) h.recordValue(Math.max(1, Math.ceil(ms * 1000)));
  const text = hdr.encodeIntoCompressedBase64(h);
  h.destroy();
  return text;
}

export function decodeLatencies(text: string): hdr.Histogram {
  return hdr.decodeFromCompressedBase64(text, 32, false);
}

/**
 * Whether "p99 ≤ target" holds at 95% confidence: if the true share of requests over the target were
 * 1%, seeing this few (`over` of `n`) would have a probability of at most 5%. With none over, that
 * takes 299 requests; with 1 over, 473.
 */
export function p99Holds(n: number, over: number): boolean {
  return binomialCdf(over, n, 0.01) <= 1 - P99_CONFIDENCE;
}

/** The fewest requests for which a p99 claim can hold with `over` requests over the target. */
export function requestsNeeded(over: number): number {
  // The binomial tail falls as n grows: bisect between a count that fails and one that holds.
  let lo = over + 1;
  let hi = 1000 * (over + 1);
  while (!p99Holds(hi, over)) hi *= 2;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (p99Holds(mid, over)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** P(X ≤ k) for X ~ Binomial(n, p). */
export function binomialCdf(k: number, n: number, p: number): number {
  let logTerm = n * Math.log1p(-p); // P(X = 0)
  let sum = Math.exp(logTerm);
  for (let i = 1; i <= k; i++) {
    logTerm += Math.log((n - i + 1) / i) + Math.log(p / (1 - p));
    sum += Math.exp(logTerm);
  }
  return Math.min(1, sum);
}

export function analyzeStep(step: Step, targetMs: number): StepAnalysis {
  const merged = hdr.build({
    lowestDiscernibleValue: HISTOGRAM_RANGE.lowestUs,
    highestTrackableValue: HISTOGRAM_RANGE.highestUs,
    numberOfSignificantValueDigits: HISTOGRAM_RANGE.digits,
    useWebAssembly: false,
  });
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
    fairness: perClientP99.length > 0 ? Math.max(...perClientP99) / Math.max(1, Math.min(...perClientP99)) : Number.NaN,
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
