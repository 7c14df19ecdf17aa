/** One window's stats from the load runs of the copies it drove: pooled latencies, summed throughput, the SLO's counts. */
import { type LoadResult, percentiles } from '../load/run.js';
import type { Latency, WindowStats } from './record.js';

export interface Slo {
  ttftP99Ms: number;
  itlP99Ms: number | null;
}

const latency = (valuesMs: readonly number[]): Latency => {
  const { count, p50Ms, p99Ms, histogram } = percentiles(valuesMs);
  return { count, p50Ms, p99Ms, histogram };
};

/**
 * The copies' runs of one window as one: requests and tokens summed, per second of the longest run,
 * latencies pooled (a request's TTFT counts from its scheduled time). A failed request counts over the
 * TTFT target and not good.
 */
export function windowStats(
  results: readonly LoadResult[],
  slo: Slo,
  load: { concurrency: number | null; ratePerS: number | null },
  generatorCpuMs: number,
): WindowStats {
  const records = results.flatMap((r) => r.records);
  const ok = records.filter((r) => r.outcome === 'ok');
  const elapsedMs = Math.max(0, ...results.map((r) => r.elapsedMs));
  const seconds = elapsedMs / 1000;
  const withinTtft = (ttftMs: number | null) => ttftMs !== null && ttftMs <= slo.ttftP99Ms;
  const good = ok.filter(
    (r) => withinTtft(r.ttftMs) && (slo.itlP99Ms === null || r.itlMs.every((gap) => gap <= (slo.itlP99Ms as number))),
  ).length;
  const outputTokens = ok.reduce((sum, r) => sum + r.outputTokens, 0);
  const lag = percentiles(records.map((r) => r.sentMs - r.scheduledMs));
  return {
    copies: results.length,
    ...load,
    elapsedMs,
    requests: records.length,
    ok: ok.length,
    good,
    overTtft: records.length - ok.filter((r) => withinTtft(r.ttftMs)).length,
    failures: [...new Set(results.flatMap((r) => r.failures))],
    outputTokens,
    outputTokensPerS: seconds > 0 ? outputTokens / seconds : 0,
    requestsPerS: seconds > 0 ? ok.length / seconds : 0,
    ttft: latency(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
    itl: latency(ok.flatMap((r) => r.itlMs)),
    e2e: latency(ok.map((r) => r.e2eMs)),
    lagP99Ms: lag.count > 0 ? lag.p99Ms : 0,
    generatorCpuMs,
  };
}
