/**
 * The run format, defined once: run.json is validated against `RunSchema` when written and read,
 * and the TypeScript types of the whole harness are inferred from these schemas.
 */
import { z } from 'zod';
import { MpsDaemonRecordSchema } from '../../record/daemon-record.js';
import { RunIdSchema } from '../../record/record-file.js';
import { TimeAccountSchema, WallSpanSchema } from '../../session/time-account.js';
import {
  FingerprintSchema,
  MigDeviceSchema,
  MigPlacementSchema,
  MigProfileSchema,
  SampleSchema,
} from '../../system/nvidia/schema.js';
import { LoopOverheadSchema } from '../../workload/protocol.js';
import { LatencySummarySchema, VariantSchema, WorkloadSpecSchema, WorkSchema } from '../../workload/spec.js';

export const RUN_SCHEMA_ID = 'gpushare.run/2';
/** The first run format: still read (see `migrate.ts`), never written. */
export const RUN_SCHEMA_V1 = 'gpushare.run/1';
export const MODE_NAMES = ['streams', 'green', 'timeslice', 'mps', 'mig'] as const;
export const ModeNameSchema = z.enum(MODE_NAMES);
/** A way of sharing the GPU that gpushare measures. */
export type ModeName = z.infer<typeof ModeNameSchema>;
/**
 * The lab's streams comparison: the same fixed work on 1 vs K streams of one process (a speedup, no
 * clients). The streams mode's other comparisons, and green's, are N tenants of one process (`tenants`).
 */
export function fixedWorkStreams(c: Pick<Comparison, 'mode' | 'tenants'>): boolean {
  return c.mode === 'streams' && c.tenants === undefined;
}
/** The client counts of a run: the sweep's, or the one count. */
export function clientCounts(config: Pick<Config, 'clients' | 'clientCounts'>): number[] {
  return config.clientCounts ?? [config.clients];
}
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
  /**
   * --clients was given: the streams mode also runs N tenants in one process at each count
   * (`streams/<workload>@<N>`), beside its fixed-work comparisons. Absent: the lab's streams alone.
   */
  tenancy: z.boolean().optional(),
  /** The green mode: each tenant's share of the SMs, %; null: an even split. */
  greenSmPct: z.number().positive().max(100).nullable().optional(),
  /** When a comparison stops adding rounds: a policy, never a fixed count (see harness/execute/policy.ts). */
  roundPolicy: RoundPolicySchema,
  /** The thresholds in force: they grade ratios, and the graded ones get the tighter CI target. */
  thresholds: z.object({
    noiseBand: z.number().min(0).max(1),
    rules: z.array(
      z.object({ pattern: z.string(), bounds: z.object({ min: z.number().optional(), max: z.number().optional() }) }),
    ),
  }),
  /** auto: each client process is pinned to a core of its own (GPUSHARE_CPUS), the highest usable ones, away from the lowest; off: the OS places them. */
  cpuPin: z.enum(['auto', 'off']),
  /**
   * --fresh-clients: each comparison's clients start when it begins (as before 2026-11-24). Absent: a
   * built-in workload's next clients are started while the current comparison measures, held (imported,
   * no CUDA) until the current ones have exited.
   */
  freshClients: z.boolean().optional(),
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
    memLimit: z
      .string()
      .regex(/^\d+(\.\d+)?[KMG]$/, 'a size such as 4G or 512M')
      .nullable(),
  }),
  python: z.string(),
});
export type Config = z.infer<typeof ConfigSchema>;
export const ArmSchema = z.object({
  id: z.string(),
  /** The clients released in this arm's trials, each with its variant. */
  clients: z.array(z.object({ client: z.number().int().nonnegative(), variant: VariantSchema })),
  work: WorkSchema,
  /**
   * Measured by the workload's plain process (ALONE_ARM), not the comparison's: one process of the workload
   * alone on the whole GPU outside every mode, the same process for each comparison of that workload.
   */
  plain: z.literal(true).optional(),
});
export type Arm = z.infer<typeof ArmSchema>;

