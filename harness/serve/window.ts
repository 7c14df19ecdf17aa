/** One window's stats from the load runs of the copies it drove: pooled latencies, summed throughput, the SLO's counts. */
import type { RequestRecord } from '../load/request.js';
import { type LoadResult, percentiles, type WorkerShare } from '../load/run.js';
import { tokenAccounting, tokenGapsMs } from '../load/tokens.js';
import type { Latency, WindowStats } from './record.js';
import { type Slo, sloCounts } from './verdicts.js';

/** Percentiles of `valuesMs`; null where there is none (every request failed, or one-token outputs have no gap). */
export function latency(valuesMs: readonly number[]): Latency {
  const { count, p50Ms, p99Ms, histogram } = percentiles(valuesMs);
  return count === 0 ? { count, p50Ms: null, p99Ms: null, histogram } : { count, p50Ms, p99Ms, histogram };
}

/** When each of a request's text chunks arrived, on its run's clock. */
function chunkTimesMs(r: RequestRecord): number[] {
  if (r.ttftMs === null) return [];
  let at = r.scheduledMs + r.ttftMs;
  return [at, ...r.itlMs.map((gap) => (at += gap))];
}

/**
 * The copies' runs of one window as one. Throughput counts only what arrived within the window (from
 * each run's start for its duration), so the drain after it, at falling concurrency and different in
 * each arm, is not in it. Latencies are pooled over every request that ended ok (a request's TTFT
 * counts from its scheduled time; ITL is per token, load/tokens.ts); the SLO's counts are sloCounts'.
 */
export function windowStats(
  results: readonly LoadResult[],
  slo: Slo,
  load: { concurrency: number | null; ratePerS: number | null },
  generatorCpuMs: number,
): WindowStats {
  const records = results.flatMap((r) => r.records);
  const ok = records.filter((r) => r.outcome === 'ok');
  const windowMs = Math.max(0, ...results.map((r) => r.durationMs));
  const inWindow = results.flatMap((run) => {
    const endMs = run.startMs + run.durationMs;
    return run.records
      .filter((r) => r.outcome === 'ok')
      .map((r) => ({
        // Its output tokens (the usage count where the server sent one) in the share of its text chunks that arrived within it.
        tokens:
          r.textChunks === 0
            ? 0
            : Math.round((chunkTimesMs(r).filter((t) => t <= endMs).length * r.outputTokens) / r.textChunks),
        ended: r.scheduledMs + r.e2eMs <= endMs,
      }));
  });
  const seconds = windowMs / 1000;
  const outputTokens = inWindow.reduce((sum, r) => sum + r.tokens, 0);
  const lag = percentiles(records.map((r) => r.sentMs - r.scheduledMs));
  return {
    copies: results.length,
    ...load,
    windowMs,
    elapsedMs: Math.max(0, ...results.map((r) => r.elapsedMs)),
    requests: records.length,
    ...sloCounts(records, slo),
    failures: [...new Set(results.flatMap((r) => r.failures))],
    outputTokens,
    outputTokensPerS: seconds > 0 ? outputTokens / seconds : 0,
    requestsPerS: seconds > 0 ? inWindow.filter((r) => r.ended).length / seconds : 0,
    ttft: latency(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
    itl: latency(ok.flatMap(tokenGapsMs)),
    e2e: latency(ok.map((r) => r.e2eMs)),
    lagP99Ms: lag.count > 0 ? lag.p99Ms : 0,
    generatorCpuMs,
    tokens: tokenAccounting(ok),
    sentPerS: seconds > 0 ? sentWithin(results) / seconds : 0,
    ...workerShares(results),
  };
}

/** Requests sent within their run's window (from its start, for its duration): what the generator offered, whatever came back. */
export function sentWithin(results: readonly Pick<LoadResult, 'startMs' | 'durationMs' | 'records'>[]): number {
  return results.reduce(
    (sum, run) =>
      sum + run.records.filter((r) => r.sentMs >= run.startMs && r.sentMs < run.startMs + run.durationMs).length,
    0,
  );
}

/**
 * Each generator worker's share of the window over the copies' runs, worker by worker: its requests and
 * CPU time summed, its send lag the highest p99 of its runs. None where this process sent the load.
 */
function workerShares(results: readonly LoadResult[]): { workers?: WorkerShare[] } {
  const shares: WorkerShare[] = [];
  for (const run of results)
    for (const [i, w] of (run.workers ?? []).entries()) {
      const s = shares[i];
      shares[i] =
        s === undefined
          ? { ...w }
          : { requests: s.requests + w.requests, lagP99Ms: Math.max(s.lagP99Ms, w.lagP99Ms), cpuMs: s.cpuMs + w.cpuMs };
    }
  return shares.length > 0 ? { workers: shares } : {};
}
