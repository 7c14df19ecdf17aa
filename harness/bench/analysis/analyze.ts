/**
 * The analysis of a run, computed once: rounds (from `groupRounds` alone), metrics, statistics,
 * validity, verdicts, CI targets and diagnoses. Every output — console, markdown, charts, CSV/JSON,
 * gate, artifacts, advice — and the scheduler's stopping rule read this, never raw trials.
 */

import { type MetricStats, MIN_ROUNDS_FOR_CI, metricStats } from '../../stats/statistics.js';
import { type Bounds, boundsFor, describeBounds, type Thresholds } from '../gate/thresholds.js';
import type { Comparison, RoundPolicy, Run } from '../record/schema.js';
import {
  loopCheck,
  loopCheckWarning,
  memoryAccount,
  memoryPerClientMiB,
  roundsFailure,
  stepHostTime,
} from './clients.js';
import { comparisonNoise, diagnose } from './diagnosis.js';
import { comparisonMetrics, crossModeMetrics, type Metric } from './metrics.js';
import { groupRounds, isComplete } from './rounds.js';
import {
  type Analysis,
  type ComparisonAnalysis,
  type MetricAnalysis,
  REPORT_HALF_WIDTH,
  type Verdict,
} from './types.js';
import { comparisonValidity, type Validity } from './validity.js';

export function judge(stats: MetricStats, bounds: Bounds): { verdict: Verdict; reason: string | null } {
  if (stats.value === null) return { verdict: 'inconclusive', reason: 'no usable round' };
  if (stats.ci === null)
    return {
      verdict: 'inconclusive',
      reason: `${stats.n} round(s): a 95% CI of a median needs at least ${MIN_ROUNDS_FOR_CI}`,
    };
  const [lo, hi] = stats.ci;
  const min = bounds.min ?? -Infinity;
  const max = bounds.max ?? Infinity;
  if (lo >= min && hi <= max) return { verdict: 'pass', reason: null };
  if (hi < min || lo > max)
    return {
      verdict: 'fail',
      reason: `the whole CI [${lo.toFixed(3)}, ${hi.toFixed(3)}] lies outside ${describeBounds(bounds)}`,
    };
  return {
    verdict: 'inconclusive',
    reason: `the CI [${lo.toFixed(3)}, ${hi.toFixed(3)}] straddles ${describeBounds(bounds)}`,
  };
}

/** The half-width a metric's rounds aim at: graded ratios the tighter target, headline ratios theirs. */
export function targetFor(metric: Metric, thresholds: Thresholds, policy: RoundPolicy): number | null {
  if (boundsFor(thresholds, metric.id) !== null) return Math.min(policy.gradedCiTarget, policy.ciTarget);
  return metric.headline ? policy.ciTarget : null;
}

function analyzeMetric(
  run: Pick<Run, 'config'>,
  metric: Metric,
  c: ComparisonAnalysis,
  noise: () => string[],
  validity: Validity,
  thresholds: Thresholds,
): MetricAnalysis {
  const stats = metricStats(metric);
  const rule = boundsFor(thresholds, metric.id);
  const threshold = rule ? { ...rule, text: describeBounds(rule.bounds) } : null;
  const target = targetFor(metric, thresholds, run.config.roundPolicy);
  const wide = stats.halfWidth === null || stats.halfWidth > (target ?? REPORT_HALF_WIDTH);
  const diagnosis = wide ? diagnose(c, metric, stats, noise) : [];
  const base = { metric, stats, threshold, target, diagnosis, warnings: validity.warnings };
  if (validity.invalid.length > 0) return { ...base, verdict: 'invalid', reasons: validity.invalid };
  if (!rule) return { ...base, verdict: 'none', reasons: [] };
  const { verdict, reason } = judge(stats, rule.bounds);
  return { ...base, verdict, reasons: reason ? [reason] : [] };
}