/**
 * The arm every mode's slowdown and aggregate throughput divide by (since 2026-12-06): client 0's work run
 * by the workload's plain process, alone on the whole GPU. Before it, each mode divided by its own alone
 * (an MPS client, a tenant of the process, green's twin), which differed by mode.
 */
export const ALONE_ARM = 'alone';

/** Whether comparison `c` measured the plain alone (runs before 2026-12-06 did not). */
export const measuresPlainAlone = (c: Pick<Comparison, 'arms'>): boolean => c.arms.some((a) => a.plain === true);

/** The green mode's second baseline arm: tenant 0 alone in its own SM slice (its solo-c0 is alone on the whole GPU). */
export const SLICE_SOLO_ARM = 'slice-solo-c0';

/** A set of arms measured against each other over interleaved rounds, by one group of client processes. */
export const ComparisonSchema = z.object({
  id: z.string(),
  mode: ModeNameSchema,
  workload: WorkloadSpecSchema,
  /** Client processes started for this comparison; extra environment per client. */
  clientEnv: z.array(z.record(z.string(), z.string())),
  arms: z.array(ArmSchema),
  /**
   * In-process tenancy (the streams and green modes with clients): one workload process of this many
   * tenants (GPUSHARE_TENANTS), tenant k standing for client k of `clientEnv` and of every arm.
   */
  tenants: z.number().int().positive().optional(),
  /**
   * A cross-GPU check (bench --gpus): client 0 runs on GPU `victimGpu`, alone and while
   * `loadersPerGpu` time-sliced clients load each of `loadedGpus`.
   */
  crossGpu: z
    .object({
      victimGpu: z.number().int().nonnegative(),
      loadedGpus: z.array(z.number().int().nonnegative()).min(1),
      loadersPerGpu: z.number().int().positive(),
    })
    .optional(),
});
export type Comparison = z.infer<typeof ComparisonSchema>;
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
  /** Host time of one request's step() call, mean, µs (protocol 3): with tenants on threads, the GIL's wait shows here. */
  stepHostUs: z.number().nonnegative().optional(),
  /** Asked for in the first trial where this process ran alone in its comparison: its loop's cost beyond a bare loop. Absent before 2026-11-27. */
  loopOverhead: LoopOverheadSchema.optional(),
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
  z.object({
    ...TrialBase,
    status: z.literal('ok'),
    clients: z.array(ClientResultSchema),
    overlap: OverlapSchema.nullable(),
  }),
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
  mps: MpsDaemonRecordSchema.nullable(),
});
export type ModeRecord = z.infer<typeof ModeRecordSchema>;

/**
 * Why a comparison stopped adding rounds, with the CI half-widths of its targeted ratios then.
 * fixed-rounds: the policy's minimum and maximum are equal; invalid: a validity check failed, which
 * more rounds cannot mend; aborted: a trial failed or timed out; unsupported: the workload cannot run
 * so here (green contexts this GPU cannot split, tenants a protocol-2 workload does not know).
 */
