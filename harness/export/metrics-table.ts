/** The metric table, columns defined once: `report --format csv` rows and `--format json` objects. */
import { stringify } from 'csv-stringify/sync';
import type { Run } from '../run/schema.js';
import { runMetrics, type Metric } from '../stats/metrics.js';
import { metricStats, type MetricStats } from '../stats/summary.js';
import type { MetricVerdict } from '../stats/verdicts.js';

type Row = { m: Metric; s: MetricStats; v: MetricVerdict | undefined };
type Cell = string | number | boolean | null;

export const METRIC_COLUMNS: ReadonlyArray<{ key: string; value: (r: Row) => Cell }> = [
  { key: 'metric', value: (r) => r.m.id },
  { key: 'mode', value: (r) => r.m.mode },
  { key: 'workload', value: (r) => r.m.workload },
  { key: 'name', value: (r) => r.m.name },
  { key: 'headline', value: (r) => r.m.headline },
  { key: 'better', value: (r) => r.m.better },
  { key: 'value', value: (r) => r.s.value },
  { key: 'ciLow', value: (r) => r.s.ci?.[0] ?? null },
  { key: 'ciHigh', value: (r) => r.s.ci?.[1] ?? null },
  { key: 'halfWidth', value: (r) => r.s.halfWidth },
  { key: 'rounds', value: (r) => r.s.n },
  { key: 'mad', value: (r) => r.s.mad },
  { key: 'cv', value: (r) => r.s.cv },
  { key: 'outlierRounds', value: (r) => r.s.outliers.join(' ') },
  { key: 'threshold', value: (r) => r.v?.threshold?.text ?? null },
  { key: 'verdict', value: (r) => r.v?.verdict ?? null },
  { key: 'description', value: (r) => r.m.description },
];

function rows(run: Run, verdicts: readonly MetricVerdict[]): Row[] {
  const byId = new Map(verdicts.map((v) => [v.metric.id, v]));
  return runMetrics(run).map((m) => ({ m, s: metricStats(m), v: byId.get(m.id) }));
}

export function metricsCsv(run: Run, verdicts: readonly MetricVerdict[]): string {
  return stringify(
    rows(run, verdicts).map((r) => METRIC_COLUMNS.map((c) => c.value(r) ?? '')),
    { header: true, columns: METRIC_COLUMNS.map((c) => c.key), cast: { boolean: (b) => String(b) } },
  );
}

export function metricsJson(run: Run, verdicts: readonly MetricVerdict[]): Array<Record<string, Cell | number[]>> {
  return rows(run, verdicts).map((r) => ({ ...Object.fromEntries(METRIC_COLUMNS.map((c) => [c.key, c.value(r)])), perRound: r.m.perRound }));
}
