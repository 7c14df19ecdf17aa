/**
 * Why a ratio's CI is wide, from what the run measured: too few rounds, a noisy solo arm, short
 * fixed work, a drifting SM clock, outlier rounds. Each line states the measured size.
 */
import { max, mean, min, sampleStandardDeviation } from 'simple-statistics';
import { type MetricStats, MIN_ROUNDS_FOR_CI } from '../../stats/statistics.js';
import { fixedWorkStreams, type Run } from '../record/schema.js';
import { throughputPerS } from './measures.js';
import type { Metric } from './metrics.js';
import { armResults } from './rounds.js';
import type { ComparisonAnalysis } from './types.js';

/** A spread above this (CV, or an SM clock range as a fraction) is worth naming. */
const NOTABLE = 0.03;
/** Fixed work shorter than this per trial is mostly launch and timer jitter. */
const SHORT_WORK_MS = 50;

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const cv = (xs: number[]) => (xs.length >= 2 && mean(xs) > 0 ? sampleStandardDeviation(xs) / mean(xs) : 0);

/**
 * What varied in a comparison, measured once for all of its metrics: each arm's spread between rounds,
 * short fixed work, and the SM clock's range over the comparison's windows.
 */
export function comparisonNoise(
  run: Pick<Run, 'samples'>,
  c: Pick<ComparisonAnalysis, 'comparison' | 'rounds'>,
): string[] {
  const lines: string[] = [];
  const comparison = c.comparison;
  if (fixedWorkStreams(comparison)) {
    const arms = comparison.arms
      .map((a) => ({ arm: a.id, ms: armResults(c.rounds, a.id).map((r) => r.gpuMs) }))
      .filter((a) => a.ms.length > 0);
    const noisy = arms.filter((a) => cv(a.ms) > NOTABLE).map((a) => `${a.arm} ${pct(cv(a.ms))}`);
    if (noisy.length > 0) lines.push(`the fixed work's GPU time varied between rounds (CV ${noisy.join(', ')})`);
    const short = arms.filter((a) => mean(a.ms) < SHORT_WORK_MS).map((a) => `${a.arm} ${mean(a.ms).toFixed(1)} ms`);
    if (short.length > 0)
      lines.push(
        `short fixed work (${short.join(', ')}): launch and timer jitter is a large share; raise --set ${comparison.workload.name}.iterations`,
      );
  } else {
    const eager = comparison.workload.params.graph === false;
    const soloCv = Math.max(
      ...comparison.clientEnv.map((_, i) => cv(armResults(c.rounds, `solo-c${i}`).map(throughputPerS))),
    );
    const contended = cv(armResults(c.rounds, 'contended').map(throughputPerS));
    if (soloCv > NOTABLE && soloCv > 2 * contended) {
      lines.push(
        `the solo arm is the noisy one: a client alone varied ${pct(soloCv)} (CV of throughput between rounds), contended ${pct(contended)}${eager ? `; an eager loop of small kernels is launch-bound, so it follows host latency (--set ${comparison.workload.name}.graph=true replays a CUDA graph)` : ''}`,
      );
    } else if (soloCv > NOTABLE || contended > NOTABLE) {
      lines.push(`both arms vary between rounds: solo CV ${pct(soloCv)}, contended CV ${pct(contended)}`);
    }
  }
  const ids = new Set(c.rounds.flatMap((r) => [...r.trials.values()].map((t) => t.id)));
  const clocks = run.samples
    .filter((s) => s.trialId !== null && ids.has(s.trialId) && s.smClockMHz !== null)
    .map((s) => s.smClockMHz as number);
  if (clocks.length >= 2 && (max(clocks) - min(clocks)) / max(clocks) > NOTABLE)
    lines.push(`the SM clock ranged ${min(clocks)}–${max(clocks)} MHz during the comparison's windows`);
  return lines;
}

/** Why one metric's CI is wide: its rounds and stop, what varied in its comparison (`noise`), its outliers. */
export function diagnose(
  c: Pick<ComparisonAnalysis, 'stop'>,
  metric: Metric,
  stats: MetricStats,
  noise: () => string[],
): string[] {
  if (metric.parts)
    return [
      `a ratio of two modes' medians: its CI combines both comparisons' spread (${metric.parts.numerator.length} and ${metric.parts.denominator.length} rounds)`,
    ];
  const lines: string[] = [];
  if (stats.n < MIN_ROUNDS_FOR_CI)
    lines.push(`only ${stats.n} complete round(s): a 95% interval of a median needs at least ${MIN_ROUNDS_FOR_CI}`);
  if (c.stop && c.stop.reason !== 'ci-target')
    lines.push(`stopped adding rounds at ${c.stop.rounds}: ${stopText(c.stop.reason)}`);
  lines.push(...noise());
  if (metric.name.startsWith('pageable'))
    lines.push('pageable host memory is staged through a CPU copy, so it varies with host memory bandwidth and load');
  if (stats.outliers.length > 0)
    lines.push(`outlier round(s) ${stats.outliers.join(', ')} (over 3 scaled MADs from the median; kept)`);
  if (lines.length === 0)
    lines.push(`round-to-round spread of the ratio itself: CV ${pct(stats.cv ?? 0)} over ${stats.n} rounds`);
  return lines;
}

function stopText(reason: string): string {
  switch (reason) {
    case 'time-budget':
      return 'its share of --time-budget-s ran out';
    case 'max-rounds':
      return '--max-rounds reached';
    case 'fixed-rounds':
      return 'a fixed number of rounds (--max-rounds equals --rounds)';
    case 'unsupported':
      return 'skipped: this machine cannot run it so';
    case 'invalid':
      return 'a validity check failed, which more rounds cannot mend (the reason is on its own line)';
    default:
      return 'a trial failed or timed out';
  }
}
