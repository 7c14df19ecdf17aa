/** What `gpushare mix` records (mix.json): the victim's capacity search and every window of every round, as measured. */
import { z } from 'zod';
import { MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { loadRecord, machineRecordHeaderSchema } from '../record/record-file.js';
import { HistogramTextSchema, StepSchema } from '../workload/open-loop.js';
import { WorkloadSpecSchema } from '../workload/spec.js';

export const MIX_SCHEMA_ID = 'gpushare-mix/1';

/** The aggressor kinds, each named by the resource it presses on, and the built-in that presses on it. */
export const AGGRESSOR_KINDS = {
  compute: 'gemm',
  bandwidth: 'bandwidth',
  pcie: 'pipeline',
  train: 'train',
  launch: 'infer-eager',
} as const;
/** A built-in aggressor kind, or `custom` (a command of a scenario file). */
export type AggressorKind = keyof typeof AGGRESSOR_KINDS | 'custom';

/**
 * How the tenants share the GPU: a process each, time-sliced (`timeslice`) or under one MPS daemon
 * (`mps`, the aggressor also capped by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE at each setting); or one
 * process (`streams`: the victim on a high-priority stream; `green`: the victim in green contexts).
 */
export const MIX_MODES = ['timeslice', 'mps', 'streams', 'green'] as const;
const ModeSchema = z.enum(MIX_MODES);
export type MixMode = z.infer<typeof ModeSchema>;

/** The p99 the protection search keeps the victim within: a multiple of its p99 alone, or a fixed target, ms. */
const ProtectSchema = z.union([
  z.object({ kind: z.literal('multiple'), value: z.number().positive() }),
  z.object({ kind: z.literal('ms'), value: z.number().positive() }),
]);
export type Protect = z.infer<typeof ProtectSchema>;

const AggressorSchema = z.object({ name: z.string(), workload: WorkloadSpecSchema });
export type Aggressor = z.infer<typeof AggressorSchema>;

/** The settings of a mix run: its scenario and how long each measurement is. */
const MixSettingsSchema = z.object({
  victim: WorkloadSpecSchema,
  aggressors: z.array(AggressorSchema),
  modes: z.array(ModeSchema),
  /** The aggressor's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE settings under MPS, besides uncapped (100). */
  threadPcts: z.array(z.number().int().min(1).max(99)),
  /** The victim's offered loads, as fractions of its capacity alone. */
  loads: z.array(z.number().positive()),
  /** The victim's p99 target, ms: its capacity alone is found at it (null when victimQps was given). */
  sloP99Ms: z.number().positive().nullable(),
  /** The victim's capacity, req/s, when given instead of searched. */
  victimQps: z.number().positive().nullable(),
  protect: ProtectSchema,
  arrivals: z.enum(['poisson', 'constant']),
  windowMs: z.number().positive(),
  rounds: z.number().int().positive(),
  startQps: z.number().positive(),
  maxSteps: z.number().int().positive(),
});
export type MixSettings = z.infer<typeof MixSettingsSchema>;

/** The victim's side of a window: its requests, from each one's scheduled time. */
const VictimWindowSchema = z.object({
  offeredQps: z.number(),
  windowS: z.number(),
  /** Requests served with a latency reported. */
  requests: z.number().int().nonnegative(),
  /** Requests never served (queued a window past the window's end). */
  dropped: z.number().int().nonnegative(),
  /** Served requests whose latency the workload did not report (its cap per window). */
  unreported: z.number().int().nonnegative(),
  scheduleLagMs: z.number(),
  /** Latencies, µs, as a compressed HdrHistogram. */
  histogram: HistogramTextSchema,
  /** Median latency of the first and of the last quarter of the window's requests, ms: a growing queue climbs. */
  firstQuarterP50Ms: z.number().nullable(),
  lastQuarterP50Ms: z.number().nullable(),
});
export type VictimWindow = z.infer<typeof VictimWindowSchema>;

/** The aggressor's side of a window: closed loop, flat out. */
const AggressorWindowSchema = z.object({ iterations: z.number().int().nonnegative(), windowS: z.number() });
export type AggressorWindow = z.infer<typeof AggressorWindowSchema>;

/**
 * The arms of a round: the victim alone, the aggressor alone (uncapped), both together; and `pair`,
 * the compute and bandwidth aggressors together without the victim (the claim that MPS interleaves them).
 */
export const ARMS = ['victim-alone', 'aggressor-alone', 'together', 'pair'] as const;

/** The two aggressors of the pair arm, by name. */
export const PAIR = ['compute', 'bandwidth'] as const;

/** One window of one arm in one round. */
const WindowSchema = z.object({
  mode: ModeSchema,
  round: z.number().int().nonnegative(),
  arm: z.enum(ARMS),
  /** The aggressor's name (its kind), null in the victim-alone arm. */
  aggressor: z.string().nullable(),
  /** The aggressor's thread %, under MPS; null when uncapped or in another mode. */
  threadPct: z.number().int().nullable(),
  /** The victim's load as a fraction of its capacity; null in the aggressor-alone arm. */
  load: z.number().nullable(),
  victimResult: VictimWindowSchema.nullable(),
  aggressorResult: AggressorWindowSchema.nullable(),
  /** The pair arm: the bandwidth aggressor's side (aggressorResult is the compute one's). */
  partnerResult: AggressorWindowSchema.nullable(),
  /** Why bench's result checks refused the window, or null. */
  invalid: z.string().nullable(),
  /** Green's alone arms: the tenant ran alone on the whole GPU, outside any green context (absent before 2026-11-27: in its own slice). */
  wholeGpu: z.literal(true).optional(),
});
export type MixWindow = z.infer<typeof WindowSchema>;

/** A mode that could not run (its MPS daemon, a client never ready, unsupported here), or was cut short. */
const ModeOutcomeSchema = z.object({
  mode: ModeSchema,
  status: z.enum(['skipped', 'failed', 'interrupted']),
  reason: z.string(),
});

/** mix.json's schema, the one source of its types; checked when a record is read. */
export const MixRunSchema = z.object({
  ...machineRecordHeaderSchema(MIX_SCHEMA_ID),
  settings: MixSettingsSchema,
  /** The victim alone, time-sliced with nobody: its rate search at sloP99Ms (empty when victimQps was given). */
  capacitySteps: z.array(StepSchema),
  windows: z.array(WindowSchema),
  outcomes: z.array(ModeOutcomeSchema),
  warnings: z.array(z.string()),
  daemons: z.array(MpsDaemonRecordSchema),
  /** The mode being measured when the record was saved: --resume drops its unfinished round. */
  current: z.object({ mode: ModeSchema, round: z.number().int().nonnegative() }).nullable(),
  resumes: z.array(z.object({ at: z.string(), windowsKept: z.number().int().nonnegative() })),
});
export type MixRun = z.infer<typeof MixRunSchema>;

/** The mix run saved in `dir`, read through its schema, or null when `dir` holds none. */
export async function loadMixRun(dir: string): Promise<MixRun | null> {
  const run: MixRun | null = await loadRecord(dir, 'mix', MixRunSchema);
  return run;
}
