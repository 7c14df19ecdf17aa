/**
 * The decisions of a server run, pure functions of its requests and windows: the SLO's accounting of
 * each window, whether a window or a group measured anything of the server, and which groups the plan
 * may name.
 */
import type { RequestRecord } from '../load/request.js';
import type { GroupAnalysis } from './analysis.js';
import type { ServeGroup, WindowStats } from './record.js';

export interface Slo {
  ttftP99Ms: number;
  itlMaxMs: number | null;
}

/**
 * A window's SLO counts: requests that ended ok; good ones (ok, TTFT within the target, every gap
 * within --slo-itl-max-ms); and those over the TTFT target, where a failed request counts as over: a
 * server that fails requests does not hold its SLO by failing them.
 */
export function sloCounts(records: readonly RequestRecord[], slo: Slo): Pick<WindowStats, 'ok' | 'good' | 'overTtft'> {
  const ok = records.filter((r) => r.outcome === 'ok');
  const withinTtft = ok.filter((r) => r.ttftMs !== null && r.ttftMs <= slo.ttftP99Ms);
  const good = withinTtft.filter(
    (r) => slo.itlMaxMs === null || r.itlMs.every((gap) => gap <= (slo.itlMaxMs as number)),
  );
  return { ok: ok.length, good: good.length, overTtft: records.length - withinTtft.length };
}

/**
 * Whether the plan may name a group: measured, its TTFT p99 holding the SLO, no failed request (a
 * group that failed requests served fewer than it was sent), and a throughput to rank it by.
 */
export function plannable(g: Pick<GroupAnalysis, 'slo' | 'failedRequests' | 'tokensPerS'>): boolean {
  return g.slo?.verdict === 'holds' && g.failedRequests === 0 && g.tokensPerS?.value != null;
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
  const [first] = g.steps;
  if (first === undefined || g.steps.some((s) => nothingMeasured(s.window) === null)) return null;
  return `no step of the rate search measured anything: at ${first.totalRatePerS} req/s, ${nothingMeasured(first.window)}`;
}