/** One comparison: its rounds, validity and metrics. The scheduler calls this after every round. */
export function analyzeComparison(
  run: Pick<Run, 'trials' | 'samples' | 'contamination' | 'stops' | 'config' | 'clientStarts' | 'plainProcesses'>,
  comparison: Comparison,
  thresholds: Thresholds,
): ComparisonAnalysis {
  const rounds = groupRounds(comparison, run.trials);
  const validity = comparisonValidity(run, comparison, rounds);
  const loop = loopCheck(rounds);
  const loopWarning = loopCheckWarning(loop);
  if (loopWarning !== null) validity.warnings.push(loopWarning);
  const analysis: ComparisonAnalysis = {
    comparison,
    rounds,
    completeRounds: rounds.filter((r) => isComplete(comparison, r)).length,
    validity,
    stop: run.stops.find((s) => s.comparisonId === comparison.id) ?? null,
    metrics: [],
    memoryPerClientMiB: memoryPerClientMiB(run, comparison),
    memory: memoryAccount(run, comparison),
    stepHost: stepHostTime(rounds),
    failure: roundsFailure(rounds),
    loopCheck: loop,
  };
  const noise = noiseOnce(run, analysis);
  // Skipped as unsupported (green contexts this GPU cannot split so): no ratio to show, its reason is the result.
  if (unsupportedHere(analysis)) return analysis;
  analysis.metrics = comparisonMetrics(comparison, rounds).map((m) =>
    analyzeMetric(run, m, analysis, noise, validity, thresholds),
  );
  return analysis;
}

/** The comparison's noise evidence, measured at most once, and only if some metric needs a diagnosis. */
function noiseOnce(run: Pick<Run, 'samples'>, c: ComparisonAnalysis): () => string[] {
  let lines: string[] | null = null;
  return () => (lines ??= comparisonNoise(run, c));
}

export function analyze(
  run: Run,
  thresholds: Thresholds = run.config.thresholds,
  options: { crossMode: boolean } = { crossMode: true },
): Analysis {
  const comparisons = run.plan.map((c) => analyzeComparison(run, c, thresholds));
  // The cross-mode ratios (MPS against time-slicing) are the slow part; the calibration needs only graded ones.
  for (const mps of options.crossMode ? comparisons.filter((c) => c.comparison.mode === 'mps') : []) {
    const plain = comparisons.find(
      (c) =>
        c.comparison.mode === 'timeslice' &&
        c.comparison.workload.name === mps.comparison.workload.name &&
        c.comparison.clientEnv.length === mps.comparison.clientEnv.length,
    );
    const slowdown = (c: ComparisonAnalysis) => c.metrics.find((m) => m.metric.name === 'slowdown')?.metric;
    const [mpsSlowdown, plainSlowdown] = [slowdown(mps), plain && slowdown(plain)];
    if (!plain || !mpsSlowdown || !plainSlowdown) continue;
    const invalid = [...mps.validity.invalid, ...plain.validity.invalid];
    const validity = { invalid, warnings: [...mps.validity.warnings, ...plain.validity.warnings] };
    const cross = crossModeMetrics(
      mps.comparison,
      mps.rounds,
      plain.comparison,
      plain.rounds,
      mpsSlowdown,
      plainSlowdown,
    );
    mps.metrics.push(...cross.map((m) => analyzeMetric(run, m, mps, noiseOnce(run, mps), validity, thresholds)));
  }
  const metrics = comparisons.flatMap((c) => c.metrics);
  return {
    comparisons,
    metrics,
    verdicts: metrics.filter((m) => m.metric.headline || m.threshold !== null),
    thresholds,
  };
}

/**
 * A comparison this machine cannot run (green contexts a GPU cannot split so, a workload without tenants): skipped
 * with its reason, as a skipped mode is; measuring nothing there is no failure of the run.
 */
export function unsupportedHere(c: Pick<ComparisonAnalysis, 'stop'>): boolean {
  return c.stop?.reason === 'unsupported';
}
