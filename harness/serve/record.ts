/**
 * A server run's record (serve.json), its zod schema the one definition of its shape: the settings,
 * the load generator's own ceiling, and one group per sharing mode and number of copies, each with its
 * rounds (dedicated window, shared window) or its rate search, and the MPS daemons it ran.
 */
export const SERVE_SCHEMA_ID = 'gpushare.serve/1';

import { stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../core/errors.js';
import { MAX_LOAD_WORKERS } from '../load/pool-protocol.js';
import { REQUEST_OUTCOMES } from '../load/request.js';
import { MpsDaemonRecordSchema } from '../record/daemon-record.js';
import { SERVE_FILE } from '../record/kinds.js';
import { loadRecord, machineRecordHeaderSchema } from '../record/record-file.js';
import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';
import { FleetRecordSchema } from './fleet/fleet-record.js';
import { IN_PROCESS, resolveServeOptions, SERVE_MODES, START_ORDERS, settingsArgs } from './options.js';
import { WarmupSchema } from './warmup.js';

export { type GroupMode, IN_PROCESS, isServeMode, SERVE_MODES, type ServeMode } from './options.js';

/**
 * A figure a server run measured (a count, a time in ms, a rate): never negative, never past 10^12 (31
 * years of ms; requests or tokens per second far beyond any GPU). A record saying otherwise was edited.
 */
const figure = z.number().nonnegative().max(1e12);
const count = z.number().int().nonnegative().max(1e12);
/** What bounds a record's lists: the flags' limits (1000 rounds; 3 modes × 48 counts and a dedicated group), a search's 8 steps, with room. */
const MAX_ROUNDS = 1000;
const MAX_STEPS = 64;
const MAX_GROUPS = SERVE_MODES.length * MPS_CLIENT_LIMIT + 1;
const MAX_LIST = 10_000;
/** The largest serve.json read: a run at the flags' limits stays far below it. */
export const MAX_SERVE_BYTES = 256 * 1024 * 1024;

const ServeSettingsSchema = z.object({
  /** bench: rounds of dedicated vs shared at equal requests resident; capacity: a rate search at the SLO. */
  measure: z.enum(['bench', 'capacity']),
  /** The server's command line, with {port} {index} {gpu_uuid} {mem_fraction} still in it. */
  serve: z.string(),
  api: z.enum(['completions', 'chat']),
  /** The path polled until it answers 200. */
  readyPath: z.string(),
  readyTimeoutMs: z.number(),
  /** How the servers started (--start): absent from runs before it, which started them serially. */
  start: z.enum(START_ORDERS).optional(),
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
  serverCpus: z
    .string()
    .regex(/^\d{1,4}(,\d{1,4}){0,4095}$/, 'CPU numbers, comma-separated')
    .nullable(),
  /** The core the harness, the load generator, was pinned to, or null. */
  generatorCpu: z.number().int().nonnegative().max(4095).nullable(),
  /** The cores of the harness and its generator workers (taskset -c), or null: not pinned. Absent from runs before the workers. */
  generatorCpus: z
    .string()
    .regex(/^\d{1,4}(,\d{1,4}){0,4095}$/, 'CPU numbers, comma-separated')
    .nullable()
    .optional(),
  /** Generator worker processes (--load-workers). Absent from runs before the workers: the harness sent the load itself. */
  loadWorkers: z.number().int().positive().max(MAX_LOAD_WORKERS).optional(),
  requestTimeoutMs: z.number().positive(),
  /** How long the generator's ceiling holds each rate, ms. */
  ceilingStepMs: z.number().positive(),
  /** capacity: the longest a step may run to gather the requests its p99 claim needs, ms. */
  maxStepMs: z.number().positive(),
  /** Warm-up until steady (serve/warmup.ts): at least, at most, ms; absent from runs with one warm-up window per arm. */
  warmupMs: z.number().nonnegative().optional(),
  warmupMaxMs: z.number().nonnegative().optional(),
  /** bench --serve --fleet: the fleet file (serve/fleet/); absent from runs of copies of one server. */
  fleet: z.string().optional(),
  /** capacity --serve --fleet: the largest fleet searched (--max-servers), and the boundary's replicates (--replicates). */
  maxServers: z.number().int().positive().optional(),
  replicates: z.number().int().nonnegative().optional(),
});
export type ServeSettings = z.infer<typeof ServeSettingsSchema>;

const LatencySchema = z.object({
  count,
  /** Null where there was no value (every request failed; one-token outputs have no gap). */
  p50Ms: figure.nullable(),
  p99Ms: figure.nullable(),
  /** HDR histogram (µs, compressed base64), as capacity and mix record theirs. */
  histogram: z.string().max(1024 * 1024),
});
export type Latency = z.infer<typeof LatencySchema>;

/** One window of load against one or more copies, merged. */
const WindowStatsSchema = z.object({
  copies: count,
  /** Requests resident per copy (closed loop), or null for open loop. */
  concurrency: count.nullable(),
  /** The total open-loop rate, or null for closed loop. */
  ratePerS: figure.nullable(),
  /** How long the load was sent for, ms: throughput counts what arrived within it. */
  windowMs: figure,
  /** From the start to the last response (the drain after the window included), ms. */
  elapsedMs: figure,
  requests: count,
  ok: count,
  /** Requests within the SLO (TTFT ≤ the target, and every gap ≤ the ITL target when one is set). */
  good: count,
  /** Requests whose TTFT was over the SLO's target, or that failed. */
  overTtft: count,
  /** One line per kind of failed request with its first detail. */
  failures: z.array(z.string()).max(REQUEST_OUTCOMES.length),
  /** Output tokens of requests that ended ok, arrived within the window. */
  outputTokens: count,
  outputTokensPerS: figure,
  /** Requests that ended ok within the window, per second of it. */
  requestsPerS: figure,
  ttft: LatencySchema,
  itl: LatencySchema,
  e2e: LatencySchema,
  /** How late the generator sent (p99), ms. */
  lagP99Ms: figure,
  /** CPU time the harness (the generator) used during the window, ms. */
  generatorCpuMs: figure,
  /**
   * How the token counts of the requests that ended ok agreed (load/tokens.ts): absent from runs
   * recorded before it was kept.
   */
  tokens: z
    .object({ withUsage: count, multiToken: count, miscounted: count, short: count, fromLength: count.optional() })
    .optional(),
  /**
   * Requests sent within the window, per second of it: the rate offered, checked against the generator's
   * ceiling (requestsPerS counts completions). Absent from runs recorded before it was kept.
   */
  sentPerS: figure.optional(),
  /** Each generator worker's requests, send lag p99 (ms) and CPU time (ms); absent where the harness sent the load itself. */
  workers: z
    .array(z.object({ requests: count, lagP99Ms: figure, cpuMs: figure }))
    .max(MAX_LOAD_WORKERS)
    .optional(),
});
export type WindowStats = z.infer<typeof WindowStatsSchema>;

const ServeRoundSchema = z.object({ dedicated: WindowStatsSchema, shared: WindowStatsSchema });
export type ServeRound = z.infer<typeof ServeRoundSchema>;

const RateStepSchema = z.object({
  totalRatePerS: figure,
  window: WindowStatsSchema,
  verdict: z.enum(['pass', 'fail', 'invalid']),
  reason: z.string(),
});
export type RateStep = z.infer<typeof RateStepSchema>;

/** One mode at one number of copies (mode 'dedicated': one plain copy, capacity's reference row). */
const ServeGroupSchema = z.object({
  mode: z.enum([...SERVE_MODES, 'dedicated', IN_PROCESS]),
  copies: z.number().int().positive(),
  /** pending: not measured yet (or cut short: --resume measures it from its start). */
  status: z.enum(['pending', 'measured', 'skipped', 'failed']),
  reason: z.string().nullable(),
  rounds: z.array(ServeRoundSchema).max(MAX_ROUNDS),
  steps: z.array(RateStepSchema).max(MAX_STEPS),
  /** Each copy's environment beyond the host's (the MPS pipe directory, the thread cap). */
  env: z.record(z.string(), z.string()),
  /** Each arm's warm-up before the group was measured; absent from runs recorded before it was kept. */
  warmup: z.array(WarmupSchema).max(8).optional(),
});
export type ServeGroup = z.infer<typeof ServeGroupSchema>;

const CeilingStepSchema = z.object({ ratePerS: figure, window: WindowStatsSchema });
export type CeilingStep = z.infer<typeof CeilingStepSchema>;

export const ServeRunSchema = z.object({
  ...machineRecordHeaderSchema(SERVE_SCHEMA_ID),
  settings: ServeSettingsSchema,
  /** The generator against a null server on this host, before any server started. */
  ceiling: z.array(CeilingStepSchema).max(MAX_STEPS),
  groups: z.array(ServeGroupSchema).min(1).max(MAX_GROUPS),
  daemons: z.array(MpsDaemonRecordSchema).max(MAX_LIST),
  /** Host CPUs, and their model. */
  host: z.object({ cpus: count, cpuModel: z.string().nullable() }),
  warnings: z.array(z.string()).max(MAX_LIST),
  resumes: z
    .array(z.object({ at: z.string(), groupsKept: count }))
    .max(MAX_LIST)
    .optional(),
  /** Every request's line in the requests file beside this record (REQUESTS_FILE); absent from runs before it was kept. */
  requests: z.object({ file: z.string(), lines: count }).optional(),
  /** bench --serve --fleet: the fleet, its schedule and each server's windows; absent from runs of copies. */
  fleet: FleetRecordSchema.optional(),
});
export type ServeRun = z.infer<typeof ServeRunSchema>;

/**
 * The server run in `dir`, read through its schema, or null when `dir` holds none. Bounded: a file
 * over MAX_SERVE_BYTES is refused unread, and settings no flags could give (an edited record, which
 * --resume would otherwise run with) are refused naming the flag.
 */
export async function loadServeRun(dir: string): Promise<ServeRun | null> {
  const file = path.join(dir, SERVE_FILE);
  const size = (await stat(file).catch(() => null))?.size ?? 0;
  if (size > MAX_SERVE_BYTES)
    throw new UserError(
      `${file} is ${size} bytes, more than any server run writes (${MAX_SERVE_BYTES}): it is not one gpushare wrote`,
    );
  const run = await loadRecord(dir, 'serve', ServeRunSchema);
  if (run === null) return null;
  try {
    resolveServeOptions(settingsArgs(run.settings), run.settings.measure);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UserError(
      `${file}: its settings are none gpushare's flags allow (${error.message}): it was edited; measure again`,
    );
  }
  return run;
}
