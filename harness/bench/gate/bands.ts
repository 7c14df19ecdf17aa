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
  studentTCritical,
} from '../../stats/between-runs.js';
import { changeNoiseSdLog, smallestCaughtLog } from '../../stats/power.js';

/**
 * Level of the between-run prediction interval. A 95% interval would call 5% of equal runs changed;
 * the gate's target is at most 1% across runs. 99% still called 2.2% of A/A pairs of timeslice/infer
 * changed on the committed H100 runs (heavier tails than a normal's), 99.5% 1.5%
 * (docs/gate-calibration.md); wider loses more of the planted 10% slowdowns than it saves.
 */
export const BETWEEN_RUN_LEVEL = 0.995;

/** How many runs the floors were learned from: a floor is t(99.5%, FLOOR_RUNS − 1) · s · √2 of their spread s. */
export const FLOOR_RUNS = 58;

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
  // Stryker disable next-line OptionalChaining: the last floor's /.*/ matches every id, so find always finds one
  return DEFAULT_FLOORS.find((f) => f.pattern.test(metricId))?.relative ?? 0;
}

/** Where the between-run part came from: the spread of N runs, or the documented floor. */
export type BetweenSource = { kind: 'learned'; runs: number } | { kind: 'floor' };

/** A metric's band, every width relative to 1 on the log scale (log(1 + x)). */
export interface Band {
  source: BetweenSource;
  /** Between-run half-width, log scale. */
  betweenLog: number;
  /** The between-run standard deviation that half-width stands for (its half-width ÷ its t), log scale. */
  betweenSdLog: number;
  /** The change's within-run 95% CI half-width, log scale. */
  withinLog: number;
  /** The band the change is judged against: √(between² + within²), never below the noise band. */
  halfWidthLog: number;
  /** The smallest change (log scale, the worse way) called a regression in POWER (95%) of runs (stats/power.ts). */
  caughtLog: number;
}

/** The between-run part of a band: where it came from, its half-width and the standard deviation behind it. */
export interface BetweenPart {
  source: BetweenSource;
  betweenLog: number;
  betweenSdLog: number;
}

/**
 * The between-run part of a metric: learned from `history` (each run's median of the ratio) when it
 * holds at least MIN_RUNS_TO_LEARN runs, against a reference of `referenceRuns` runs; else the floor.
 */
export function betweenRun(metricId: string, history: readonly number[], referenceRuns: number): BetweenPart {
  const spread = runSpread(history);
  // Either way a t(99.5%, runs − 1) prediction half-width: of the history's spread, or of the floors' 58 runs.
  const part = (source: BetweenSource, betweenLog: number, runs: number) => ({
    source,
    betweenLog,
    betweenSdLog: betweenLog / studentTCritical(BETWEEN_RUN_LEVEL, runs - 1),
  });
  if (spread)
    return part(
      { kind: 'learned', runs: spread.runs },
      predictionHalfWidthLog(spread, referenceRuns, BETWEEN_RUN_LEVEL),
      spread.runs,
    );
  return part({ kind: 'floor' }, relativeToLog(floorFor(metricId)), FLOOR_RUNS);
}

/**
 * The band from its between-run part, the change's within-run 95% CI and the noise band (relative), with
 * the smallest change it catches in 95% of runs.
 */
export function bandOf(between: BetweenPart, withinCi: readonly [number, number], noiseBand: number): Band {
  const withinLog = intervalHalfWidthLog(withinCi);
  const combined = combineHalfWidths(between.betweenLog, withinLog);
  const halfWidthLog = Math.max(combined, relativeToLog(noiseBand));
  const caughtLog = smallestCaughtLog(halfWidthLog, changeNoiseSdLog(between.betweenSdLog, withinLog));
  return { ...between, withinLog, halfWidthLog, caughtLog };
}

/** A log-scale half-width as the relative change it allows (+x%): exp(h) − 1. */
export const logToRelative = (halfWidthLog: number): number => Math.expm1(halfWidthLog);

/** A log change the worse way as the ratio's relative change: +0.05 where lower is better, −0.05 where higher is. */
export const worseChange = (log: number, better: 'higher' | 'lower'): number =>
  Math.expm1(better === 'higher' ? -log : log);

/** "learned from 12 runs" or "default floor": what the gate prints beside each band. */
export function sourceText(source: BetweenSource): string {
  return source.kind === 'learned' ? `learned from ${source.runs} runs` : 'default floor';
}
