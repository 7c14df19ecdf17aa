/**
 * The run format, defined once: run.json is validated against `RunSchema` when written and read,
 * and the TypeScript types of the whole harness are inferred from these schemas.
 */
import { z } from 'zod';
import { COMPUTE_APP_FIELDS, GPU_FIELDS, SAMPLE_FIELDS, type QueryField } from '../nvidia/smi-csv.js';

export const RUN_SCHEMA_ID = 'gpushare.run/2';
/** The first run format: still read (see `migrate.ts`), never written. */
export const RUN_SCHEMA_V1 = 'gpushare.run/1';

type RowShape<Fs extends readonly QueryField[]> = {
  [F in Fs[number] as F['key']]: F['kind'] extends 'number' ? z.ZodNullable<z.ZodNumber> : z.ZodNullable<z.ZodString>;
};

/** A zod object with one nullable column per nvidia-smi field, so the CSV fields and the schema cannot drift. */
function rowSchema<const Fs extends readonly QueryField[]>(fields: Fs): z.ZodObject<RowShape<Fs>> {
  const shape = Object.fromEntries(
    fields.map((f) => [f.key, f.kind === 'number' ? z.number().nullable() : z.string().nullable()]),
  );
  return z.object(shape) as unknown as z.ZodObject<RowShape<Fs>>;
}

export const MODE_NAMES = ['streams', 'timeslice', 'mps', 'mig'] as const;
export const ModeNameSchema = z.enum(MODE_NAMES);
/** A way of sharing the GPU that gpushare measures. */
export type ModeName = z.infer<typeof ModeNameSchema>;

/** One nvidia-smi sample; `tUs` is CLOCK_MONOTONIC µs when it arrived, `trialId` the trial whose window holds it. */
export const SampleSchema = rowSchema(SAMPLE_FIELDS).extend({
  tUs: z.number(),
  trialId: z.string().nullable(),
});
export type Sample = z.infer<typeof SampleSchema>;

export const MigDeviceSchema = z.object({
  gpuIndex: z.number().int(),
  profile: z.string(),
  deviceIndex: z.number().int(),
  uuid: z.string(),
});

export const MigProfileSchema = z.object({
  gpuIndex: z.number().int(),
  name: z.string(),
  profileId: z.number().int(),
  instancesFree: z.number().int(),
  instancesTotal: z.number().int(),
  memoryGiB: z.number(),
  smCount: z.number().int(),
  copyEngines: z.number().int(),
  decoders: z.number().int(),
  encoders: z.number().int(),
  jpegs: z.number().int(),
  ofas: z.number().int(),
});

export const MigPlacementSchema = z.object({
  gpuIndex: z.number().int(),
  profileId: z.number().int(),
  starts: z.array(z.number().int()),
  size: z.number().int(),
});

/** One GPU as nvidia-smi describes it, with its MIG devices and the MIG profiles it could make. */
export const GpuSchema = rowSchema(GPU_FIELDS).extend({
  migDevices: z.array(MigDeviceSchema),
  migProfiles: z.array(MigProfileSchema),
  migPlacements: z.array(MigPlacementSchema),
});
export type Gpu = z.infer<typeof GpuSchema>;

export const PythonProbeSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('ok'),
    executable: z.string(),
    version: z.string(),
    torch: z.string().nullable(),
    torchCuda: z.string().nullable(),
    cudaAvailable: z.boolean(),
    deviceName: z.string().nullable(),
    smCount: z.number().int().nullable(),
    triton: z.string().nullable(),
  }),
  z.object({ status: z.literal('error'), executable: z.string(), error: z.string() }),
]);
export type PythonProbe = z.infer<typeof PythonProbeSchema>;

