/**
 * Open-loop steps (clients serving arrivals at a rate for a window), shared by capacity and mix: how a
 * step is recorded, whether its results are a measurement at all, its clients' latencies merged as one
 * HDR histogram (never averaged percentiles). A step's pass/fail is workload/verdicts.ts's, the search for
 * the highest passing rate experiment/rate-search.ts's. Pure functions of the recorded steps.
 */
import * as hdr from 'hdr-histogram-js';
import { z } from 'zod';
import {
  DEFAULT_MIN_OVERLAP,
  implausibleResult,
  overlap,
  overlapShortfall,
  type WindowClaim,
} from './result-validity.js';

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

/** An empty histogram of latencies in µs over HISTOGRAM_RANGE, as every step records them. */
export function emptyLatencies(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: HISTOGRAM_RANGE.lowestUs,
    highestTrackableValue: HISTOGRAM_RANGE.highestUs,
    numberOfSignificantValueDigits: HISTOGRAM_RANGE.digits,
    useWebAssembly: false,
  });
}

/** Records latencies (ms) into a histogram of µs, 3 significant digits, as a workload's step is stored. */
export function encodeLatencies(latenciesMs: readonly number[]): string {
  const h = emptyLatencies();
  for (const ms of latenciesMs) h.recordValue(Math.max(1, Math.ceil(ms * 1000)));
  const text = hdr.encodeIntoCompressedBase64(h);
  h.destroy();
  return text;
}

export function decodeLatencies(text: string): hdr.Histogram {
  return hdr.decodeFromCompressedBase64(text, 32, false);
}
