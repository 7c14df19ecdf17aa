/** What `gpushare capacity` records (capacity.json): every step of every search, as measured. */
import { CAPACITY_FILE } from '../record/kinds.js';
import { loadRecord, type RecordHeader } from '../record/record-file.js';
import type { Fingerprint } from '../system/nvidia/schema.js';
import type { WorkloadSpec } from '../workload/spec.js';

/** One client's share of a step, as recorded: its latency histogram (µs, compressed HdrHistogram). */
export interface ClientStep {
  requests: number;
  /** Its requests slower than the target, counted exactly from the raw latencies when recorded, with those never served. */
  overTarget: number;
  /** Requests served whose latency the workload did not report (over its cap of latencies per window): the step is then invalid. */
  unreported?: number;
  /** How late the generator issued requests while its worker was idle, ms, p99 (its own lag, not queueing). */
  scheduleLagMs: number;
  /** The same, the worst request. */
  scheduleLagMaxMs?: number;
  histogram: string;
}

/** One rate tried: the total request rate, split evenly over the clients. */
export interface Step {
  totalQps: number;
  windowS: number;
  clients: ClientStep[];
  /**
   * Why the result checks bench runs too (each window against the release time, plausibility, the
   * clients' overlap) refused the step, or null when it passed them; absent in runs recorded before
   * capacity ran them.
   */
  invalid?: string | null;
}

export const CAPACITY_SCHEMA_ID = 'gpushare-capacity/1';

/** The settings of a capacity run. */
export interface CapacitySettings {
  sloP99Ms: number;
  modes: Array<'timeslice' | 'mps'>;
  clientCounts: number[];
  workload: WorkloadSpec;
  load: 'poisson' | 'constant';
  windowMs: number;
  startQps: number;
  tolerance: number;
  maxSteps: number;
}

/**
 * One mode and client count: its steps, or why it could not run (a client that never became ready)
 * or did not finish its search (a signal; the steps before it stand).
 */
export type CapacityPoint = { mode: 'timeslice' | 'mps'; clients: number } & (
  | { status: 'measured'; steps: Step[] }
  | { status: 'skipped' | 'failed' | 'interrupted'; reason: string; steps: Step[] }
);

export interface CapacityRun extends RecordHeader<typeof CAPACITY_SCHEMA_ID> {
  fingerprint: Fingerprint;
  gpuIndex: number;
  settings: CapacitySettings;
  points: CapacityPoint[];
  warnings: string[];
}

/** The capacity run saved in `dir`, or null when `dir` holds none. */
export function loadCapacityRun(dir: string): Promise<CapacityRun | null> {
  return loadRecord<CapacityRun>(dir, CAPACITY_FILE, CAPACITY_SCHEMA_ID, 'gpushare capacity');
}
