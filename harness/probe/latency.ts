/** A latency series of a probe summarized, and how a claim's verdict reads from such series: only valid ones grade it. */
import { quantileSorted } from 'simple-statistics';
import type { ClaimVerdict } from './ledger.js';
import type { LatencySeries } from './record.js';

/** At most this fraction of a series' requests may be sent over a period late, or it is not valid. */
export const MAX_LATE_FRACTION = 0.01;

/**
 * A latency series summarized, ms. `valid` is false when more than 1% of its requests were sent over a
 * period after they were due (the generator fell behind): their latency still counts from the scheduled time.
 */
export interface LatencySummary {
  requests: number;
  leastMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  lateRequests: number;
  valid: boolean;
}

export function latencySummary(s: LatencySeries): LatencySummary {
  const sorted = [...s.latenciesMs].sort((a, b) => a - b);
  const q = (p: number) => (sorted.length > 0 ? quantileSorted(sorted, p) : Number.NaN);
  const valid = sorted.length > 0 && s.lateRequests <= MAX_LATE_FRACTION * sorted.length;
  return {
    requests: sorted.length,
    leastMs: sorted[0] ?? Number.NaN,
    p50Ms: q(0.5),
    p90Ms: q(0.9),
    p99Ms: q(0.99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    lateRequests: s.lateRequests,
    valid,
  };
}

/** A verdict only from valid series: with one whose generator fell behind, the claim is not measured. */
export function graded(verdict: ClaimVerdict, ...series: LatencySummary[]): ClaimVerdict {
  return series.every((s) => s.valid) ? verdict : 'not measured';
}

/** What a measurement adds where a series fell behind its schedule (its claim is then not graded). */
export const lateNote = (...series: LatencySummary[]) =>
  series.every((s) => s.valid) ? '' : ' (not graded: a series fell behind its schedule)';

/** A latency in words: µs under a millisecond, else ms. */
export const ms = (v: number) => (v < 1 ? `${(v * 1000).toFixed(0)} µs` : `${v.toFixed(2)} ms`);
