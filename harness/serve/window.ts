/** One window's stats from the load runs of the copies it drove: pooled latencies, summed throughput, the SLO's counts. */
import type { RequestRecord } from '../load/request.js';
import { type LoadResult, percentiles } from '../load/run.js';
import type { Latency, RateStep, ServeGroup, WindowStats } from './record.js';

export interface Slo {
  ttftP99Ms: number;
  itlMaxMs: number | null;
}

/** Percentiles of `valuesMs`; null where there is none (every request failed, or one-token outputs have no gap). */
export function latency(valuesMs: readonly number[]): Latency {
  const { count, p50Ms, p99Ms, histogram } = percentiles(valuesMs);
  return count === 0 ? { count, p50Ms: null, p99Ms: null, histogram } : { count, p50Ms, p99Ms, histogram };
}

/** When each of a request's tokens arrived, on its run's clock. */
function tokenTimesMs(r: RequestRecord): number[] {
  if (r.ttftMs === null) return [];
  let at = r.scheduledMs + r.ttftMs;
  return [at, ...r.itlMs.map((gap) => (at += gap))];
}

/**
 * The copies' runs of one window as one. Throughput counts only what arrived within the window (from
 * each run's start for its duration), so the drain after it, at falling concurrency and different in
 * each arm, is not in it. Latencies are pooled over every request that ended ok (a request's TTFT
 * counts from its scheduled time); a failed request counts over the TTFT target and not good.
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
        tokens: tokenTimesMs(r).filter((t) => t <= endMs).length,
        ended: r.scheduledMs + r.e2eMs <= endMs,
      }));
  });
  const withinTtft = (ttftMs: number | null) => ttftMs !== null && ttftMs <= slo.ttftP99Ms;
  const good = ok.filter(
    (r) => withinTtft(r.ttftMs) && (slo.itlMaxMs === null || r.itlMs.every((gap) => gap <= (slo.itlMaxMs as number))),
  ).length;
  const seconds = windowMs / 1000;
  const outputTokens = inWindow.reduce((sum, r) => sum + r.tokens, 0);
  const lag = percentiles(records.map((r) => r.sentMs - r.scheduledMs));
  return {
    copies: results.length,
    ...load,
    windowMs,
    elapsedMs: Math.max(0, ...results.map((r) => r.elapsedMs)),
    requests: records.length,
    ok: ok.length,
    good,
    overTtft: records.length - ok.filter((r) => withinTtft(r.ttftMs)).length,
    failures: [...new Set(results.flatMap((r) => r.failures))],
    outputTokens,
    outputTokensPerS: seconds > 0 ? outputTokens / seconds : 0,
    requestsPerS: seconds > 0 ? inWindow.filter((r) => r.ended).length / seconds : 0,
    ttft: latency(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
    itl: latency(ok.flatMap((r) => r.itlMs)),
    e2e: latency(ok.map((r) => r.e2eMs)),
    lagP99Ms: lag.count > 0 ? lag.p99Ms : 0,
    generatorCpuMs,
  };
}

/**
 * Why a window measured nothing of the server, or null: no request ended ok (each failure kind named,
 * with its first detail), or every one that did carried no output token.
 */
export function nothingMeasured(w: Pick<WindowStats, 'requests' | 'ok' | 'failures' | 'ttft'>): string | null {
  if (w.ok === 0)
    return w.requests === 0
      ? 'no request was sent'
      : `none of ${w.requests} requests ended ok (${w.failures.join('; ') || 'no failure recorded'})`;
  if (w.ttft.count === 0) return `all ${w.ok} requests that ended ok carried no output token`;
  return null;
}

/**
 * Why a group's record measured nothing of the server, or null: a window of either arm of a round that
 * measured nothing; in a rate search, no step that measured anything (a step that measured nothing after
 * one that did is the server overloaded, a failed step).
 */
export function groupMeasuredNothing(g: Pick<ServeGroup, 'rounds' | 'steps'>): string | null {
  for (const [i, round] of g.rounds.entries())
    for (const arm of ['dedicated', 'shared'] as const) {
      const why = nothingMeasured(round[arm]);
      if (why !== null) return `round ${i + 1}, the ${arm} window measured nothing: ${why}`;
    }
  if (g.steps.length === 0 || g.steps.some((s) => nothingMeasured(s.window) === null)) return null;
  return `no step of the rate search measured anything: at ${g.steps[0]?.totalRatePerS} req/s, ${nothingMeasured((g.steps[0] as RateStep).window)}`;
}
