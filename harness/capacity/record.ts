/** What `gpushare capacity` records (capacity.json): every step of every search, as measured. */
import { z } from 'zod';
import { type MpsDaemonRecord, MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { loadRecord, type RecordHeader, recordHeaderSchema } from '../record/record-file.js';
import { type Fingerprint, FingerprintSchema } from '../system/nvidia/schema.js';
import { type WorkloadSpec, WorkloadSpecSchema } from '../workload/spec.js';

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
  /** Every MPS daemon the run started, recorded before it started. Absent before 2026-11-24. */
  daemons?: MpsDaemonRecord[];
  /** The point being measured when the record was saved, or null between points: --resume measures it again. */
  current?: { mode: 'timeslice' | 'mps'; clients: number } | null;
  /** Each --resume: when, and how many finished points it kept. */
  resumes?: Array<{ at: string; pointsKept: number }>;
}

const ClientStepSchema = z.object({
  requests: z.number(),
  overTarget: z.number(),
  unreported: z.number().optional(),
  scheduleLagMs: z.number(),
  scheduleLagMaxMs: z.number().optional(),
  histogram: z.string(),
});
const StepSchema = z.object({ totalQps: z.number(), windowS: z.number(), clients: z.array(ClientStepSchema) });
const ModeSchema = z.enum(['timeslice', 'mps']);
const pointKey = { mode: ModeSchema, clients: z.number().int().positive() };

/** capacity.json's schema: what the types above say, checked when a record is read. */
export const CapacityRunSchema = z.object({
  ...recordHeaderSchema(CAPACITY_SCHEMA_ID),
  fingerprint: FingerprintSchema,
  gpuIndex: z.number().int().nonnegative(),
  settings: z.object({
    sloP99Ms: z.number(),
    modes: z.array(ModeSchema),
    clientCounts: z.array(z.number().int().positive()),
    workload: WorkloadSpecSchema,
    load: z.enum(['poisson', 'constant']),
    windowMs: z.number(),
    startQps: z.number(),
    tolerance: z.number(),
    maxSteps: z.number(),
  }),
  points: z.array(
    z.union([
      z.object({ ...pointKey, status: z.literal('measured'), steps: z.array(StepSchema) }),
      z.object({
        ...pointKey,
        status: z.enum(['skipped', 'failed', 'interrupted']),
        reason: z.string(),
        steps: z.array(StepSchema),
      }),
    ]),
  ),
  warnings: z.array(z.string()),
  daemons: z.array(MpsDaemonRecordSchema).optional(),
  current: z.object(pointKey).nullable().optional(),
  resumes: z.array(z.object({ at: z.string(), pointsKept: z.number().int().nonnegative() })).optional(),
});

/** The capacity run saved in `dir`, read through its schema, or null when `dir` holds none. */
export async function loadCapacityRun(dir: string): Promise<CapacityRun | null> {
  const run: CapacityRun | null = await loadRecord(dir, 'capacity', CapacityRunSchema);
  return run;
}

/** The record as the schema takes it: a compile-time check that the types above and the schema agree. */
export function capacityRecordJson(run: CapacityRun): z.input<typeof CapacityRunSchema> {
  return run;
}
