/**
 * The analysis of a mix run, a pure function of its record: per cell (mode and cap × aggressor ×
 * load) the victim's p50/p99/p99.9 beside the aggressor as ratios to alone with intervals from order
 * statistics of the merged requests, `overloaded` where the victim could not keep up, the aggressor's
 * throughput kept with its interval over the rounds, and the protection search over the caps.
 */
import * as hdr from 'hdr-histogram-js';
import { separate } from '../core/mode-decision.js';
import { decodeLatencies, p99Holds } from '../workload/open-loop.js';
import { type AggressorWindow, type MixMode, type MixRun, type MixWindow, PAIR } from './record.js';

/** Each quantile's interval is taken at this level, so that a ratio of two holds at ≥ 95% (Bonferroni). */
export const QUANTILE_LEVEL = 0.975;
/** A victim serving less than this share of its offered requests did not keep up. */
export const SERVED_SHARE = 0.9;
/** A victim whose last quarter of requests waited this many times its first quarter's (median) had a growing queue. */
export const CLIMB_FACTOR = 2;

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

/** A ratio with its interval (null where an interval bound is missing). */
export interface Ratio {
  value: number;
  ci: [number, number] | null;
}

/** A mean over rounds with its Student-t 95% interval (null below 2 rounds). */
export interface Kept {
  value: number;
  ci: [number, number] | null;
  rounds: number;
}

/** One cell of the matrix. */
export interface Cell {
  mode: MixMode;
  /** The column: the mode, with the aggressor's thread % under MPS when capped. */
  column: string;
  aggressor: string;
  threadPct: number | null;
  load: number;
  /** measured; overloaded (the victim did not keep up: its served rate, not a p99 ratio); invalid (no valid round); or the mode's outcome. */
  status: 'measured' | 'overloaded' | 'invalid' | 'skipped' | 'failed' | 'interrupted';
  reason: string | null;
  alone: Latencies | null;
  together: Latencies | null;
  p50: Ratio | null;
  p99: Ratio | null;
  p999: Ratio | null;
  kept: Kept | null;
  /** Rounds behind the cell (both arms valid). */
  rounds: number;
}

/** The column a mode and cap is shown in. */
export function columnOf(mode: MixMode, threadPct: number | null): string {
  return threadPct === null ? mode : `${mode} ${threadPct}%`;
}

function histogramOf(windows: readonly MixWindow[]): hdr.Histogram {
  const merged = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
  for (const w of windows) {
    if (w.victimResult === null) continue;
    const h = decodeLatencies(w.victimResult.histogram);
    merged.add(h);
    h.destroy();
  }
  return merged;
}

/** log P(B = k) for B ~ Binomial(n, q), every k, from the recurrence (in logs: n may be large). */
function logPmf(n: number, q: number): number[] {
  const out = [n * Math.log1p(-q)];
  for (let k = 1; k <= n; k++) out.push((out[k - 1] as number) + Math.log((n - k + 1) / k) + Math.log(q / (1 - q)));
  return out;
}

/**
 * The ranks (1-based) of the order statistics that bracket the q-quantile of n requests with at least
 * `level` confidence: [x(l), x(u)] with P(l ≤ B < u) ≥ level for B ~ Binomial(n, q). Null where no
 * rank exists (too few requests: the upper bound of a p99.9 needs thousands).
 */
export function quantileRanks(n: number, q: number, level = QUANTILE_LEVEL): [number | null, number | null] {
  if (n === 0) return [null, null];
  const logs = logPmf(n, q);
  const top = Math.max(...logs);
  const pmf = logs.map((l) => Math.exp(l - top));
  const total = pmf.reduce((a, b) => a + b, 0);
  const tail = (1 - level) / 2;
  let cdf = 0; // P(B ≤ k − 1) as k goes up
  let lo: number | null = null;
  let hi: number | null = null;
  for (let k = 1; k <= n + 1; k++) {
    cdf += (pmf[k - 1] as number) / total;
    // cdf is now P(B ≤ k − 1).
    if (cdf <= tail) lo = k;
    if (hi === null && cdf >= 1 - tail) hi = k;
  }
  return [lo, hi !== null && hi <= n ? hi : null];
}

