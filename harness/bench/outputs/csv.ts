/** CSV exporters: pure functions from a run to text. Columns are defined once, here. */
import path from 'node:path';
import { stringify } from 'csv-stringify/sync';
import writeFileAtomic from 'write-file-atomic';
import type { RecordWriter } from '../../record/store.js';
import type { Sample } from '../../system/nvidia/schema.js';
import { SAMPLE_FIELDS } from '../../system/nvidia/smi-csv.js';
import { throughputPerS } from '../analysis/measures.js';
import type { ClientResult, Run, Trial } from '../record/schema.js';

interface Column<Row> {
  header: string;
  value: (row: Row) => string | number | boolean | null | undefined;
}

type TrialRow = { trial: Trial; mode: string; workload: string; client: ClientResult | null };

/** One row per client per trial (a trial without measurements has one row with empty measurements). */
export const TRIAL_COLUMNS: ReadonlyArray<Column<TrialRow>> = [
  { header: 'trialId', value: (r) => r.trial.id },
  { header: 'mode', value: (r) => r.mode },
  { header: 'workload', value: (r) => r.workload },
  { header: 'arm', value: (r) => r.trial.arm },
  { header: 'round', value: (r) => r.trial.round },
  { header: 'status', value: (r) => r.trial.status },
  { header: 'client', value: (r) => r.client?.client },
  { header: 'streams', value: (r) => r.client?.variant.streams },
  { header: 'pinned', value: (r) => r.client?.variant.pinned },
  { header: 'iterations', value: (r) => r.client?.iterations },
  { header: 'gpuMs', value: (r) => r.client?.gpuMs },
  { header: 'windowMs', value: (r) => (r.client ? (r.client.windowEndUs - r.client.windowStartUs) / 1000 : undefined) },
  { header: 'throughputPerS', value: (r) => (r.client ? throughputPerS(r.client) : undefined) },
  { header: 'latencyP50Ms', value: (r) => r.client?.latency?.p50Ms },
  { header: 'latencyP99Ms', value: (r) => r.client?.latency?.p99Ms },
  { header: 'windowStartUs', value: (r) => r.client?.windowStartUs },
  { header: 'windowEndUs', value: (r) => r.client?.windowEndUs },
  { header: 'overlapMin', value: (r) => ('overlap' in r.trial ? r.trial.overlap?.min : undefined) },
  { header: 'reason', value: (r) => ('reason' in r.trial ? r.trial.reason : undefined) },
  { header: 'startedAt', value: (r) => r.trial.startedAt },
];

export const SAMPLE_COLUMNS: ReadonlyArray<Column<Sample>> = [
  { header: 'tUs', value: (s) => s.tUs },
  { header: 'trialId', value: (s) => s.trialId },
  ...SAMPLE_FIELDS.map((f) => ({ header: f.key, value: (s: Sample) => s[f.key] })),
];

function toCsv<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[]): string {
  return stringify(
    rows.map((row) => columns.map((c) => c.value(row) ?? '')),
    { header: true, columns: columns.map((c) => c.header), cast: { boolean: (v) => String(v) } },
  );
}

export function trialsCsv(run: Run): string {
  const comparisons = new Map(run.plan.map((c) => [c.id, c]));
  const rows: TrialRow[] = run.trials.flatMap((trial) => {
    const comparison = comparisons.get(trial.comparisonId);
    const base = { trial, mode: comparison?.mode ?? '', workload: comparison?.workload.name ?? '' };
    return 'clients' in trial && trial.clients.length > 0
      ? trial.clients.map((client): TrialRow => ({ ...base, client }))
      : [{ ...base, client: null }];
  });
  return toCsv(TRIAL_COLUMNS, rows);
}

export function samplesCsv(run: Run): string {
  return toCsv(SAMPLE_COLUMNS, run.samples);
}

/** The CSV files of a run directory, written once when the run ends or is interrupted (run.json holds every trial meanwhile). */
export async function writeTables(run: Run, writer: RecordWriter): Promise<void> {
  await writer.writeText('trials.csv', trialsCsv(run));
  await writer.writeText('samples.csv', samplesCsv(run));
}

/** writeTables, synchronously: for a forced exit, where process.exit follows at once. */
export function writeTablesSync(run: Run, dir: string): void {
  writeFileAtomic.sync(path.join(dir, 'trials.csv'), trialsCsv(run));
  writeFileAtomic.sync(path.join(dir, 'samples.csv'), samplesCsv(run));
}
