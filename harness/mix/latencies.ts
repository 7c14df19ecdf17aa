/** The victim's latencies of a mix run's windows, merged as one HdrHistogram: quantiles with their intervals, requests over a target. */
import type * as hdr from 'hdr-histogram-js';
import { quantileRanks } from '../stats/quantile.js';
import { decodeLatencies, emptyLatencies } from '../workload/open-loop.js';
import type { MixWindow } from './record.js';

/** A quantile of merged latencies with its distribution-free interval (null bounds: too few requests), ms. */
export interface Quantile {
  ms: number;
  ci: [number | null, number | null];
}

/** The victim's latencies in one arm of a cell, merged over its valid rounds. */
export interface Latencies {
  requests: number;
  p50: Quantile;
  p99: Quantile;
  p999: Quantile;
  /** Requests served per second of window, and offered. */
  servedQps: number;
  offeredQps: number;
}

/** The victim's latencies of `windows` merged (windows without a victim result add none). */
function histogramOf(windows: readonly MixWindow[]): hdr.Histogram {
  const merged = emptyLatencies();
  for (const w of windows) {
    if (w.victimResult === null) continue;
    const h = decodeLatencies(w.victimResult.histogram);
    merged.add(h);
    h.destroy();
  }
  return merged;
}

const valueAtRank = (h: hdr.Histogram, rank: number) =>
  h.getValueAtPercentile((100 * (rank - 0.5)) / h.totalCount) / 1000;

function quantileOf(h: hdr.Histogram, q: number): Quantile {
  const [lo, hi] = quantileRanks(h.totalCount, q);
  return {
    ms: h.getValueAtPercentile(q * 100) / 1000,
    ci: [lo === null ? null : valueAtRank(h, lo), hi === null ? null : valueAtRank(h, hi)],
  };
}

/** Requests of `h` slower than `targetMs`: the ranks above the last one within it (to the histogram's 3 digits). */
function overTarget(h: hdr.Histogram, targetMs: number): number {
  let lo = 0; // ranks ≤ lo are within the target
  let hi = h.totalCount;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (valueAtRank(h, mid) <= targetMs) lo = mid;
    else hi = mid - 1;
  }
  return h.totalCount - lo;
}

/** Every victim request of `windows`, and how many of them were slower than `targetMs`. */
export function requestsOver(windows: readonly MixWindow[], targetMs: number): { requests: number; over: number } {
  const h = histogramOf(windows);
  const over = overTarget(h, targetMs);
  const requests = h.totalCount;
  h.destroy();
  return { requests, over };
}

/** The victim's latencies over `windows`: quantiles with intervals, served and offered rates. */
export function latencies(windows: readonly MixWindow[]): Latencies {
  const h = histogramOf(windows);
  const windowS = windows.reduce((s, w) => s + (w.victimResult?.windowS ?? 0), 0);
  const served = windows.reduce((s, w) => s + (w.victimResult?.requests ?? 0), 0);
  const offered = windows.reduce((s, w) => s + (w.victimResult?.offeredQps ?? 0) * (w.victimResult?.windowS ?? 0), 0);
  const out = {
    requests: h.totalCount,
    p50: quantileOf(h, 0.5),
    p99: quantileOf(h, 0.99),
    p999: quantileOf(h, 0.999),
    servedQps: windowS > 0 ? served / windowS : 0,
    offeredQps: windowS > 0 ? offered / windowS : 0,
  };
  h.destroy();
  return out;
}