/** What the harness relies on, read before every run and stored in it. */
export const FingerprintSchema = z.object({
  collectedAt: z.string(),
  host: z.object({
    platform: z.string(),
    kernel: z.string(),
    arch: z.string(),
    cpus: z.number().int(),
    nodeVersion: z.string(),
    /** The machine's host name (on Kubernetes, the pod's); absent in runs before gpushare recorded it. */
    hostname: z.string().optional(),
  }),
  nvidiaSmi: z.object({ path: z.string().nullable(), error: z.string().nullable() }),
  driverVersion: z.string().nullable(),
  cudaVersion: z.string().nullable(),
  gpus: z.array(GpuSchema),
  /** Other compute processes; empty inside VMs that hide them (see the README). */
  computeApps: z.array(rowSchema(COMPUTE_APP_FIELDS)),
  mps: z.object({
    controlPath: z.string().nullable(),
    serverPath: z.string().nullable(),
    /** The pipe directory a client would use by default ($CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps). */
    defaultPipeDirectory: z.string(),
    /** A control socket exists there: an MPS daemon that gpushare did not start is (or was) running. */
    defaultDaemonSocket: z.boolean(),
    /** PIDs of nvidia-cuda-mps-* processes running before the harness started anything. */
    runningPids: z.array(z.number().int()),
  }),
  python: PythonProbeSchema,
});
export type Fingerprint = z.infer<typeof FingerprintSchema>;

/** The client counts of a run: the sweep's, or the one count. */
export function clientCounts(config: Pick<Config, 'clients' | 'clientCounts'>): number[] {
  return config.clientCounts ?? [config.clients];
}

/** The GPU with nvidia-smi index `index` in a fingerprint. */
export function gpuAt(fingerprint: Fingerprint, index: number): Gpu | undefined {
  return fingerprint.gpus.find((g) => g.index === index);
}

const ParamValue = z.union([z.string(), z.number(), z.boolean()]);

/** A workload as the harness launches it: `argv` is exact (never given to a shell). */
export const WorkloadSpecSchema = z.object({
  name: z.string(),
  builtin: z.boolean(),
  argv: z.array(z.string()),
  params: z.record(z.string(), ParamValue),
});
export type WorkloadSpec = z.infer<typeof WorkloadSpecSchema>;

/** Per-trial settings sent to a client with its run command. */
export const VariantSchema = z.object({
  streams: z.number().int().positive(),
  pinned: z.boolean().optional(),
});
export type Variant = z.infer<typeof VariantSchema>;

/** When to stop adding rounds to a comparison. Half-widths are fractions of the ratio (0.01 = ±1%). */
export const RoundPolicySchema = z.object({
  /** Rounds every comparison runs before it may stop. */
  minRounds: z.number().int().positive(),
  /** Most rounds per comparison (equal to minRounds: a fixed count). */
  maxRounds: z.number().int().positive(),
  /** CI half-width every headline ratio should reach. */
  ciTarget: z.number().positive(),
  /** CI half-width every ratio a threshold grades should reach. */
  gradedCiTarget: z.number().positive(),
  /** Wall time the whole run may spend on rounds beyond minRounds, shared among comparisons. */
  timeBudgetS: z.number().positive(),
});
export type RoundPolicy = z.infer<typeof RoundPolicySchema>;

/** The resolved configuration of a run: every default filled in. */
export const ConfigSchema = z.object({
  gpuIndex: z.number().int().nonnegative(),
  modes: z.array(ModeNameSchema),
  clients: z.number().int().positive(),
  /**
   * A client sweep (--clients 2,4,8): one comparison per count for each contention mode and workload,
   * ids `<mode>/<workload>@<count>`. Absent for one count, which is `clients`.
   */
  clientCounts: z.array(z.number().int().min(2)).optional(),
  /** When a comparison stops adding rounds: a policy, never a fixed count (see harness/execute/policy.ts). */
  roundPolicy: RoundPolicySchema,
  /** The thresholds in force: they grade ratios, and the graded ones get the tighter CI target. */
  thresholds: z.object({
    noiseBand: z.number().min(0).max(1),
    rules: z.array(z.object({ pattern: z.string(), bounds: z.object({ min: z.number().optional(), max: z.number().optional() }) })),
  }),
  /** auto: each client process is pinned to a core of its own (GPUSHARE_CPUS), away from core 0; off: the OS places them. */
  cpuPin: z.enum(['auto', 'off']),
  /** Fixed-duration window of each multi-process trial. */
  windowMs: z.number().positive(),
  /** How far ahead of "now" the release time of a trial is set, so every client starts together. */
  releaseLeadMs: z.number().nonnegative(),
  /** Fraction of each client's window the contended windows must share for a valid trial. */
  minOverlap: z.number().min(0).max(1),
  sampleIntervalMs: z.number().int().positive(),
  /** Stream counts compared against 1 stream in the streams mode. */
  streamCounts: z.array(z.number().int().min(2)),
  streamsWorkloads: z.array(WorkloadSpecSchema),
  contentionWorkloads: z.array(WorkloadSpecSchema),
  timeouts: z.object({ readyMs: z.number().positive(), trialMs: z.number().positive(), exitMs: z.number().positive() }),
  mps: z.object({
    threadPct: z.number().int().min(1).max(100).nullable(),
    /** A size with its unit, as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes it: generated scripts embed it. */
    memLimit: z.string().regex(/^\d+(\.\d+)?[KMG]$/, 'a size such as 4G or 512M').nullable(),
  }),
  python: z.string(),
});
export type Config = z.infer<typeof ConfigSchema>;

