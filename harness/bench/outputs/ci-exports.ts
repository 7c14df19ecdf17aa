/**
 * A run's ratios in the formats continuous-benchmarking tools ingest: Bencher's metric format (BMF:
 * benchmark → measure → value with lower and upper bounds) and github-action-benchmark's custom
 * tools (an array of { name, unit, value, range, extra } for customSmallerIsBetter and another for
 * customBiggerIsBetter). The value is the ratio's median, the bounds its within-run 95% interval.
 * A ratio that was not measured, or that the run's validity checks call invalid, is left out: a
 * dashboard would plot it as a number.
 */
import { isSimulated } from '../../system/nvidia/schema.js';
import type { Analysis, MetricAnalysis } from '../analysis/types.js';
import type { Run } from '../record/schema.js';

/** Bencher Metric Format: { benchmark: { measure: { value, lower_value?, upper_value? } } }. */
export type BencherMetricFormat = Record<string, Record<string, BencherMetric>>;
export interface BencherMetric {
  value: number;
  lower_value?: number;
  upper_value?: number;
}

/** github-action-benchmark's BenchmarkResult (src/extract.ts). */
export interface ActionBenchmarkResult {
  name: string;
  value: number;
  unit: string;
  range?: string;
  extra?: string;
}

/** Benchmark names of a simulated run carry this, so no dashboard files them beside a GPU's. */
export const SIMULATED_PREFIX = 'SIMULATED ';

/** The ratios worth plotting: measured, and not called invalid. */
function exported(analysis: Analysis): Array<MetricAnalysis & { value: number }> {
  return analysis.metrics.filter(
    (m): m is MetricAnalysis & { value: number } =>
      typeof m.stats.value === 'number' && Number.isFinite(m.stats.value) && m.verdict !== 'invalid',
  );
}

/** "streams/infer@8/slowdown" → benchmark "streams/infer@8", measure "slowdown". */
function split(id: string): [string, string] {
  const at = id.lastIndexOf('/');
  return [id.slice(0, at), id.slice(at + 1)];
}

export function bencherMetrics(run: Run, analysis: Analysis): BencherMetricFormat {
  const prefix = isSimulated(run.fingerprint) ? SIMULATED_PREFIX : '';
  const out: BencherMetricFormat = {};
  for (const m of exported(analysis)) {
    const [benchmark, measure] = split(m.metric.id);
    const ci = m.stats.ci;
    const entry = (out[`${prefix}${benchmark}`] ??= {});
    entry[measure] = { value: m.stats.value as number, ...(ci ? { lower_value: ci[0], upper_value: ci[1] } : {}) };
  }
  return out;
}

/** Both files for github-action-benchmark: a lower ratio is better in one, a higher in the other. */
export function actionBenchmarkResults(
  run: Run,
  analysis: Analysis,
): { smallerIsBetter: ActionBenchmarkResult[]; biggerIsBetter: ActionBenchmarkResult[] } {
  const simulated = isSimulated(run.fingerprint);
  const prefix = simulated ? SIMULATED_PREFIX : '';
  const result = (m: MetricAnalysis): ActionBenchmarkResult => {
    const ci = m.stats.ci;
    return {
      name: `${prefix}${m.metric.id}`,
      value: m.stats.value as number,
      unit: 'ratio',
      ...(ci ? { range: `95% CI [${ci[0].toFixed(4)}, ${ci[1].toFixed(4)}]` } : {}),
      extra: [
        `run ${run.id}, ${m.stats.n} rounds`,
        ci ? `within-run 95% CI [${ci[0]}, ${ci[1]}]` : 'no 95% interval: too few rounds',
        ...(simulated ? ["SIMULATED: made on gpushare's simulator, not on a GPU"] : []),
      ].join('\n'),
    };
  };
  const all = exported(analysis);
  return {
    smallerIsBetter: all.filter((m) => m.metric.better === 'lower').map(result),
    biggerIsBetter: all.filter((m) => m.metric.better === 'higher').map(result),
  };
}
