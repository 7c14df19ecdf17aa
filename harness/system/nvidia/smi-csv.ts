/**
 * nvidia-smi --query-* CSV parsing. Values such as [N/A] and [Not Supported] become null; a row
 * with the wrong number of fields, or a number that is not a number, is an error naming the row.
 */

/** A field nvidia-smi reports in a --query-gpu CSV, and how it is typed. */
export interface QueryField<K extends string = string> {
  query: string;
  key: K;
  kind: 'number' | 'string';
}

/** The fields of one sampler line, in query order: defined once, used by the sampler, CSV and schema. */
export const SAMPLE_FIELDS = [
  { query: 'timestamp', key: 'smiTimestamp', kind: 'string' },
  { query: 'index', key: 'gpuIndex', kind: 'number' },
  { query: 'utilization.gpu', key: 'utilGpuPct', kind: 'number' },
  { query: 'utilization.memory', key: 'utilMemPct', kind: 'number' },
  { query: 'memory.used', key: 'memoryUsedMiB', kind: 'number' },
  { query: 'power.draw', key: 'powerW', kind: 'number' },
  { query: 'clocks.current.sm', key: 'smClockMHz', kind: 'number' },
  { query: 'clocks.current.memory', key: 'memClockMHz', kind: 'number' },
  { query: 'temperature.gpu', key: 'temperatureC', kind: 'number' },
  { query: 'pstate', key: 'pstate', kind: 'string' },
  { query: 'clocks_event_reasons.active', key: 'clocksEventReasons', kind: 'string' },
] as const satisfies readonly QueryField[];

/** The per-GPU fields the fingerprint reads. */
export const GPU_FIELDS = [
  { query: 'index', key: 'index', kind: 'number' },
  { query: 'uuid', key: 'uuid', kind: 'string' },
  { query: 'name', key: 'name', kind: 'string' },
  { query: 'pci.bus_id', key: 'busId', kind: 'string' },
  { query: 'driver_version', key: 'driverVersion', kind: 'string' },
  { query: 'memory.total', key: 'memoryTotalMiB', kind: 'number' },
  { query: 'memory.used', key: 'memoryUsedMiB', kind: 'number' },
  { query: 'utilization.gpu', key: 'utilGpuPct', kind: 'number' },
  { query: 'compute_mode', key: 'computeMode', kind: 'string' },
  { query: 'persistence_mode', key: 'persistenceMode', kind: 'string' },
  { query: 'mig.mode.current', key: 'migModeCurrent', kind: 'string' },
  { query: 'mig.mode.pending', key: 'migModePending', kind: 'string' },
] as const satisfies readonly QueryField[];

/** The compute-apps fields the fingerprint reads (other processes on the GPU). */
export const COMPUTE_APP_FIELDS = [
  { query: 'pid', key: 'pid', kind: 'number' },
  { query: 'process_name', key: 'name', kind: 'string' },
  { query: 'used_memory', key: 'usedMemoryMiB', kind: 'number' },
  { query: 'gpu_uuid', key: 'gpuUuid', kind: 'string' },
] as const satisfies readonly QueryField[];

type FieldValue<F extends QueryField> = F['kind'] extends 'number' ? number | null : string | null;
/** One parsed CSV row: each field's key with a number, a string, or null when nvidia-smi had no value. */
export type Row<Fs extends readonly QueryField[]> = { [F in Fs[number] as F['key']]: FieldValue<F> };

export type ParsedRow<Fs extends readonly QueryField[]> = { ok: true; row: Row<Fs> } | { ok: false; error: string };

const MISSING = new Set(['[N/A]', 'N/A', '[Not Supported]', '[Unknown Error]', '[Insufficient Permissions]', '']);

export function queryArg(fields: readonly QueryField[]): string {
  return fields.map((f) => f.query).join(',');
}

/** Parses one `--format=csv,noheader,nounits` line against `fields`. */
export function parseCsvRow<const Fs extends readonly QueryField[]>(line: string, fields: Fs): ParsedRow<Fs> {
  const cells = line.split(',').map((c) => c.trim());
  if (cells.length !== fields.length) {
    return { ok: false, error: `expected ${fields.length} fields, got ${cells.length}: ${clip(line)}` };
  }
  const row: Record<string, number | string | null> = {};
  for (const [i, field] of fields.entries()) {
    const cell = cells[i] ?? '';
    if (MISSING.has(cell)) {
      row[field.key] = null;
    } else if (field.kind === 'number') {
      const value = Number(cell);
      if (!Number.isFinite(value))
        return { ok: false, error: `${field.query} is not a number ("${clip(cell)}"): ${clip(line)}` };
      row[field.key] = value;
    } else {
      row[field.key] = cell;
    }
  }
  return { ok: true, row: row as Row<Fs> };
}

/** Parses every non-empty line; the first bad line makes the whole result an error. */
export function parseCsvRows<const Fs extends readonly QueryField[]>(
  text: string,
  fields: Fs,
): { ok: true; rows: Row<Fs>[] } | { ok: false; error: string } {
  const rows: Row<Fs>[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const parsed = parseCsvRow(line, fields);
    if (!parsed.ok) return parsed;
    rows.push(parsed.row);
  }
  return { ok: true, rows };
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** clocks_event_reasons bits (nvml.h) that mean the GPU was held below its clocks for power or heat. */
const THROTTLE_BITS: ReadonlyArray<[number, string]> = [
  [0x4, 'sw_power_cap'],
  [0x8, 'hw_slowdown'],
  [0x20, 'sw_thermal_slowdown'],
  [0x40, 'hw_thermal_slowdown'],
  [0x80, 'hw_power_brake_slowdown'],
];

/** The throttle reasons set in a clocks_event_reasons.active bitmask such as "0x0000000000000004". */
export function throttleReasons(mask: string | null): string[] {
  if (mask === null || !/^0x[0-9a-f]+$/i.test(mask)) return [];
  const value = BigInt(mask);
  return THROTTLE_BITS.filter(([bit]) => (value & BigInt(bit)) !== 0n).map(([, name]) => name);
}