/** The fewest requests for which the q-quantile has both bounds at QUANTILE_LEVEL (the report says it). */
export function requestsForInterval(q: number): number {
  let n = 10;
  while (quantileRanks(n, q)[1] === null || quantileRanks(n, q)[0] === null) n = Math.ceil(n * 1.1);
  // Step back to the fewest.
  while (n > 1 && quantileRanks(n - 1, q)[1] !== null && quantileRanks(n - 1, q)[0] !== null) n -= 1;
  return n;
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

function latencies(windows: readonly MixWindow[]): { latencies: Latencies; histogram: hdr.Histogram } {
  const h = histogramOf(windows);
  const windowS = windows.reduce((s, w) => s + (w.victimResult?.windowS ?? 0), 0);
  const served = windows.reduce((s, w) => s + (w.victimResult?.requests ?? 0), 0);
  const offered = windows.reduce((s, w) => s + (w.victimResult?.offeredQps ?? 0) * (w.victimResult?.windowS ?? 0), 0);
  return {
    latencies: {
      requests: h.totalCount,
      p50: quantileOf(h, 0.5),
      p99: quantileOf(h, 0.99),
      p999: quantileOf(h, 0.999),
      servedQps: windowS > 0 ? served / windowS : 0,
      offeredQps: windowS > 0 ? offered / windowS : 0,
    },
    histogram: h,
  };
}

/** Why a victim's window shows it did not keep up, or null: requests dropped, too few served, or a queue that climbed. */
export function overloadOf(w: MixWindow): string | null {
  const v = w.victimResult;
  if (v === null) return null;
  if (v.dropped > 0) return `${v.dropped} requests never served`;
  const offered = v.offeredQps * v.windowS;
  if (offered > 0 && v.requests + v.unreported < SERVED_SHARE * offered)
    return `served ${(v.requests + v.unreported).toFixed(0)} of ${offered.toFixed(0)} requests offered`;
  if (
    v.firstQuarterP50Ms !== null &&
    v.lastQuarterP50Ms !== null &&
    v.lastQuarterP50Ms > CLIMB_FACTOR * v.firstQuarterP50Ms
  )
    return `its latency climbed through the window (median ${v.firstQuarterP50Ms.toFixed(2)} ms in the first quarter, ${v.lastQuarterP50Ms.toFixed(2)} ms in the last)`;
  return null;
}

function ratio(top: Quantile, bottom: Quantile): Ratio {
  const [tLo, tHi] = top.ci;
  const [bLo, bHi] = bottom.ci;
  const ci: [number, number] | null =
    tLo !== null && tHi !== null && bLo !== null && bHi !== null && bLo > 0 ? [tLo / bHi, tHi / bLo] : null;
  return { value: top.ms / bottom.ms, ci };
}

/** Two-sided 95% Student t quantiles by degrees of freedom (1–30); 1.96 beyond. */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** The mean of per-round values with its Student-t 95% interval. */
export function meanInterval(values: readonly number[]): Kept | null {
  const n = values.length;
  if (n === 0) return null;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { value: mean, ci: null, rounds: n };
  const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
  const half = (T95[n - 2] ?? 1.96) * (sd / Math.sqrt(n));
  // A throughput ratio is never negative: a few rounds far apart give a t interval reaching below 0.
  return { value: mean, ci: [Math.max(0, mean - half), mean + half], rounds: n };
}

const rate = (a: AggressorWindow | null) => (a === null || a.windowS <= 0 ? null : a.iterations / a.windowS);

/** The aggressor's throughput in its own uncapped alone window of `mode`'s `round`, it/s. */
function aloneRate(run: MixRun, mode: MixMode, round: number, aggressor: string): number | null {
  const w = run.windows.find(
    (x) =>
      x.mode === mode &&
      x.round === round &&
      x.arm === 'aggressor-alone' &&
      x.aggressor === aggressor &&
      x.invalid === null,
  );
  return rate(w?.aggressorResult ?? null);
}

/** Every cell of the matrix the run's settings ask for, in the settings' order. */
export function mixCells(run: MixRun): Cell[] {
  const s = run.settings;
  const cells: Cell[] = [];
  for (const mode of s.modes) {
    const caps = mode === 'mps' ? [null, ...s.threadPcts] : [null];
    const rounds = run.windows.filter((w) => w.mode === mode).length;
    // An interrupted run's modes without an outcome stopped before their rounds ended.
    const cut =
      run.status === 'interrupted' && (run.current?.mode === mode || rounds === 0)
        ? {
            mode,
            status: 'interrupted' as const,
            reason: 'the run was interrupted before this mode finished its rounds',
          }
        : null;
    const outcome = run.outcomes.find((o) => o.mode === mode) ?? cut;
    for (const load of s.loads)
      for (const a of s.aggressors)
        for (const threadPct of caps) cells.push(cellOf(run, mode, a.name, threadPct, load, outcome ?? null));
  }
  return cells;
}

/** A green cell's note where its alone ran in its own slice (recorded before whole-GPU alone arms). */
export const LEGACY_GREEN_ALONE =
  "alone in its own green slice (recorded before 2026-11-27), not on the whole GPU as every other mode's alone: not comparable";

function cellOf(
  run: MixRun,
  mode: MixMode,
  aggressor: string,
  threadPct: number | null,
  load: number,
  outcome: MixRun['outcomes'][number] | null,
): Cell {
  const base = { mode, column: columnOf(mode, threadPct), aggressor, threadPct, load };
  const empty = { alone: null, together: null, p50: null, p99: null, p999: null, kept: null, rounds: 0 };
  const of = (arm: MixWindow['arm'], round: number) =>
    run.windows.find(
      (w) =>
        w.mode === mode &&
        w.round === round &&
        w.arm === arm &&
        w.load === load &&
        // The victim alone: of the mode's one victim process (aggressor null), or of this aggressor's process (in-process modes).
        (arm === 'victim-alone'
          ? w.aggressor === null || w.aggressor === aggressor
          : w.aggressor === aggressor && w.threadPct === threadPct),
    );
  const pairs: Array<{ alone: MixWindow; together: MixWindow }> = [];
  for (let round = 0; round < run.settings.rounds; round++) {
    const alone = of('victim-alone', round);
    const together = of('together', round);
    if (alone && together && alone.invalid === null && together.invalid === null) pairs.push({ alone, together });
  }
  if (pairs.length === 0) {
    if (outcome !== null) return { ...base, ...empty, status: outcome.status, reason: outcome.reason };
    const invalid = run.windows.find(
      (w) => w.mode === mode && w.load === load && w.aggressor === aggressor && w.invalid !== null,
    );
    return { ...base, ...empty, status: 'invalid', reason: invalid?.invalid ?? 'no round measured both arms' };
  }
  const keptValues = pairs.flatMap(({ together }) => {
    const alone = aloneRate(run, mode, together.round, aggressor);
    const with_ = rate(together.aggressorResult);
    return alone !== null && alone > 0 && with_ !== null ? [with_ / alone] : [];
  });
  const a = latencies(pairs.map((p) => p.alone));
  const t = latencies(pairs.map((p) => p.together));
  a.histogram.destroy();
  t.histogram.destroy();
  const measured = {
    ...base,
    alone: a.latencies,
    together: t.latencies,
    kept: meanInterval(keptValues),
    rounds: pairs.length,
  };
  const aloneOver = pairs.map((p) => overloadOf(p.alone)).find((why) => why !== null);
  const over = pairs.map((p) => overloadOf(p.together)).find((why) => why !== null);
  if (aloneOver !== undefined || over !== undefined)
    return {
      ...measured,
      p50: null,
      p99: null,
      p999: null,
      status: 'overloaded',
      reason: aloneOver !== undefined ? `the victim alone did not keep up: ${aloneOver}` : (over as string),
    };
  // Green recorded before 2026-11-27: its victim alone ran in its own slice, not on the whole GPU as every other mode's.
  const inSlice = mode === 'green' && pairs.some((p) => p.alone.wholeGpu !== true);
  const notes = [
    ...(outcome?.status === 'interrupted' ? [outcome.reason] : []),
    ...(inSlice ? [LEGACY_GREEN_ALONE] : []),
  ];
  return {
    ...measured,
    p50: ratio(t.latencies.p50, a.latencies.p50),
    p99: ratio(t.latencies.p99, a.latencies.p99),
    p999: ratio(t.latencies.p999, a.latencies.p999),
    status: 'measured',
    reason: notes.length > 0 ? notes.join('; ') : null,
  };
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

/**
 * Per aggressor and load, under MPS: of the caps measured (uncapped included), each a valid
 * measurement, those whose victim p99 within the target holds at 95% (capacity's binomial test of
 * the merged requests, none overloaded); of those, the one keeping the most aggressor throughput.
 */
export function protections(run: MixRun, cells: readonly Cell[] = mixCells(run)): Protection[] {
  const s = run.settings;
  if (!s.modes.includes('mps')) return [];
  return s.loads.flatMap((load) =>
    s.aggressors.map((a) => {
      const candidates = cells.filter((c) => c.mode === 'mps' && c.aggressor === a.name && c.load === load);
      const alone = candidates.find((c) => c.alone !== null)?.alone ?? null;
      const targetMs =
        s.protect.kind === 'ms' ? s.protect.value : alone !== null ? s.protect.value * alone.p99.ms : null;
      const none = { aggressor: a.name, load, targetMs, threadPct: null, p99Ms: null, kept: null };
      if (targetMs === null) return { ...none, reason: 'the victim alone was not measured under MPS' };
      const holding = candidates.filter((c) => c.status === 'measured' && holds(run, c, targetMs));
      if (holding.length === 0) {
        const tried = candidates.filter((c) => c.status === 'measured' || c.status === 'overloaded').length;
        return {
          ...none,
          reason:
            tried === 0
              ? 'no setting was measured'
              : `none of the ${tried} settings measured keeps the victim's p99 within ${targetMs.toFixed(2)} ms: cap lower than ${Math.min(...s.threadPcts)}%, or isolate (MIG)`,
        };
      }
      const { best, same } = mostKept(holding);
      const tie =
        same.length > 1
          ? `; ${same.map((c) => `${c.threadPct ?? 100}%`).join(', ')} measured the same here (the aggressor's throughput kept: the intervals overlap), and each holds the target: the least restrictive is taken, since a cap also limits the aggressor when it runs alone`
          : '';
      return {
        aggressor: a.name,
        load,
        targetMs,
        threadPct: best.threadPct ?? 100,
        p99Ms: best.together?.p99.ms ?? null,
        kept: best.kept,
        reason: `p99 ≤ ${targetMs.toFixed(2)} ms holds at 95% over ${best.together?.requests} requests${tie}`,
      };
    }),
  );
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
    .filter((c) => c === top || top.kept?.ci == null || c.kept?.ci == null || !separate(c.kept.ci, top.kept.ci))
    .sort((x, y) => (y.threadPct ?? 100) - (x.threadPct ?? 100));
  return { best: same[0] as Cell, same };
}

/** Whether the cell's victim p99 is within `targetMs` at 95% (the test capacity passes a step by). */
function holds(run: MixRun, cell: Cell, targetMs: number): boolean {
  const windows = run.windows.filter(
    (w) =>
      w.mode === cell.mode &&
      w.arm === 'together' &&
      w.aggressor === cell.aggressor &&
      w.threadPct === cell.threadPct &&
      w.load === cell.load &&
      w.invalid === null,
  );
  const h = histogramOf(windows);
  const over = overTarget(h, targetMs);
  const n = h.totalCount;
  h.destroy();
  return p99Holds(n, over);
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
    failedAtLoad: failed === -1 ? null : (mine[failed]?.load ?? null),
  };
}

/** The pair arm's aggregate in `mode`: per round, the compute and bandwidth aggressors' throughputs together ÷ alone, summed. */
export function pairAggregate(run: MixRun, mode: MixMode): Kept | null {
  const values = run.windows.flatMap((w) => {
    if (w.mode !== mode || w.arm !== 'pair' || w.invalid !== null) return [];
    const [first, second] = PAIR.map((name) => aloneRate(run, mode, w.round, name));
    const a = rate(w.aggressorResult);
    const b = rate(w.partnerResult);
    return first && second && a !== null && b !== null ? [a / first + b / second] : [];
  });
  return meanInterval(values);
}
