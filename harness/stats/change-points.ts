/**
 * Change points of a series of runs, as Apache Otava (formerly Hunter; Fleming et al. 2023, "Hunter:
 * Using Change Point Detection to Hunt for Performance Regressions", ICPE '23) finds them, on the log of
 * each run's value:
 *
 * 1. split: E-divisive (e-divisive.ts) proposes the best split of every segment; the strongest (largest
 *    Q̂) is kept when Welch's t-test between the two sides it compared gives p below a looser first-pass
 *    level, and the search goes on in the segments it leaves, until a proposal fails;
 * 2. merge: every candidate is tested again between its neighbours; while one has p not below the level,
 *    or a change (ratio of the segments' medians) smaller than the least magnitude, the weakest (largest
 *    p, else smallest change) is removed and its neighbours tested again over the merged segment.
 *
 * Two departures from Otava, both in the split, which only proposes: Otava tests a proposal between the
 * candidates around it, here between the sides E-divisive compared (z[s, τ) and z[τ, κ)), so a step
 * that later comes back is proposed rather than averaged away; and Otava slides a window of 50 points
 * over long series, where the histories here are shorter and are one window. The merge is Otava's.
 */
import { median } from 'simple-statistics';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP } from './bootstrap.js';
import { bestSplit, DistanceSums, type Split } from './e-divisive.js';
import { type WelchTest, welchTest } from './welch.js';

/** The fewest runs on either side of a change: Welch's test needs 2 a side, and 3 give each side a median of its own. */
export const MIN_SEGMENT_RUNS = 3;
/** The default level a change's p-value must be below: Otava's default. */
export const DEFAULT_CHANGE_LEVEL = 0.001;

export interface ChangePointOptions {
  /** A change is kept when Welch's two-sided p is below this. */
  level: number;
  /** A change is kept when |log(ratio of medians)| is at least this (log(1 + x) of a relative floor x). */
  minLogMagnitude: number;
  /** The fewest values either side. */
  minSize?: number;
  /** Seed of the bootstrap interval: the same series and seed give the same interval. */
  seed: number;
}

/** One change that survived the merge. */
export interface ChangePoint {
  /** Index of the first value after the change. */
  index: number;
  /** Values in the segment before it (from the previous change or the start). */
  before: number;
  /** Values in the segment after it (to the next change or the end). */
  after: number;
  /** median(after) ÷ median(before). */
  ratio: number;
  /** 95% percentile-bootstrap interval of that ratio (each segment resampled on its own). */
  ci: [number, number];
  /** Welch's t on the segments' log values, its degrees of freedom and two-sided p. */
  t: number;
  df: number;
  p: number;
}

/**
 * The looser level of the split step: Otava's first pass takes 10 × the level below 0.05 (2 × below
 * 0.5), so the merge, not the split, decides; a candidate the split lets through may still be removed.
 */
export function firstPassLevel(level: number): number {
  if (level < 0.05) return level * 10;
  return level < 0.5 ? level * 2 : level;
}

/** A candidate the merge removed, as it was tested when removed, and which test it failed. */
export interface RemovedCandidate {
  index: number;
  /** median(after) ÷ median(before) between its neighbours then. */
  ratio: number;
  p: number;
  /** `p`: p not below the level; `magnitude`: the change smaller than the least magnitude. */
  failed: 'p' | 'magnitude';
}

/** What the search found: the changes kept, and the candidates the merge removed (in the order removed). */
export interface ChangePointSearch {
  changes: ChangePoint[];
  removed: RemovedCandidate[];
}

/** A candidate tested between `start` and `end`: the ratio of the sides' medians and Welch's test of their logs. */
interface Tested extends WelchTest {
  index: number;
  start: number;
  end: number;
  ratio: number;
  logMagnitude: number;
}

function test(values: readonly number[], logs: readonly number[], start: number, index: number, end: number): Tested {
  const ratio = median(values.slice(index, end)) / median(values.slice(start, index));
  const welch = welchTest(logs.slice(start, index), logs.slice(index, end));
  return { ...welch, index, start, end, ratio, logMagnitude: Math.abs(Math.log(ratio)) };
}

