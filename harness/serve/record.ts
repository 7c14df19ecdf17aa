/**
 * A server run's record (serve.json), its zod schema the one definition of its shape: the settings,
 * the load generator's own ceiling, and one group per sharing mode and number of copies, each with its
 * rounds (dedicated window, shared window) or its rate search, and the MPS daemons it ran.
 */
import { z } from 'zod';
import { MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { loadRecord, recordHeaderSchema } from '../record/record-file.js';
import { FingerprintSchema } from '../system/nvidia/schema.js';

export const SERVE_SCHEMA_ID = 'gpushare.serve/1';

/** The sharing modes a server is copied under: plain processes, MPS, MPS with each copy's thread cap. */
export const SERVE_MODES = ['timeslice', 'mps', 'mps-threads'] as const;
export type ServeMode = (typeof SERVE_MODES)[number];

const ServeSettingsSchema = z.object({
  /** bench: rounds of dedicated vs shared at equal requests resident; capacity: a rate search at the SLO. */
  measure: z.enum(['bench', 'capacity']),
  /** The server's command line, with {port} {index} {gpu_uuid} {mem_fraction} still in it. */
  serve: z.string(),
  api: z.enum(['completions', 'chat']),
  /** The path polled until it answers 200. */
  readyPath: z.string(),
  readyTimeoutMs: z.number(),
  modes: z.array(z.enum(SERVE_MODES)),
  copies: z.array(z.number().int().positive()),
  /** Requests resident per copy (closed loop) in the shared arm; the dedicated copy carries copies × this. */
  concurrency: z.number().int().positive(),
  /** Each prompt's length in words; with inputTokensMax, the least of a uniform range (a length distribution). */
  inputTokens: z.number().int().positive(),
  inputTokensMax: z.number().int().positive().nullable(),
  outputTokens: z.number().int().positive(),
  windowMs: z.number().positive(),
  rounds: z.number().int().positive(),
  /** Each copy's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under mps-threads; null: 100 ÷ copies. */
  threadPct: z.number().nullable(),
  /** Each MPS copy's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT set to its {mem_fraction} of the GPU's memory. */
  mpsMemCap: z.boolean(),
  sloTtftP99Ms: z.number().positive(),
  sloItlMaxMs: z.number().positive().nullable(),
  gpuHourUsd: z.number().positive().nullable(),
  /** Cores the servers were pinned to (taskset -c), or null: not pinned. */
  serverCpus: z.string().nullable(),
  /** The core the harness, the load generator, was pinned to, or null. */
  generatorCpu: z.number().int().nonnegative().nullable(),
  requestTimeoutMs: z.number().positive(),
  /** How long the generator's ceiling holds each rate, ms. */
  ceilingStepMs: z.number().positive(),
  /** capacity: the longest a step may run to gather the requests its p99 claim needs, ms. */
  maxStepMs: z.number().positive(),
});
export type ServeSettings = z.infer<typeof ServeSettingsSchema>;

const LatencySchema = z.object({
  count: z.number(),
  /** Null where there was no value (every request failed; one-token outputs have no gap). */
  p50Ms: z.number().nullable(),
  p99Ms: z.number().nullable(),
  /** HDR histogram (µs, compressed base64), as capacity and mix record theirs. */
  histogram: z.string(),
});
export type Latency = z.infer<typeof LatencySchema>;

/** One window of load against one or more copies, merged. */
const WindowStatsSchema = z.object({
  copies: z.number(),
  /** Requests resident per copy (closed loop), or null for open loop. */
  concurrency: z.number().nullable(),
  /** The total open-loop rate, or null for closed loop. */
  ratePerS: z.number().nullable(),
  /** How long the load was sent for, ms: throughput counts what arrived within it. */
  windowMs: z.number(),
  /** From the start to the last response (the drain after the window included), ms. */
  elapsedMs: z.number(),
  requests: z.number(),
  ok: z.number(),
  /** Requests within the SLO (TTFT ≤ the target, and every gap ≤ the ITL target when one is set). */
  good: z.number(),
  /** Requests whose TTFT was over the SLO's target, or that failed. */
  overTtft: z.number(),
  /** One line per kind of failed request with its first detail. */
  failures: z.array(z.string()),
  /** Output tokens of requests that ended ok, arrived within the window. */
  outputTokens: z.number(),
  outputTokensPerS: z.number(),
  /** Requests that ended ok within the window, per second of it. */
  requestsPerS: z.number(),
  ttft: LatencySchema,
  itl: LatencySchema,
  e2e: LatencySchema,
  /** How late the generator sent (p99), ms. */
  lagP99Ms: z.number(),
  /** CPU time the harness (the generator) used during the window, ms. */
  generatorCpuMs: z.number(),
});
export type WindowStats = z.infer<typeof WindowStatsSchema>;

const ServeRoundSchema = z.object({ dedicated: WindowStatsSchema, shared: WindowStatsSchema });
export type ServeRound = z.infer<typeof ServeRoundSchema>;

const RateStepSchema = z.object({
  totalRatePerS: z.number(),
  window: WindowStatsSchema,
  verdict: z.enum(['pass', 'fail', 'invalid']),
  reason: z.string(),
});
export type RateStep = z.infer<typeof RateStepSchema>;

/** One mode at one number of copies (mode 'dedicated': one plain copy, capacity's reference row). */
const ServeGroupSchema = z.object({
  mode: z.enum([...SERVE_MODES, 'dedicated']),
  copies: z.number().int().positive(),
  /** pending: not measured yet (or cut short: --resume measures it from its start). */
  status: z.enum(['pending', 'measured', 'skipped', 'failed']),
  reason: z.string().nullable(),
  rounds: z.array(ServeRoundSchema),
  steps: z.array(RateStepSchema),
  /** Each copy's environment beyond the host's (the MPS pipe directory, the thread cap). */
  env: z.record(z.string(), z.string()),
});
export type ServeGroup = z.infer<typeof ServeGroupSchema>;

const CeilingStepSchema = z.object({ ratePerS: z.number(), window: WindowStatsSchema });
export type CeilingStep = z.infer<typeof CeilingStepSchema>;

export const ServeRunSchema = z.object({
  ...recordHeaderSchema(SERVE_SCHEMA_ID),
  fingerprint: FingerprintSchema,
  gpuIndex: z.number().int().nonnegative(),
  settings: ServeSettingsSchema,
  /** The generator against a null server on this host, before any server started. */
  ceiling: z.array(CeilingStepSchema),
  groups: z.array(ServeGroupSchema),
  daemons: z.array(MpsDaemonRecordSchema),
  /** Host CPUs, and their model. */
  host: z.object({ cpus: z.number(), cpuModel: z.string().nullable() }),
  warnings: z.array(z.string()),
  resumes: z.array(z.object({ at: z.string(), groupsKept: z.number() })).optional(),
});
export type ServeRun = z.infer<typeof ServeRunSchema>;

/** The server run in `dir`, read through its schema, or null when `dir` holds none. */
export async function loadServeRun(dir: string): Promise<ServeRun | null> {
  return loadRecord(dir, 'serve', ServeRunSchema);
}