/** What a trial asks of its clients: a fixed amount of work, or a fixed-duration window. */
export const WorkSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fixed-work'), iterations: z.number().int().positive().nullable() }),
  z.object({ kind: z.literal('fixed-duration'), durationMs: z.number().positive() }),
]);
export type Work = z.infer<typeof WorkSchema>;

export const ArmSchema = z.object({
  id: z.string(),
  /** The clients released in this arm's trials, each with its variant. */
  clients: z.array(z.object({ client: z.number().int().nonnegative(), variant: VariantSchema })),
  work: WorkSchema,
});
export type Arm = z.infer<typeof ArmSchema>;

/** A set of arms measured against each other over interleaved rounds, by one group of client processes. */
export const ComparisonSchema = z.object({
  id: z.string(),
  mode: ModeNameSchema,
  workload: WorkloadSpecSchema,
  /** Client processes started for this comparison; extra environment per client. */
  clientEnv: z.array(z.record(z.string(), z.string())),
  arms: z.array(ArmSchema),
  /**
   * A cross-GPU check (bench --gpus): client 0 runs on GPU `victimGpu`, alone and while
   * `loadersPerGpu` time-sliced clients load each of `loadedGpus`.
   */
  crossGpu: z.object({ victimGpu: z.number().int().nonnegative(), loadedGpus: z.array(z.number().int().nonnegative()).min(1), loadersPerGpu: z.number().int().positive() }).optional(),
});
export type Comparison = z.infer<typeof ComparisonSchema>;

/** Exact statistics of the wall time of each synchronized chunk of a window, ms (per request when chunks are 1 iteration). */
export const LatencySummarySchema = z.object({
  count: z.number().int().positive(),
  meanMs: z.number().nonnegative(),
  p50Ms: z.number().nonnegative(),
  p90Ms: z.number().nonnegative(),
  p99Ms: z.number().nonnegative(),
  maxMs: z.number().nonnegative(),
});
export type LatencySummary = z.infer<typeof LatencySummarySchema>;

/** One client's measurement in one trial. Times are CLOCK_MONOTONIC µs. */
export const ClientResultSchema = z.object({
  client: z.number().int().nonnegative(),
  pid: z.number().int().nullable(),
  variant: VariantSchema,
  windowStartUs: z.number(),
  windowEndUs: z.number(),
  iterations: z.number().int().nonnegative(),
  /** GPU time of the window from CUDA events. */
  gpuMs: z.number().nonnegative(),
  /** Latency of the synchronized chunks of `chunkIterations` iterations; null for fixed-work trials. */
  latency: LatencySummarySchema.nullable(),
  chunkIterations: z.number().int().positive(),
});
export type ClientResult = z.infer<typeof ClientResultSchema>;

/** How much the released clients' windows overlapped: the shared span over each client's own window. */
export const OverlapSchema = z.object({ perClient: z.array(z.number()), min: z.number() });
export type Overlap = z.infer<typeof OverlapSchema>;

const TrialBase = {
  id: z.string(),
  comparisonId: z.string(),
  arm: z.string(),
  round: z.number().int().nonnegative(),
  startedAt: z.string(),
  finishedAt: z.string(),
};

