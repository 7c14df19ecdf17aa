/** What a cross-GPU check (bench --gpus) says: do the GPUs of this host interfere with each other? */
import type { Comparison } from '../record/schema.js';
import { CROSS_GPU_METRIC } from './metrics.js';
import type { Analysis, ComparisonAnalysis, MetricAnalysis } from './types.js';

/** A loaded neighbour may cost a GPU's solo throughput at most this much (2%) for the GPUs to count as independent. */
export const CROSS_GPU_TOLERANCE = 0.02;

/** One GPU's cross-GPU ratio as measured, with its comparison (its stop) and what it loaded. */
export interface CrossGpuResult {
  crossGpu: NonNullable<Comparison['crossGpu']>;
  comparison: ComparisonAnalysis;
  metric: MetricAnalysis;
}

/** The per-GPU runs' schedule, decided from the cross-GPU check: in parallel only where the GPUs proved independent. */
export interface GpuSchedule {
  parallel: boolean;
  reason: string;
}

export function crossGpuResults(analysis: Analysis): CrossGpuResult[] {
  return analysis.comparisons.flatMap((c) => {
    const metric = c.metrics.find((m) => m.metric.name === CROSS_GPU_METRIC);
    return c.comparison.crossGpu && metric ? [{ crossGpu: c.comparison.crossGpu, comparison: c, metric }] : [];
  });
}

function described(r: CrossGpuResult): string {
  const { value, ci } = r.metric.stats;
  const interval = ci ? ` (95% CI ${ci[0].toFixed(3)}–${ci[1].toFixed(3)})` : ' (no CI)';
  return `GPU ${r.crossGpu.victimGpu} ${r.metric.metric.workload} ${value === null ? 'unmeasured' : `${value.toFixed(3)}×`}${interval}`;
}

/**
 * Parallel when every GPU's cross-GPU slowdown has a valid CI whose upper end is within the
 * tolerance: then a neighbour's load provably costs under 2%, and running the per-GPU benches side
 * by side cannot bias them by more. Anything else (a measurable cost, a CI too wide to tell, an
 * invalid check) runs them one after another, which is slower but cannot be contaminated.
 */
export function gpuSchedule(results: readonly CrossGpuResult[]): GpuSchedule {
  if (results.length === 0)
    return { parallel: false, reason: 'no cross-GPU check ran, so the GPUs run one after another' };
  const limit = 1 + CROSS_GPU_TOLERANCE;
  const doubtful = results.filter(
    (r) => r.metric.verdict === 'invalid' || r.metric.stats.ci === null || r.metric.stats.ci[1] > limit,
  );
  const gpus = [...new Set(doubtful.map((r) => `GPU ${r.crossGpu.victimGpu}`))];
  const all = results.map(described).join('; ');
  if (doubtful.length === 0)
    return {
      parallel: true,
      reason: `a loaded neighbour costs every GPU under ${CROSS_GPU_TOLERANCE * 100}% (${all}): the GPUs run in parallel`,
    };
  return {
    parallel: false,
    reason: `a loaded neighbour may cost ${gpus.join(' and ')} over ${CROSS_GPU_TOLERANCE * 100}% (${all}): the GPUs run one after another`,
  };
}
