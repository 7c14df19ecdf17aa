/**
 * The decisions of a server run, pure functions of its requests and windows: the SLO's accounting of
 * each window, whether a window or a group measured anything of the server, whether its token counts
 * can be trusted, which groups the plan may name, and the gate's: how a ratio moved against a baseline
 * server run, and the gate's exit code.
 */
import { ExitCode } from '../core/errors.js';
import type { RequestRecord } from '../load/request.js';
import { tokenGapsMs } from '../load/tokens.js';
import { classifyAgainstBand, combineHalfWidths, intervalHalfWidthLog, relativeToLog } from '../stats/between-runs.js';
import { requestsNeeded } from '../stats/p99.js';
import { mannKendall } from '../stats/trend.js';
import type { Ceiling, Estimate, GroupAnalysis, RatioName } from './analysis.js';
import type { ServeGroup, WindowStats } from './record.js';

export interface Slo {
  ttftP99Ms: number;
  itlMaxMs: number | null;
}

/**
 * A window's SLO counts: requests that ended ok; good ones (ok, TTFT within the target, every
 * per-token gap within --slo-itl-max-ms, load/tokens.ts); and those over the TTFT target, where a
 * failed request counts as over: a server that fails requests does not hold its SLO by failing them.
 */
export function sloCounts(records: readonly RequestRecord[], slo: Slo): Pick<WindowStats, 'ok' | 'good' | 'overTtft'> {
  const ok = records.filter((r) => r.outcome === 'ok');
  const withinTtft = ok.filter((r) => r.ttftMs !== null && r.ttftMs <= slo.ttftP99Ms);
  const good = withinTtft.filter(
    (r) => slo.itlMaxMs === null || tokenGapsMs(r).every((gap) => gap <= (slo.itlMaxMs as number)),
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
 * Whether a window (or a capacity step) sent more than the generator's ceiling: the rate it offered,
 * requests sent within it per second (completions can fall far below what was sent to an overloaded
 * server, and hide a generator that was past its ceiling), or its output tokens/s over the ceiling's.
 * Exactly at the ceiling is not over. Windows recorded before the sent rate was kept are checked by
 * their completions, as they were. No ceiling found: unverified. A ceiling the sweep's top rate was
 * within (at least that): within.
 */
export function ceilingCheck(
  w: Pick<WindowStats, 'sentPerS' | 'requestsPerS' | 'outputTokensPerS'>,
  ceiling: Pick<Ceiling, 'ratePerS' | 'tokensPerS' | 'atLeast'>,
): 'within' | 'over' | 'unverified' {
  if (ceiling.ratePerS === null) return 'unverified';
  if (ceiling.atLeast) return 'within';
  const sent = w.sentPerS ?? w.requestsPerS;
  return sent > ceiling.ratePerS || w.outputTokensPerS > (ceiling.tokensPerS ?? 0) ? 'over' : 'within';
}

/** A capacity step's flag: its sent rate over the generator's ceiling, or no ceiling to check it by; its rate is then not the server's measured capacity. */
export function stepUnverified(
  w: Pick<WindowStats, 'sentPerS' | 'requestsPerS' | 'outputTokensPerS'>,
  ceiling: Pick<Ceiling, 'ratePerS' | 'tokensPerS' | 'atLeast'>,
): boolean {
  // Steps recorded before the sent rate was kept are reported as they were.
  return w.sentPerS !== undefined && ceilingCheck(w, ceiling) !== 'within';
}

/** The verdict in words, for the report and the plan. */
export const OVER_CEILING_TEXT = "over the generator's ceiling by sent rate";

/** Why a step is unverified, in words: over a ceiling that was found, or no ceiling found to check it by. */
export const NO_CEILING_TEXT = 'not checked: the run found no generator ceiling';

/** The reason for an unverified step or capacity, for the ceiling the run found (its rate, or null). */
export function unverifiedText(ceilingRatePerS: number | null): string {
  return ceilingRatePerS === null ? NO_CEILING_TEXT : OVER_CEILING_TEXT;
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

/**
 * The share of a group's requests that ended ok whose server-reported usage may be below their text
 * chunks before the group fails: 1%. Such a count is no multi-token chunking (that gives more tokens
 * than chunks, never fewer): the engine miscounts, or its chunks are not what it generated, and its
 * tokens/s (taken from usage) cannot be trusted. One stray request in a few hundred is let pass.
 */
export const MISCOUNTED_MAX_SHARE = 0.01;

/**
 * Why a group's token counts cannot be trusted, or null: over MISCOUNTED_MAX_SHARE of the requests
 * that ended ok across its windows (both arms of every round, every step) reported a usage below their
 * text chunks. Windows recorded before the accounting was kept count as clean.
 */
export function groupTokenMismatch(g: Pick<ServeGroup, 'rounds' | 'steps'>): string | null {
  const windows = [...g.rounds.flatMap((r) => [r.dedicated, r.shared]), ...g.steps.map((s) => s.window)];
  const ok = windows.reduce((sum, w) => sum + w.ok, 0);
  const miscounted = windows.reduce((sum, w) => sum + (w.tokens?.miscounted ?? 0), 0);
  if (miscounted <= ok * MISCOUNTED_MAX_SHARE) return null;
  return `the server's usage counted fewer tokens than the text chunks it streamed in ${miscounted} of ${ok} requests that ended ok (over the ${MISCOUNTED_MAX_SHARE * 100}% allowed): its token counts, and the tokens/s taken from them, cannot be trusted`;
}

/**
 * Between-run half-width (relative) of a server ratio. No set of server runs on several machines has
 * been calibrated yet (docs/gate-calibration.md calibrates bench's headlines); bench's widest floor
 * (`*` in bench/gate/bands.ts, the 99.5% prediction half-width of mps/infer) stands in.
 */
export const SERVE_BETWEEN_FLOOR = 0.105;

/** The narrowest band (relative): bench's default noise band; no change under 5% is called one. */
export const SERVE_NOISE_BAND = 0.05;

export type ServeChangeStatus = 'regression' | 'improvement' | 'unchanged' | 'unclear';

export interface ServeChange {
  /** "mps ×4": the group. */
  group: string;
  ratio: RatioName;
  better: 'higher' | 'lower';
  value: number;
  baselineValue: number;
  /** value ÷ baselineValue. */
  change: number;
  /** The change's within-run 95% CI: the two runs' order-statistic CIs added in quadrature on the log scale. */
  ci: [number, number] | null;
  /** The band's half-width, relative (0.12 = ±12%); null without a CI. */
  band: number | null;
  status: ServeChangeStatus;
}

/** How one ratio of one group moved: null where either run has no value of it. */
export function serveChange(
  group: string,
  ratio: RatioName,
  better: 'higher' | 'lower',
  now: Estimate,
  before: Estimate,
  floor = SERVE_BETWEEN_FLOOR,
  noiseBand = SERVE_NOISE_BAND,
): ServeChange | null {
  // NaN for a missing value: not > 0, so no change.
  const value = now.value ?? Number.NaN;
  const baselineValue = before.value ?? Number.NaN;
  if (!(value > 0) || !(baselineValue > 0)) return null;
  const change = value / baselineValue;
  const moved = { group, ratio, better, value, baselineValue, change };
  const usable = (ci: [number, number] | null): ci is [number, number] => ci !== null && ci[0] > 0;
  if (!usable(now.ci) || !usable(before.ci)) return { ...moved, ci: null, band: null, status: 'unclear' };
  const withinLog = combineHalfWidths(intervalHalfWidthLog(now.ci), intervalHalfWidthLog(before.ci));
  const bandLog = Math.max(combineHalfWidths(relativeToLog(floor), withinLog), relativeToLog(noiseBand));
  return {
    ...moved,
    ci: [change * Math.exp(-withinLog), change * Math.exp(withinLog)],
    band: Math.expm1(bandLog),
    status: classifyAgainstBand(change, better, bandLog),
  };
}

/** The server gate's exit code: 1 on a regression; else 3 when anything is in doubt (`problems`); else 0. */
export function serveGateExitCode(changes: readonly Pick<ServeChange, 'status'>[], problems: number): number {
  if (changes.some((c) => c.status === 'regression')) return ExitCode.fail;
  return problems > 0 ? ExitCode.inconclusive : ExitCode.ok;
}

/** The warm-up's trend test runs over this many of its last windows (Mann–Kendall: 5 can show a trend at 10%, 3 never can). */
export const WARMUP_TREND_WINDOWS = 5;
/**
 * Its two-sided level: a trend is found where p < 10%. Liberal on purpose: a trend found by chance costs
 * one more warm-up window; one missed leaves a cold engine in the first kept round.
 */
export const WARMUP_TREND_ALPHA = 0.1;

/** One warm-up window as the rule reads it. */
export interface WarmupPoint {
  outputTokensPerS: number;
  ttftP50Ms: number | null;
}

export type WarmupStop =
  /** --warmup-s 0: one window, no test (the rule before it was kept). */
  | { stop: 'one window'; trend: null }
  /** The minimum time passed and no trend in the last windows' throughput or TTFT p50. */
  | { stop: 'steady'; trend: { tokensP: number; ttftP50P: number } }
  /** --warmup-max-s passed first: measured on, with a warning. */
  | { stop: 'max'; trend: { tokensP: number; ttftP50P: number } | null };

/**
 * Whether the warm-up stops after `points` (its windows so far) at `elapsedMs`, or null: go on. Steady
 * once `minMs` has passed and Mann–Kendall (stats/trend.ts) over the last WARMUP_TREND_WINDOWS windows
 * finds no trend at WARMUP_TREND_ALPHA in their output tokens/s nor in their TTFT p50; at `maxMs`, the
 * warm-up ends anyway. A window without a TTFT p50 (no token) counts as a trend: nothing is steady yet.
 */
export function warmupStop(
  points: readonly WarmupPoint[],
  elapsedMs: number,
  rule: { minMs: number; maxMs: number },
): WarmupStop | null {
  if (rule.minMs === 0) return { stop: 'one window', trend: null };
  const last = points.slice(-WARMUP_TREND_WINDOWS);
  const ttft = last.flatMap((p) => (p.ttftP50Ms === null ? [] : [p.ttftP50Ms]));
  const trend =
    last.length < WARMUP_TREND_WINDOWS || ttft.length < last.length
      ? null
      : {
          tokensP: mannKendall(last.map((p) => p.outputTokensPerS)).pValue,
          ttftP50P: mannKendall(ttft).pValue,
        };
  // Stryker disable next-line EqualityOperator: no series of 5 gives p exactly 0.1 (all 22 p-values, ties too: 0.0961, 0.1296 nearest)
  const steady = trend !== null && trend.tokensP >= WARMUP_TREND_ALPHA && trend.ttftP50P >= WARMUP_TREND_ALPHA;
  if (steady && elapsedMs >= rule.minMs) return { stop: 'steady', trend };
  if (elapsedMs >= rule.maxMs) return { stop: 'max', trend };
  return null;
}

/**
 * Whether a window's p99 rests on enough values to be claimed from it alone: the fewest for which the
 * binomial order-statistic bound of stats/p99.ts can hold at all (requestsNeeded(0), 299: with fewer,
 * even the slowest request is no 95% upper bound of the p99). Below it, a group's p99 is pooled over
 * its rounds, and a per-round p99 ratio is marked.
 */
export function p99RestsOnEnough(values: number): boolean {
  return values >= requestsNeeded(0);
}
