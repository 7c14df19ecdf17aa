/**
 * The search for the largest fleet at the SLO, pure: which fleet size to measure next from the steps so
 * far, the answer with its interval, and the early stop of a step whose latency climbs without end.
 * The bracket and its bisection are the rate search's (experiment/rate-search.ts `nextRate`) on whole
 * numbers of servers; an unclear step is measured once more (its verdict then on both measurements'
 * requests), and once bracketed, the highest passing and lowest failing sizes are measured again.
 */
import { nextRate, type RatedStep } from '../../experiment/rate-search.js';
import { mannKendall } from '../../stats/trend.js';
import type { SizeLimit } from './fleet-size.js';
import { verdictOf } from './verdicts.js';

/** --replicates' default: measurements more of each boundary size, once bracketed. */
export const DEFAULT_REPLICATES = 2;

/** A step's verdict: every server within the SLO, a server over it, or unclear (not passing). */
export type StepVerdict = 'within' | 'over' | 'unclear';

/** A step as the search reads it. */
export interface SizedStep {
  servers: number;
  verdict: StepVerdict;
  /** The step this one measured again after it was unclear (its verdict is over both), or null. */
  again: number | null;
}

export interface SizePolicy {
  /** The first size measured: the file's, at most `top`. */
  start: number;
  /** The largest size the mode can hold at all (fleet-size.ts sizeTop). */
  top: number;
  /** Measurements more of the boundary's sizes once bracketed. */
  replicates: number;
  /** Distinct sizes the search measures at most. */
  maxSizes: number;
  /** Steps at most, replicates included. */
  maxSteps: number;
}

/** Why a size is measured: the search, an unclear step again, or a replicate at the boundary. */
export type StepWhy = 'search' | 'again' | 'replicate';

/** The steps that count: each unclear step measured again is replaced by its second measurement. */
export function countedSteps<S extends SizedStep>(steps: readonly S[]): S[] {
  // A step measured once (again null) replaces none: null matches no index.
  const replaced = new Set(steps.map((s) => s.again));
  return steps.filter((_, i) => !replaced.has(i));
}

/** Per size measured, in order of first measurement: whether every counted step at it was within. */
function sizes(steps: readonly SizedStep[]): Array<{ servers: number; pass: boolean; steps: number }> {
  const out: Array<{ servers: number; pass: boolean; steps: number }> = [];
  for (const s of countedSteps(steps)) {
    const at = out.find((x) => x.servers === s.servers);
    if (at === undefined) out.push({ servers: s.servers, pass: s.verdict === 'within', steps: 1 });
    else Object.assign(at, { pass: at.pass && s.verdict === 'within', steps: at.steps + 1 });
  }
  return out;
}

/** The rate search's next size on whole numbers: doubling capped at the top, halving and bisection floored. */
function searched(list: ReadonlyArray<{ servers: number; pass: boolean }>, policy: SizePolicy): number | null {
  const rated: RatedStep[] = list.map((x) => ({
    totalQps: x.servers,
    verdict: x.pass
      ? 'pass'
      : // Stryker disable next-line StringLiteral: nextRate reads any verdict but 'pass' as not passing
        'fail',
  }));
  const next = nextRate(rated, { startQps: policy.start, tolerance: 0, maxSteps: policy.maxSizes, minQps: 1 });
  if (next === null) return null;
  const n = Math.min(policy.top, Math.floor(next));
  // A size measured already: the top passed, or the bracket is two neighbours (the floor of their middle
  // is the lower); nothing left between.
  return list.some((x) => x.servers === n) ? null : n;
}

