/** Threshold verdicts: pass or fail only when the whole 95% CI says so. */
import type { Run } from '../run/schema.js';
import { boundsFor, describeBounds, type Bounds, type Thresholds } from '../thresholds.js';
import { runMetrics, type Metric } from './metrics.js';
import { metricStats, MIN_ROUNDS_FOR_CI, type MetricStats } from './summary.js';
import { comparisonValidity } from './validity.js';

/**
 * pass: the whole CI lies within the bounds (inclusive); fail: the whole CI lies outside them;
 * inconclusive: the CI straddles a bound, or too few rounds for a CI; invalid: a validity check
 * failed; none: no threshold applies.
 */
export type Verdict = 'pass' | 'fail' | 'inconclusive' | 'invalid' | 'none';

export interface MetricVerdict {
  metric: Metric;
  stats: MetricStats;
  threshold: { pattern: string; bounds: Bounds; text: string } | null;
  verdict: Verdict;
  /** Why the verdict is not pass (validity reasons, a CI that straddles a bound…). */
  reasons: string[];
  warnings: string[];
}

export function judge(stats: MetricStats, bounds: Bounds): { verdict: Verdict; reason: string | null } {
  if (stats.value === null) return { verdict: 'inconclusive', reason: 'no usable round' };
  if (stats.ci === null) return { verdict: 'inconclusive', reason: `${stats.n} round(s): a CI needs at least ${MIN_ROUNDS_FOR_CI}` };
  const [lo, hi] = stats.ci;
  const min = bounds.min ?? -Infinity;
  const max = bounds.max ?? Infinity;
  if (lo >= min && hi <= max) return { verdict: 'pass', reason: null };
  if (hi < min || lo > max) return { verdict: 'fail', reason: `the whole CI [${lo.toFixed(3)}, ${hi.toFixed(3)}] lies outside ${describeBounds(bounds)}` };
  return { verdict: 'inconclusive', reason: `the CI [${lo.toFixed(3)}, ${hi.toFixed(3)}] straddles ${describeBounds(bounds)}` };
}

/** Verdicts for every headline metric and every metric a threshold names. */
export function runVerdicts(run: Run, thresholds: Thresholds): MetricVerdict[] {
  const validity = new Map(run.plan.map((c) => [c.id, comparisonValidity(run, c)]));
  return runMetrics(run)
    .map((metric) => ({ metric, rule: boundsFor(thresholds, metric.id) }))
    .filter(({ metric, rule }) => metric.headline || rule !== null)
    .map(({ metric, rule }) => {
      const stats = metricStats(metric);
      const checks = validity.get(metric.comparisonId) ?? { invalid: [], warnings: [] };
      const threshold = rule ? { ...rule, text: describeBounds(rule.bounds) } : null;
      if (checks.invalid.length > 0) return { metric, stats, threshold, verdict: 'invalid' as const, reasons: checks.invalid, warnings: checks.warnings };
      if (!rule) return { metric, stats, threshold, verdict: 'none' as const, reasons: [], warnings: checks.warnings };
      const { verdict, reason } = judge(stats, rule.bounds);
      return { metric, stats, threshold, verdict, reasons: reason ? [reason] : [], warnings: checks.warnings };
    });
}
