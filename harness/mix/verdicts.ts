/**
 * The decisions of a mix run, pure functions of its windows and cells: whether a victim kept up, which
 * cap protects it (p99 within the target at 95%, the most aggressor throughput kept where intervals
 * separate) and the cap carried into deployment files.
 */
import { separate } from '../stats/intervals.js';
import { p99Holds } from '../stats/p99.js';
import type { Cell, Kept } from './analysis.js';
import type { MixRun, MixWindow } from './record.js';

/** A victim serving less than this share of its offered requests did not keep up. */
export const SERVED_SHARE = 0.9;
/** A victim whose last quarter of requests waited this many times its first quarter's (median) had a growing queue. */
export const CLIMB_FACTOR = 2;

/** Why a victim's window shows it did not keep up, or null: requests dropped, too few served, or a queue that climbed. */
export function overloadOf(w: MixWindow): string | null {
  const v = w.victimResult;
  if (v === null) return null;
  if (v.dropped > 0) return `${v.dropped} requests never served`;
  const offered = v.offeredQps * v.windowS;
  if (v.requests + v.unreported < SERVED_SHARE * offered)
    return `served ${(v.requests + v.unreported).toFixed(0)} of ${offered.toFixed(0)} requests offered`;
  if (
    v.firstQuarterP50Ms !== null &&
    // Stryker disable next-line ConditionalExpression: null > 2 × a median is false anyway
    v.lastQuarterP50Ms !== null &&
    v.lastQuarterP50Ms > CLIMB_FACTOR * v.firstQuarterP50Ms
  )
    return `its latency climbed through the window (median ${v.firstQuarterP50Ms.toFixed(2)} ms in the first quarter, ${v.lastQuarterP50Ms.toFixed(2)} ms in the last)`;
  return null;
}
/** What the protection search found for one aggressor at one load. */
export interface Protection {
  aggressor: string;
  load: number;
  /** The victim's p99 target, ms. */
  targetMs: number | null;
  /** The highest-throughput setting that holds the target: the aggressor's thread % (100: uncapped); null: none measured does. */
  threadPct: number | null;
  /** The victim's p99 and the aggressor's throughput kept at that setting. */
  p99Ms: number | null;
  kept: Kept | null;
  reason: string;
}

/** The victim's p99 target: a fixed ms, or a multiple of its p99 alone (null: the victim alone was not measured). */
export function targetOf(protect: MixRun['settings']['protect'], aloneP99Ms: number | null): number | null {
  if (protect.kind === 'ms') return protect.value;
  return aloneP99Ms !== null ? protect.value * aloneP99Ms : null;
}

/**
 * Of the cells measured for one aggressor at one load (its caps, uncapped included), those whose victim
 * p99 within the target holds at 95% (capacity's binomial test of the merged requests, `counts`; none
 * overloaded); of those, the one keeping the most aggressor throughput.
 */
export function protectionAt(
  at: { aggressor: string; load: number; targetMs: number | null; threadPcts: readonly number[] },
  candidates: readonly Cell[],
  counts: (cell: Cell, targetMs: number) => { requests: number; over: number },
): Protection {
  const { aggressor, load, targetMs } = at;
  const none = { aggressor, load, targetMs, threadPct: null, p99Ms: null, kept: null };
  if (targetMs === null) return { ...none, reason: 'the victim alone was not measured under MPS' };
  const holding = candidates.filter((c) => {
    if (c.status !== 'measured') return false;
    const { requests, over } = counts(c, targetMs);
    return p99Holds(requests, over);
  });
  if (holding.length === 0) {
    const tried = candidates.filter((c) => c.status === 'measured' || c.status === 'overloaded').length;
    return {
      ...none,
      reason:
        tried === 0
          ? 'no setting was measured'
          : `none of the ${tried} settings measured keeps the victim's p99 within ${targetMs.toFixed(2)} ms: cap lower than ${Math.min(...at.threadPcts)}%, or isolate (MIG)`,
    };
  }
  const { best, same } = mostKept(holding);
  const tie =
    same.length > 1
      ? `; ${same.map((c) => `${c.threadPct ?? 100}%`).join(', ')} measured the same here (the aggressor's throughput kept: the intervals overlap), and each holds the target: the least restrictive is taken, since a cap also limits the aggressor when it runs alone`
      : '';
  return {
    aggressor,
    load,
    targetMs,
    threadPct: best.threadPct ?? 100,
    // Stryker disable next-line OptionalChaining: a measured cell always has its together latencies (mixCells)
    p99Ms: best.together?.p99.ms ?? null,
    kept: best.kept,
    // Stryker disable next-line OptionalChaining: a measured cell always has its together latencies (mixCells)
    reason: `p99 ≤ ${targetMs.toFixed(2)} ms holds at 95% over ${best.together?.requests} requests${tie}`,
  };
}

/**
 * Of the settings that hold the target, the one keeping the most aggressor throughput, decided only
 * where the intervals separate: the settings whose kept interval overlaps (or, with no interval,
 * cannot be told from) the highest median's measured the same: each holds the target, and the least
 * restrictive of them is taken, since a cap also limits the aggressor when it runs alone, which the
 * matrix does not measure.
 */
export function mostKept(holding: readonly Cell[]): { best: Cell; same: Cell[] } {
  const top = holding.reduce((x, y) => ((y.kept?.value ?? 0) > (x.kept?.value ?? 0) ? y : x));
  const same = holding
    // The top is among them: an interval never separates from itself.
    .filter((c) => top.kept?.ci == null || c.kept?.ci == null || !separate(c.kept.ci, top.kept.ci))
    .sort((x, y) => (y.threadPct ?? 100) - (x.threadPct ?? 100));
  return { best: same[0] as Cell, same };
}

/** The cap carried into deployment files for one aggressor: the loads it held at, and the first at which none did. */
export interface CarriedCap {
  /** The lowest thread % found at every load up to `upToLoad`; null when none held at the lowest load. */
  threadPct: number | null;
  /** The highest load (fraction of the victim's capacity) up to which a cap held at every load measured; null: none. */
  upToLoad: number | null;
  /** The lowest load at which no cap measured held; null when one held at every load. */
  failedAtLoad: number | null;
}

/**
 * An aggressor's cap for deployment: from the lowest load up, while a cap held at each, the lowest of
 * them (a cap that protects at a higher load protects less at a lower one only by noise); it holds up to
 * the last such load, and the first load where none held is named, so a file never claims more.
 */
export function protectionFor(found: readonly Protection[], aggressor: string): CarriedCap {
  const mine = found.filter((p) => p.aggressor === aggressor).sort((a, b) => a.load - b.load);
  const failed = mine.findIndex((p) => p.threadPct === null);
  const held = failed === -1 ? mine : mine.slice(0, failed);
  return {
    threadPct: held.length > 0 ? Math.min(...held.map((p) => p.threadPct as number)) : null,
    upToLoad: held.at(-1)?.load ?? null,
    // findIndex's -1 indexes nothing: no load failed.
    failedAtLoad: mine[failed]?.load ?? null,
  };
}
