/**
 * The analysis of a mix run, a pure function of its record: per cell (mode and cap × aggressor ×
 * load) the victim's p50/p99/p99.9 beside the aggressor as ratios to alone with intervals from order
 * statistics of the merged requests, `overloaded` where the victim could not keep up, the aggressor's
 * throughput kept with its interval over the rounds, and the protection search over the caps.
 */
import { type MeanInterval, meanInterval } from '../stats/intervals.js';
import { type Latencies, latencies, type Quantile, requestsOver } from './latencies.js';
import { type AggressorWindow, type MixMode, type MixRun, type MixWindow, PAIR } from './record.js';
import { overloadOf, type Protection, protectionAt, targetOf } from './verdicts.js';

export type { Latencies, Quantile } from './latencies.js';
// Read by deploy/: the cap a mix run carries into deployment files.
export { type CarriedCap, type Protection, protectionFor } from './verdicts.js';

/** A ratio with its interval (null where an interval bound is missing). */
export interface Ratio {
  value: number;
  ci: [number, number] | null;
}

/** The aggressor's throughput kept: a mean over rounds with its Student-t 95% interval (null below 2 rounds). */
export type Kept = MeanInterval;

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

function ratio(top: Quantile, bottom: Quantile): Ratio {
  const [tLo, tHi] = top.ci;
  const [bLo, bHi] = bottom.ci;
  const ci: [number, number] | null =
    tLo !== null && tHi !== null && bLo !== null && bHi !== null && bLo > 0 ? [tLo / bHi, tHi / bLo] : null;
  return { value: top.ms / bottom.ms, ci };
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
  const measured = {
    ...base,
    alone: a,
    together: t,
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
    p50: ratio(t.p50, a.p50),
    p99: ratio(t.p99, a.p99),
    p999: ratio(t.p999, a.p999),
    status: 'measured',
    reason: notes.length > 0 ? notes.join('; ') : null,
  };
}

/** Per aggressor and load, under MPS: the protection search over the caps measured (see protectionAt). */
export function protections(run: MixRun, cells: readonly Cell[] = mixCells(run)): Protection[] {
  const s = run.settings;
  if (!s.modes.includes('mps')) return [];
  return s.loads.flatMap((load) =>
    s.aggressors.map((a) => {
      const candidates = cells.filter((c) => c.mode === 'mps' && c.aggressor === a.name && c.load === load);
      const alone = candidates.find((c) => c.alone !== null)?.alone ?? null;
      const targetMs = targetOf(s.protect, alone?.p99.ms ?? null);
      return protectionAt({ aggressor: a.name, load, targetMs, threadPcts: s.threadPcts }, candidates, (c, ms) =>
        requestsOver(togetherWindows(run, c), ms),
      );
    }),
  );
}

/** The valid together windows of a cell: the requests its p99 claim is over. */
function togetherWindows(run: MixRun, cell: Cell): MixWindow[] {
  return run.windows.filter(
    (w) =>
      w.mode === cell.mode &&
      w.arm === 'together' &&
      w.aggressor === cell.aggressor &&
      w.threadPct === cell.threadPct &&
      w.load === cell.load &&
      w.invalid === null,
  );
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
