/** Measures of one trial's clients. */
import { mean, quantileSorted } from 'simple-statistics';
import type { LatencySummary } from '../../workload/spec.js';
import type { ClientResult, Overlap } from '../record/schema.js';

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

/**
 * How much the clients' windows overlapped: the span every window shares (latest start to earliest
 * end) as a fraction of each client's own window. 1 for a single client.
 */
export function overlap(clients: readonly ClientResult[]): Overlap {
  if (clients.length <= 1) return { perClient: clients.map(() => 1), min: 1 };
  const shared = Math.max(
    0,
    Math.min(...clients.map((c) => c.windowEndUs)) - Math.max(...clients.map((c) => c.windowStartUs)),
  );
  const perClient = clients.map((c) => {
    const own = c.windowEndUs - c.windowStartUs;
    return own > 0 ? Math.min(1, shared / own) : 0;
  });
  return { perClient, min: Math.min(...perClient) };
}
