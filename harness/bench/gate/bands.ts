/**
 * The gate's band per headline ratio: how far a run may move from its baseline before the gate
 * calls it a change. Two parts, added in quadrature on the log scale: the between-run part (how much
 * runs on different GPUs of one model differ; learned from a set of runs, or a documented floor
 * when there are too few) and the within-run part (the change's own within-run 95% CI). The
 * thresholds file's noise band is the narrowest band ever used.
 */
import {
  combineHalfWidths,
  intervalHalfWidthLog,
  predictionHalfWidthLog,
  relativeToLog,
  runSpread,
} from '../../stats/between-runs.js';

/**
 * Level of the between-run prediction interval. A 95% interval would call 5% of equal runs changed;
 * the gate's target is at most 1% across runs. 99% still called 2.2% of A/A pairs of timeslice/infer
 * changed on the committed H100 runs (heavier tails than a normal's), 99.5% 1.5%
 * (docs/gate-calibration.md); wider loses more of the planted 10% slowdowns than it saves.
 */
export const BETWEEN_RUN_LEVEL = 0.995;

/**
 * Between-run half-width (relative) of each default-suite headline when fewer than MIN_RUNS_TO_LEARN
 * baseline runs are given: the 99.5% prediction half-width for one run against one other, learned from
 * the 58 default-suite runs of 2026-11-24 on 21 H100s (`npm run calibrate:gate`,
 * docs/gate-calibration.md), rounded up to 0.5%. First match wins; `*` covers every other ratio with
 * the widest of them.
 */
export const DEFAULT_FLOORS: ReadonlyArray<{ pattern: RegExp; relative: number }> = [
  { pattern: /^streams\/spin\/speedup-k\d+$/, relative: 0.005 },
  { pattern: /^streams\/pipeline\/.*speedup-k\d+$/, relative: 0.09 },
  { pattern: /^timeslice\/spin\/slowdown$/, relative: 0.03 },
  { pattern: /^timeslice\/gemm\/slowdown$/, relative: 0.045 },
  { pattern: /^timeslice\/infer\/slowdown$/, relative: 0.095 },
  { pattern: /^mps\/spin\/slowdown$/, relative: 0.015 },
  { pattern: /^mps\/gemm\/slowdown$/, relative: 0.06 },
  { pattern: /^mps\/infer\/slowdown$/, relative: 0.105 },
  { pattern: /.*/, relative: 0.105 },
];

/** The between-run floor of a metric id (relative, 0.05 = ±5%). */
export function floorFor(metricId: string): number {
  return DEFAULT_FLOORS.find((f) => f.pattern.test(metricId))?.relative ?? 0;
}

/** Where the between-run part came from: the spread of N runs, or the documented floor. */
export type BetweenSource = { kind: 'learned'; runs: number } | { kind: 'floor' };

/** A metric's band, every width relative to 1 on the log scale (log(1 + x)). */
export interface Band {
  source: BetweenSource;
  /** Between-run half-width, log scale. */
  betweenLog: number;
  /** The change's within-run 95% CI half-width, log scale. */
  withinLog: number;
  /** The band the change is judged against: √(between² + within²), never below the noise band. */
  halfWidthLog: number;
}

/**
 * The between-run part of a metric: learned from `history` (each run's median of the ratio) when it
 * holds at least MIN_RUNS_TO_LEARN runs, against a reference of `referenceRuns` runs; else the floor.
 */
export function betweenRun(
  metricId: string,
  history: readonly number[],
  referenceRuns: number,
): { source: BetweenSource; betweenLog: number } {
  const spread = runSpread(history);
  if (spread)
    return {
      source: { kind: 'learned', runs: spread.runs },
      betweenLog: predictionHalfWidthLog(spread, referenceRuns, BETWEEN_RUN_LEVEL),
    };
  return { source: { kind: 'floor' }, betweenLog: relativeToLog(floorFor(metricId)) };
}

/** The band from its between-run part, the change's within-run CI and the noise band (relative). */
export function bandOf(
  between: { source: BetweenSource; betweenLog: number },
  withinCi: readonly [number, number],
  noiseBand: number,
): Band {
  const withinLog = intervalHalfWidthLog(withinCi);
  const combined = combineHalfWidths(between.betweenLog, withinLog);
  return { ...between, withinLog, halfWidthLog: Math.max(combined, relativeToLog(noiseBand)) };
}

/** A log-scale half-width as the relative change it allows (+x%): exp(h) − 1. */
export const logToRelative = (halfWidthLog: number): number => Math.expm1(halfWidthLog);

/** "learned from 12 runs" or "default floor": what the gate prints beside each band. */
export function sourceText(source: BetweenSource): string {
  return source.kind === 'learned' ? `learned from ${source.runs} runs` : 'default floor';
}