/** The size to measure next and why, or null: the search is done. */
export function nextSize(steps: readonly SizedStep[], policy: SizePolicy): { servers: number; why: StepWhy } | null {
  if (steps.length >= policy.maxSteps) return null;
  const last = steps.at(-1);
  if (last !== undefined && last.verdict === 'unclear' && last.again === null)
    return { servers: last.servers, why: 'again' };
  const list = sizes(steps);
  const n = searched(list, policy);
  if (n !== null) return { servers: n, why: 'search' };
  const passing = list.filter((x) => x.pass);
  const lo = passing.reduce<(typeof list)[number] | null>(
    // Stryker disable next-line EqualityOperator: sizes() gives each size once, so no two are equal
    (a, x) => (a === null || x.servers > a.servers ? x : a),
    null,
  );
  if (lo !== null && lo.steps < 1 + policy.replicates) return { servers: lo.servers, why: 'replicate' };
  const hi = list
    // Every size above the largest passing one fails; with none passing, every size.
    .filter((x) => (lo === null ? !x.pass : x.servers > lo.servers))
    .reduce<(typeof list)[number] | null>(
      // Stryker disable next-line EqualityOperator: sizes() gives each size once, so no two are equal
      (a, x) => (a === null || x.servers < a.servers ? x : a),
      null,
    );
  if (hi !== null && hi.steps < 1 + policy.replicates) return { servers: hi.servers, why: 'replicate' };
  return null;
}

/** What ended a mode's search short of the SLO's bracket, or the SLO itself. */
export type FleetLimit = SizeLimit | 'slo' | 'steps';

/** A mode's answer: the largest fleet at the SLO, its interval, and what set it. */
export interface LargestFleet {
  /** The largest size every counted step of which kept every server within the SLO; null: none did. */
  servers: number | null;
  /**
   * [servers, upper]: upper is one below the smallest larger size that failed every time it was measured
   * (sizes between passed some replicates and failed others, or were not measured); the top when it passed.
   */
  interval: [number, number] | null;
  limitedBy: FleetLimit;
}

/** The answer from a mode's steps and its top (the size it could hold at all, and what set it). */
export function largestOf(steps: readonly SizedStep[], top: { servers: number; limitedBy: SizeLimit }): LargestFleet {
  const list = sizes(steps);
  const pass = list.filter((x) => x.pass).map((x) => x.servers);
  const servers = pass.length === 0 ? null : Math.max(...pass);
  if (servers === null) return { servers, interval: null, limitedBy: 'slo' };
  const counted = countedSteps(steps);
  // The larger sizes measured: each failed some of its measurements.
  const above = list.filter((x) => x.servers > servers);
  const allFail = above
    .filter((x) => counted.every((s) => s.servers !== x.servers || s.verdict !== 'within'))
    .map((x) => x.servers);
  if (allFail.length > 0) return { servers, interval: [servers, Math.min(...allFail) - 1], limitedBy: 'slo' };
  // None failed every time: each passed some, the largest measured bounds the interval.
  const upper = Math.max(servers, ...above.map((x) => x.servers));
  // A larger size measured: the SLO stopped it, not the step limit.
  const limitedBy = servers >= top.servers ? top.limitedBy : above.length > 0 ? 'slo' : 'steps';
  return { servers, interval: [servers, upper], limitedBy };
}

/** The early stop's significance: Mann–Kendall's two-sided p below this finds TTFT p50 rising. */
export const CLIMB_ALPHA = 0.05;
/** Completions below this share of the requests sent fall behind: the queue grows. */
export const BEHIND_SHARE = 0.9;
/** The fewest points the trend test reads (at 5 values without ties, the least p is 2/120). */
export const CLIMB_MIN_WINDOWS = 5;
/** The slices of a window whose TTFT p50s the early stop reads: a queue that grows shows within one window. */
export const CLIMB_SLICES = 5;

/** One server's slice of a window as the early stop reads it. */
export interface ClimbPoint {
  ttftP50Ms: number | null;
  sentPerS: number;
  completedPerS: number;
}

/**
 * Why a step's latency climbs without end, or null: a server whose TTFT p50 rose over its points (the
 * slices of a window, in time order: Mann–Kendall, p < CLIMB_ALPHA, rising) while its completions fell
 * behind its requests sent (under BEHIND_SHARE of them): its queue grows as long as it is sent requests,
 * so the step is over. Each window ends with its queue drained, so the climb is read within one.
 */