/** A trial's outcome: data, never an exception. */
export const TrialSchema = z.discriminatedUnion('status', [
  z.object({ ...TrialBase, status: z.literal('ok'), clients: z.array(ClientResultSchema), overlap: OverlapSchema.nullable() }),
  z.object({
    ...TrialBase,
    status: z.literal('invalid'),
    reason: z.string(),
    clients: z.array(ClientResultSchema),
    overlap: OverlapSchema.nullable(),
  }),
  z.object({
    ...TrialBase,
    status: z.literal('failed'),
    reason: z.string(),
    client: z.number().int().nullable(),
    exitCode: z.number().int().nullable(),
    stderrTail: z.string(),
  }),
  z.object({
    ...TrialBase,
    status: z.literal('timeout'),
    reason: z.string(),
    phase: z.enum(['ready', 'window', 'exit']),
    client: z.number().int().nullable(),
  }),
  z.object({ ...TrialBase, status: z.literal('skipped'), reason: z.string() }),
]);
export type Trial = z.infer<typeof TrialSchema>;

/** What happened to a mode as a whole: measured, or skipped with the exact reason. */
export const ModeRecordSchema = z.object({
  mode: ModeNameSchema,
  /** failed: the mode could not be set up (e.g. the MPS daemon did not start); its trials are skipped. */
  status: z.enum(['ran', 'skipped', 'failed']),
  reason: z.string().nullable(),
  /** MIG: the GPU's profile table and devices, recorded whether or not the mode ran. */
  mig: z
    .object({
      migModeCurrent: z.string().nullable(),
      devices: z.array(MigDeviceSchema),
      profiles: z.array(MigProfileSchema),
      placements: z.array(MigPlacementSchema),
    })
    .nullable(),
  /** MPS: the daemon the harness started, and its logs in the run directory. */
  mps: z
    .object({
      controlPid: z.number().int().nullable(),
      serverPids: z.array(z.number().int()),
      logFiles: z.array(z.string()),
      /** Its private pipe directory: lets --resume find and quit a daemon left by a killed harness. */
      pipeDirectory: z.string().nullable(),
      /** How it shut down; "running" while the mode is in progress. */
      shutdown: z.string(),
    })
    .nullable(),
});
export type ModeRecord = z.infer<typeof ModeRecordSchema>;

/**
 * Why a comparison stopped adding rounds, with the CI half-widths of its targeted ratios then.
 * fixed-rounds: the policy's minimum and maximum are equal; invalid: a validity check failed, which
 * more rounds cannot mend; aborted: a trial failed or timed out.
 */
export const StopSchema = z.object({
  comparisonId: z.string(),
  rounds: z.number().int().nonnegative(),
  reason: z.enum(['ci-target', 'max-rounds', 'time-budget', 'fixed-rounds', 'invalid', 'aborted']),
  halfWidths: z.record(z.string(), z.number().nullable()),
});
export type Stop = z.infer<typeof StopSchema>;

/** A run id: a token that is safe as a file name, in a path and in generated files (no "/", "..", spaces or control characters). */
export const RunIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a run id of letters, digits, ".", "_" and "-" (e.g. 2026-11-22-h100-3fa9c2)').refine((id) => !id.includes('..'), 'a run id without ".."');

export const RunSchema = z.object({
  schema: z.literal(RUN_SCHEMA_ID),
  id: RunIdSchema,
  status: z.enum(['running', 'complete', 'interrupted', 'failed']),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  tool: z.object({ name: z.literal('gpushare'), version: z.string() }),
  fingerprint: FingerprintSchema,
  config: ConfigSchema,
  plan: z.array(ComparisonSchema),
  modes: z.array(ModeRecordSchema),
  trials: z.array(TrialSchema),
  samples: z.array(SampleSchema),
  sampler: z.object({ status: z.enum(['ok', 'failed']), error: z.string().nullable() }),
  /** Things that went wrong outside any trial, e.g. a workload that had to be killed at exit. */
  warnings: z.array(z.string()),
  stops: z.array(StopSchema),
  /** Evidence that something else used the GPU (a run started with --allow-busy): the gate trusts no ratio of it. */
  contamination: z.array(z.string()),
  /** Each --resume: when, and how many finished trials it kept. */
  resumes: z.array(z.object({ at: z.string(), trialsKept: z.number().int().nonnegative() })),
  /**
   * When each comparison's clients were started and all said ready (CLOCK_MONOTONIC µs): with the
   * samples' memory.used, what the clients hold on the GPU. Absent in runs made before 2026-11-23.
   */
  clientStarts: z.array(z.object({ comparisonId: z.string(), startedUs: z.number(), readyUs: z.number() })).optional(),
});
export type Run = z.infer<typeof RunSchema>;