/** Each candidate (sorted) tested between its neighbours. */
function testAll(values: readonly number[], logs: readonly number[], candidates: readonly number[]): Tested[] {
  return candidates.map((index, i) =>
    test(values, logs, candidates[i - 1] ?? 0, index, candidates[i + 1] ?? values.length),
  );
}

/** Step 1: candidates, sorted. */
function split(values: readonly number[], logs: readonly number[], level: number, minSize: number): number[] {
  const sums = new DistanceSums(logs);
  const found: number[] = [];
  for (;;) {
    const bounds = [0, ...found, values.length];
    let best: (Split & { start: number }) | null = null;
    // Stryker disable next-line EqualityOperator,ArithmeticOperator: a segment past the last bound has no end, so no split
    for (let i = 0; i + 1 < bounds.length; i++) {
      const start = bounds[i] as number;
      const s = bestSplit(sums, start, bounds[i + 1] as number, minSize);
      // Stryker disable next-line EqualityOperator: equal Q̂ in two segments is a float coincidence; each is proposed in turn
      if (s && (best === null || s.q > best.q)) best = { ...s, start };
    }
    // Tested on the two sides E-divisive compared, z[start, τ) and z[τ, κ): a later change past κ does not hide this one.
    if (best === null || !(test(values, logs, best.start, best.tau, best.kappa).p < level)) return found;
    found.push(best.tau);
    found.sort((a, b) => a - b);
  }
}

/** Step 2: the candidates left when every one passes both tests (the weakest removed one at a time). */
function merge(
  values: readonly number[],
  logs: readonly number[],
  candidates: readonly number[],
  options: Pick<ChangePointOptions, 'level' | 'minLogMagnitude'>,
): { kept: Tested[]; removed: RemovedCandidate[] } {
  let kept = [...candidates];
  const removed: RemovedCandidate[] = [];
  for (;;) {
    const tested = testAll(values, logs, kept);
    if (tested.length === 0) return { kept: [], removed };
    const byP = tested.reduce((a, b) => (b.p > a.p ? b : a));
    const bySize = tested.reduce((a, b) => (b.logMagnitude < a.logMagnitude ? b : a));
    const failed = !(byP.p < options.level) ? 'p' : bySize.logMagnitude >= options.minLogMagnitude ? null : 'magnitude';
    if (failed === null) return { kept: tested, removed };
    const weakest = failed === 'p' ? byP : bySize;
    removed.push({ index: weakest.index, ratio: weakest.ratio, p: weakest.p, failed });
    kept = kept.filter((x) => x !== weakest.index);
  }
}

/** The changes of `values` (each > 0, in run order), with their size, interval and test. */
export function findChangePoints(values: readonly number[], options: ChangePointOptions): ChangePointSearch {
  if (values.some((v) => !(v > 0))) throw new RangeError('change points are found on positive values (ratios)');
  const minSize = options.minSize ?? MIN_SEGMENT_RUNS;
  if (minSize < 2) throw new RangeError(`a segment needs 2 values for Welch's test, got ${minSize}`);
  if (!(options.level > 0 && options.level < 1))
    throw new RangeError(`the level must lie in (0, 1), got ${options.level}`);
  const logs = values.map(Math.log);
  const candidates = split(values, logs, firstPassLevel(options.level), minSize);
  const { kept, removed } = merge(values, logs, candidates, options);
  const changes = kept.map((c): ChangePoint => {
    const before = values.slice(c.start, c.index);
    const after = values.slice(c.index, c.end);
    const seed = (options.seed + c.index) >>> 0;
    return {
      index: c.index,
      before: before.length,
      after: after.length,
      ratio: c.ratio,
      ci: bootstrapRatioOfMediansCI(after, before, { ...DEFAULT_BOOTSTRAP, seed }),
      t: c.t,
      df: c.df,
      p: c.p,
    };
  });
  return { changes, removed };
}