export function climbsWithoutEnd(
  servers: ReadonlyArray<{ label: string; points: readonly ClimbPoint[] }>,
): string | null {
  for (const s of servers) {
    // Stryker disable next-line ConditionalExpression: below 5 values no Mann–Kendall p is under 0.05 (least 1/12 at 4): a shortcut
    if (s.points.length < CLIMB_MIN_WINDOWS) continue;
    const p50s = s.points.flatMap((p) => (p.ttftP50Ms === null ? [] : [p.ttftP50Ms]));
    const trend = mannKendall(p50s);
    const sent = s.points.reduce((a, p) => a + p.sentPerS, 0);
    const completed = s.points.reduce((a, p) => a + p.completedPerS, 0);
    // Stryker disable next-line EqualityOperator: s = 0 gives p = 1, and no p is exactly 0.05 (exact p for 5–12 values checked)
    const rising = trend.s > 0 && trend.pValue < CLIMB_ALPHA;
    if (rising && completed < BEHIND_SHARE * sent)
      return `${s.label}'s TTFT p50 rose over ${s.points.length} slices of a window (Mann–Kendall p ${trend.pValue.toFixed(3)}) while it completed ${((completed / sent) * 100).toFixed(0)}% of the requests sent: its queue grows without end`;
  }
  return null;
}

/** Each server's attainment over a step's windows (pooled), in the servers' order. */
export function stepAttainments(
  servers: ReadonlyArray<{ index: number }>,
  windows: ReadonlyArray<ReadonlyArray<{ server: number; requests: number; good: number }>>,
): Array<ReturnType<typeof verdictOf>> {
  return servers.map((x) => {
    const mine = windows.flatMap((w) => w.filter((y) => y.server === x.index));
    return verdictOf(
      mine.reduce((a, y) => a + y.good, 0),
      mine.reduce((a, y) => a + y.requests, 0),
    );
  });
}

/** A step's verdict: over where a server missed the SLO, within where every server is within it, else unclear. */
export function stepVerdictOf(
  servers: ReadonlyArray<{ index: number }>,
  windows: ReadonlyArray<ReadonlyArray<{ server: number; requests: number; good: number }>>,
): StepVerdict {
  const verdicts = stepAttainments(servers, windows).map((a) => a.verdict);
  if (verdicts.includes('missed')) return 'over';
  return verdicts.every((v) => v === 'within') ? 'within' : 'unclear';
}

/**
 * A server's window as the early stop's points: its requests by when they were due, in CLIMB_SLICES equal
 * slices, each slice's TTFT p50 (null without a request; one without a first token counts as the longest),
 * and the window's sent and completed rates.
 */
export function climbPoints(
  result: {
    startMs: number;
    durationMs: number;
    records: ReadonlyArray<{ scheduledMs: number; ttftMs: number | null }>;
  },
  rates: { sentPerS: number; completedPerS: number },
): ClimbPoint[] {
  const slices: number[][] = Array.from({ length: CLIMB_SLICES }, () => []);
  for (const r of result.records) {
    if (result.durationMs <= 0) continue;
    const at = Math.floor(((r.scheduledMs - result.startMs) / result.durationMs) * CLIMB_SLICES);
    // A request that never got its first token (timed out in the queue) waited longer than any that did.
    // Stryker disable next-line OptionalChaining: the index is clamped to a slice that exists (durationMs > 0 above)
    slices[Math.min(CLIMB_SLICES - 1, Math.max(0, at))]?.push(r.ttftMs ?? Number.MAX_VALUE);
  }
  return slices.map((ttfts) => {
    const sorted = [...ttfts].sort((a, b) => a - b);
    const ttftP50Ms = sorted.length === 0 ? null : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
    // Only the rates: a whole window passed as `rates` carries its own ttftP50Ms, which must not replace the slice's.
    return { ttftP50Ms, sentPerS: rates.sentPerS, completedPerS: rates.completedPerS };
  });
}
