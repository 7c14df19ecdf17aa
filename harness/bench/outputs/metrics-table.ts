/** The metric table, columns defined once: `report --format csv` rows and `--json` objects. */
import { stringify } from 'csv-stringify/sync';
import type { Analysis, MetricAnalysis } from '../analysis/types.js';

type Cell = string | number | boolean | null;

export const METRIC_COLUMNS: ReadonlyArray<{ key: string; value: (r: MetricAnalysis) => Cell }> = [
  { key: 'metric', value: (r) => r.metric.id },
  { key: 'mode', value: (r) => r.metric.mode },
  { key: 'workload', value: (r) => r.metric.workload },
  { key: 'name', value: (r) => r.metric.name },
  { key: 'headline', value: (r) => r.metric.headline },
  { key: 'better', value: (r) => r.metric.better },
  { key: 'value', value: (r) => r.stats.value },
  { key: 'ciLow', value: (r) => r.stats.ci?.[0] ?? null },
  { key: 'ciHigh', value: (r) => r.stats.ci?.[1] ?? null },
  { key: 'confidence', value: (r) => r.stats.confidence },
  { key: 'ciMethod', value: (r) => r.stats.method },
  { key: 'halfWidth', value: (r) => r.stats.halfWidth },
  { key: 'target', value: (r) => r.target },
  { key: 'rounds', value: (r) => r.stats.n },
  { key: 'mad', value: (r) => r.stats.mad },
  { key: 'cv', value: (r) => r.stats.cv },
  { key: 'outlierRounds', value: (r) => r.stats.outliers.join(' ') },
  { key: 'threshold', value: (r) => r.threshold?.text ?? null },
  { key: 'verdict', value: (r) => r.verdict },
  { key: 'diagnosis', value: (r) => r.diagnosis.join('; ') || null },
  { key: 'description', value: (r) => r.metric.description },
];

export function metricsCsv(analysis: Analysis): string {
  return stringify(
    analysis.metrics.map((r) => METRIC_COLUMNS.map((c) => c.value(r) ?? '')),
    { header: true, columns: METRIC_COLUMNS.map((c) => c.key), cast: { boolean: (b) => String(b) } },
  );
}

export function metricsJson(analysis: Analysis): Array<Record<string, Cell | number[]>> {
  return analysis.metrics.map((r) => ({
    ...Object.fromEntries(METRIC_COLUMNS.map((c) => [c.key, c.value(r)])),
    perRound: r.metric.perRound,
    roundIndices: r.metric.rounds,
  }));
}