export const StopSchema = z.object({
  comparisonId: z.string(),
  rounds: z.number().int().nonnegative(),
  reason: z.enum(['ci-target', 'max-rounds', 'time-budget', 'fixed-rounds', 'invalid', 'aborted', 'unsupported']),
  /** unsupported: what this machine cannot do, as the workload said (the comparison is skipped, not failed). */
  detail: z.string().optional(),
  halfWidths: z.record(z.string(), z.number().nullable()),
});
export type Stop = z.infer<typeof StopSchema>;
export const RunSchema = z.object({
  schema: z.literal(RUN_SCHEMA_ID),
  id: RunIdSchema,
  status: z.enum(['running', 'complete', 'interrupted', 'failed']),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  tool: z.object({ name: z.literal('gpushare'), version: z.string() }),
  /**
   * The protocol loop its clients measured through (see measuredLoop): 2 since 2026-11-27, a lane's stream
   * entered once per window and one clock read per request. Absent: read from the record.
   */
  loop: z.literal(2).optional(),
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
  clientStarts: z
    .array(
      z.object({
        comparisonId: z.string(),
        startedUs: z.number(),
        readyUs: z.number(),
        /** Every process it started was started while an earlier comparison measured, held until startedUs (absent: some or all started at startedUs). */
        prestarted: z.literal(true).optional(),
        /** When its clients had exited (CLOCK_MONOTONIC µs): the end of its part in the time account. Absent before 2026-11-24. */
        endUs: z.number().optional(),
        /** Workload processes started (1 for in-process tenancy). Absent before 2026-11-24: one per client. */
        processes: z.number().int().positive().optional(),
        /**
         * What the processes' own allocators held once ready, summed (protocol 3's ready line), MiB; null where
         * one did not say. Processes a grown comparison kept count with what they said when they were ready.
         */
        memoryReservedMiB: z.number().nonnegative().nullable().optional(),
        /** The part of it in CUDA-graph pools, MiB; null where one could not say. */
        graphPoolMiB: z.number().nonnegative().nullable().optional(),
        /** Green contexts: the SM ids each tenant's work ran on, as the workload checked them. */
        tenantSms: z.array(z.array(z.number().int().nonnegative())).optional(),
        /**
         * Its processes are those this comparison started, told to switch workloads (absent: started for it):
         * the GPU was idle before that one's start. Absent before 2026-11-24.
         */
        switchedFrom: z.string().optional(),
        /**
         * Its first processes are an earlier comparison's with fewer clients of the same workload, kept (a
         * --clients sweep); this one started the rest. Names the comparison that started the first ones,
         * before which the GPU was idle. Absent: none kept.
         */
        grownFrom: z.string().optional(),
        /** After a switch: what the previous workload's allocators held, and what they still held once it was released, MiB (sums). */
        released: z
          .object({
            memoryReservedMiB: z.number().nonnegative().nullable(),
            leftMiB: z.number().nonnegative().nullable(),
          })
          .optional(),
      }),
    )
    .optional(),
  /** Each start of the command (the run, each --resume), CLOCK_MONOTONIC µs. Absent before 2026-11-24. */
  wallSpans: z.array(WallSpanSchema).optional(),
  /** Where the wall time went (session/time-account.ts), written when the comparisons end. Absent before 2026-11-24. */
  timeAccount: TimeAccountSchema.optional(),
  /**
   * Each plain process (ALONE_ARM) the run started, CLOCK_MONOTONIC µs: its GPU memory is in the samples
   * of every comparison it outlived, and the memory account takes it out. Absent before 2026-12-06.
   */
  plainProcesses: z
    .array(
      z.object({
        workload: z.string(),
        /** The comparison it was started for. */
        comparisonId: z.string(),
        startedUs: z.number(),
        readyUs: z.number(),
        /** When it had exited; absent while it ran (or where the harness was killed). */
        endUs: z.number().optional(),
      }),
    )
    .optional(),
});
export type Run = z.infer<typeof RunSchema>;

/**
 * The protocol loop a run measured through: 2 where it says so, or where a process recorded a check of
 * its loop (only loop 2 makes them; the runs of 2026-11-27 before the field was written have them in
 * every process), else 1: before 2026-11-27 the loop entered the stream and read the clock three times per
 * request, which slowed a client alone by several per cent. Runs of two loops do not measure alike.
 */
export function measuredLoop(run: Pick<Run, 'loop' | 'trials'>): 1 | 2 {
  if (run.loop === 2) return 2;
  const checked = run.trials.some((t) => t.status === 'ok' && t.clients.some((c) => c.loopOverhead !== undefined));
  return checked ? 2 : 1;
}
