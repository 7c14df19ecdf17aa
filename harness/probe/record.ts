/**
 * What `gpushare probe` records (probe.json): each probe's typed outcome with its raw measurements.
 * The claims ledger and the report are computed from it (analysis/claims.ts), never stored.
 */
import { z } from 'zod';
import { MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { loadRecord, machineRecordHeaderSchema } from '../record/record-file.js';

export const PROBE_SCHEMA_ID = 'gpushare-probe/1';

/** The probe names, in the order they run. */
export const PROBES = [
  'memory',
  'sm-cap',
  'fault',
  'fault-in-process',
  'client-limit',
  'context',
  'slice',
  'default-stream',
  'priority',
  'green-context',
] as const;
export type ProbeName = (typeof PROBES)[number];

/** The sharing a probe ran under: plain time-slicing, or clients of gpushare's own MPS daemon. */
export const ProbeModeSchema = z.enum(['timeslice', 'mps']);
export type ProbeMode = z.infer<typeof ProbeModeSchema>;

/** A probe that could not run here (no MPS, no green contexts) or broke: the reason, quoted. */
const notMeasured = { status: z.enum(['skipped', 'failed']), reason: z.string() };
export type NotMeasured = { status: 'skipped' | 'failed'; reason: string };

/** An allocation a role tried: `error` is the CUDA/PyTorch error when it failed. */
export const AllocReplySchema = z.object({ mib: z.number(), ok: z.boolean(), error: z.string().nullable() });
export type AllocReply = z.infer<typeof AllocReplySchema>;

/** One client's fate in the fault probe. */
export const VictimSchema = z.object({
  survived: z.boolean(),
  /** The error it got, or null when it kept running. */
  error: z.string().nullable(),
});
export type Victim = z.infer<typeof VictimSchema>;

/** An open-loop latency series: latency of each request from its scheduled time, ms. */
const latencySeries = {
  latenciesMs: z.array(z.number()),
  /** Requests sent more than one period after they were due: the generator fell behind its schedule. */
  lateRequests: z.number(),
  periodMs: z.number(),
};
export const LatencySeriesSchema = z.object(latencySeries);
export type LatencySeries = z.infer<typeof LatencySeriesSchema>;

/** A probe's typed outcome: its measurements, or why it has none. */
export const ProbeOutcomeSchema = z.union([
  z.object({
    probe: z.literal('memory'),
    mode: ProbeModeSchema,
    limitMib: z.number().nullable(),
    status: z.literal('measured'),
    victimBefore: AllocReplySchema,
    hogTries: z.array(AllocReplySchema),
    hogHeldMib: z.number(),
    hogError: z.string().nullable(),
    victimDuring: AllocReplySchema,
    victimKeptRunning: z.boolean(),
    victimAfter: AllocReplySchema,
  }),
  z.object({ probe: z.literal('memory'), mode: ProbeModeSchema, limitMib: z.number().nullable(), ...notMeasured }),
  z.object({
    probe: z.literal('sm-cap'),
    mode: z.literal('mps'),
    status: z.literal('measured'),
    totalSms: z.number(),
    points: z.array(z.object({ threadPercentage: z.number(), sms: z.number(), tflops: z.number() })),
  }),
  z.object({ probe: z.literal('sm-cap'), mode: z.literal('mps'), ...notMeasured }),
  z.object({
    probe: z.literal('fault'),
    mode: ProbeModeSchema,
    status: z.literal('measured'),
    faulterError: z.string().nullable(),
    victims: z.array(VictimSchema),
    /** get_server_status of the MPS server right after the fault and once a client was accepted again. */
    serverAfterFault: z.string().nullable(),
    serverAfterRecovery: z.string().nullable(),
    /** A new client after the fault: accepted or not, after how long and how many tries. */
    recovery: z.object({
      accepted: z.boolean(),
      afterMs: z.number(),
      attempts: z.number(),
      lastError: z.string().nullable(),
    }),
  }),
  z.object({ probe: z.literal('fault'), mode: ProbeModeSchema, ...notMeasured }),
  z.object({
    probe: z.literal('fault-in-process'),
    status: z.literal('measured'),
    /** The error the faulting thread got, or null when its illegal address raised none. */
    faulterError: z.string().nullable(),
    /** Each other tenant (thread, stream) of the same process: did it keep running. */
    victims: z.array(VictimSchema),
  }),
  z.object({ probe: z.literal('fault-in-process'), ...notMeasured }),
  z.object({
    probe: z.literal('client-limit'),
    mode: z.literal('mps'),
    status: z.literal('measured'),
    tried: z.number(),
    accepted: z.number(),
    firstError: z.string().nullable(),
  }),
  z.object({ probe: z.literal('client-limit'), mode: z.literal('mps'), ...notMeasured }),
  z.object({
    probe: z.literal('context'),
    mode: ProbeModeSchema,
    status: z.literal('measured'),
    initMs: z.array(z.number()),
    createMs: z.array(z.number()),
    freeMib: z.array(z.number()),
    totalMib: z.number(),
  }),
  z.object({ probe: z.literal('context'), mode: ProbeModeSchema, ...notMeasured }),
  z.object({
    probe: z.literal('slice'),
    mode: ProbeModeSchema,
    status: z.literal('measured'),
    points: z.array(z.object({ cotenants: z.number(), ...latencySeries })),
  }),
  z.object({ probe: z.literal('slice'), mode: ProbeModeSchema, ...notMeasured }),
  z.object({
    probe: z.literal('default-stream'),
    status: z.literal('measured'),
    spinUs: z.number(),
    runs: z.array(
      z.object({
        streamKind: z.enum(['pytorch', 'blocking']),
        streams: z.number(),
        strayCopy: z.boolean(),
        concurrency: z.number(),
      }),
    ),
  }),
  z.object({ probe: z.literal('default-stream'), ...notMeasured }),
  z.object({
    probe: z.literal('priority'),
    status: z.literal('measured'),
    runs: z.array(
      z.object({ priority: z.enum(['normal', 'high']), backgroundBlockUsPerS: z.number(), ...latencySeries }),
    ),
  }),
  z.object({ probe: z.literal('priority'), ...notMeasured }),
  z.object({
    probe: z.literal('green-context'),
    status: z.literal('measured'),
    totalSms: z.number(),
    criticalSms: z.number(),
    runs: z.array(
      z.object({
        arm: z.enum(['streams', 'green', 'mps']),
        backgroundSms: z.number(),
        backgroundBlockUsPerS: z.number(),
        ...latencySeries,
      }),
    ),
    /** Why the MPS arm has no run, or null when it has one. */
    mpsArm: z.string().nullable(),
  }),
  z.object({ probe: z.literal('green-context'), ...notMeasured }),
]);
export type ProbeOutcome = z.infer<typeof ProbeOutcomeSchema>;

/** What one probe session left: how its processes and MPS daemon ended, and any PID still running after. */
export const CleanupSchema = z.object({
  probe: z.enum(PROBES),
  mode: z.string(),
  daemon: z.string().nullable(),
  leftPids: z.array(z.number().int()),
});
export type Cleanup = z.infer<typeof CleanupSchema>;

/** A probe run as saved: every outcome so far, and what was left behind (nothing, if all went well). */
export const ProbeRunSchema = z.object({
  ...machineRecordHeaderSchema(PROBE_SCHEMA_ID),
  /** The probes asked for, in the order they run: --resume runs those without an outcome. Absent before 2026-11-24 (then: those with one). */
  requested: z.array(z.enum(PROBES)).optional(),
  probes: z.array(ProbeOutcomeSchema),
  /** Per probe and mode: how its processes and MPS daemon ended, and any PID still running after. */
  cleanup: z.array(CleanupSchema),
  /** Every MPS daemon the probes started, recorded before it started. Absent before 2026-11-24. */
  daemons: z.array(MpsDaemonRecordSchema).optional(),
  warnings: z.array(z.string()),
  /** Each --resume: when, and how many outcomes it kept. */
  resumes: z.array(z.object({ at: z.string(), probesKept: z.number().int().nonnegative() })).optional(),
});
export type ProbeRun = z.infer<typeof ProbeRunSchema>;

/** The probe run saved in `dir`, read through its schema, or null when `dir` holds none (a bench run, or nothing). */
export function loadProbeRun(dir: string): Promise<ProbeRun | null> {
  return loadRecord(dir, 'probe', ProbeRunSchema);
}
