/** Measures of one trial's clients. */
import { mean, quantileSorted } from 'simple-statistics';
import type { LatencySummary } from '../../workload/spec.js';
import type { ClientResult } from '../record/schema.js';

/** Exact latency statistics of a window's chunks; null when there were none. */
export function summarizeLatencies(latenciesMs: readonly number[]): LatencySummary | null {
  if (latenciesMs.length === 0) return null;
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return {
    count: sorted.length,
    meanMs: mean(sorted),
    p50Ms: quantileSorted(sorted, 0.5),
    p90Ms: quantileSorted(sorted, 0.9),
    p99Ms: quantileSorted(sorted, 0.99),
    maxMs: sorted[sorted.length - 1] as number,
  };
}

/** Iterations per second of wall time in the client's window. */
export function throughputPerS(client: ClientResult): number {
  const seconds = (client.windowEndUs - client.windowStartUs) / 1e6;
  return seconds > 0 ? client.iterations / seconds : 0;
}
