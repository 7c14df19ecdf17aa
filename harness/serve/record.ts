/**
 * A server run's record (serve.json): the settings, the load generator's own ceiling, and one group
 * per sharing mode and number of copies, each with its rounds (dedicated window, shared window) or
 * its rate search, and the MPS daemons it ran.
 */
import path from 'node:path';
import { UserError } from '../core/errors.js';
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import { SERVE_FILE } from '../record/kinds.js';
import type { RunStatus } from '../record/record-file.js';
import { readRegularFile } from '../record/store.js';
import type { Fingerprint } from '../system/nvidia/schema.js';

export const SERVE_SCHEMA_ID = 'gpushare.serve/1';

/** The sharing modes a server is copied under: plain processes, MPS, MPS with each copy's thread cap. */
export const SERVE_MODES = ['timeslice', 'mps', 'mps-threads'] as const;
export type ServeMode = (typeof SERVE_MODES)[number];

export interface ServeSettings {
  /** bench: rounds of dedicated vs shared at equal requests resident; capacity: a rate search at the SLO. */
  measure: 'bench' | 'capacity';
  /** The server's command line, with {port} {index} {gpu_uuid} {mem_fraction} still in it. */
  serve: string;
  api: 'completions' | 'chat';
  /** The path polled until it answers 200. */
  readyPath: string;
  readyTimeoutMs: number;
  modes: ServeMode[];
  copies: number[];
  /** Requests resident per copy (closed loop) in the shared arm; the dedicated copy carries copies × this. */
  concurrency: number;
  /** Each prompt's length in words; with inputTokensMax, the least of a uniform range (a length distribution). */
  inputTokens: number;
  inputTokensMax: number | null;
  outputTokens: number;
  windowMs: number;
  rounds: number;
  /** Each copy's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under mps-threads; null: 100 ÷ copies. */
  threadPct: number | null;
  sloTtftP99Ms: number;
  sloItlP99Ms: number | null;
  gpuHourUsd: number | null;
  /** Cores the servers were pinned to (taskset), or null: not pinned. */
  serverCpus: string | null;
  requestTimeoutMs: number;
  /** How long the generator's ceiling holds each rate, ms. */
  ceilingStepMs: number;
}

export interface Latency {
  count: number;
  p50Ms: number;
  p99Ms: number;
  /** HDR histogram (µs, compressed base64), as capacity and mix record theirs. */
  histogram: string;
}

/** One window of load against one or more copies, merged. */
export interface WindowStats {
  copies: number;
  /** Requests resident per copy (closed loop), or the total open-loop rate. */
  concurrency: number | null;
  ratePerS: number | null;
  elapsedMs: number;
  requests: number;
  ok: number;
  /** Requests within the SLO (TTFT ≤ the target, and every gap ≤ the ITL target when one is set). */
  good: number;
  /** Requests whose TTFT was over the SLO's target, or that failed. */
  overTtft: number;
  failures: string[];
  outputTokens: number;
  outputTokensPerS: number;
  requestsPerS: number;
  ttft: Latency;
  itl: Latency;
  e2e: Latency;
  /** How late the generator sent (p99), ms. */
  lagP99Ms: number;
  /** CPU time the harness (the generator) used during the window, ms. */
  generatorCpuMs: number;
}

export interface ServeRound {
  dedicated: WindowStats;
  shared: WindowStats;
}

export interface RateStep {
  totalRatePerS: number;
  window: WindowStats;
  verdict: 'pass' | 'fail' | 'invalid';
  reason: string;
}

/** One mode at one number of copies (mode 'dedicated': one plain copy, capacity's reference row). */
export interface ServeGroup {
  mode: ServeMode | 'dedicated';
  copies: number;
  /** pending: not measured yet (or cut short: --resume measures it from its start). */
  status: 'pending' | 'measured' | 'skipped' | 'failed';
  reason: string | null;
  rounds: ServeRound[];
  steps: RateStep[];
  /** Each copy's environment beyond the host's (the MPS pipe directory, the thread cap). */
  env: Record<string, string>;
}

export interface CeilingStep {
  ratePerS: number;
  window: WindowStats;
}

export interface ServeRun {
  schema: typeof SERVE_SCHEMA_ID;
  id: string;
  status: RunStatus;
  createdAt: string;
  finishedAt: string | null;
  fingerprint: Fingerprint;
  gpuIndex: number;
  settings: ServeSettings;
  /** The generator against a null server on this host, before any server started. */
  ceiling: CeilingStep[];
  groups: ServeGroup[];
  daemons: MpsDaemonRecord[];
  /** Host CPUs, and what the harness ran on. */
  host: { cpus: number; cpuModel: string | null };
  warnings: string[];
  resumes?: Array<{ at: string; groupsKept: number }>;
}

/** The server run in `dir`, or null when it holds no serve.json; a serve.json of another shape is refused. */
export async function loadServeRun(dir: string): Promise<ServeRun | null> {
  const file = path.join(dir, SERVE_FILE);
  let text: string;
  try {
    text = await readRegularFile(file, 'give a run directory made by gpushare bench --serve');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let run: unknown;
  try {
    run = JSON.parse(text);
  } catch {
    throw new UserError(`${file} is not JSON: give a run directory made by gpushare bench --serve`);
  }
  const r = run as Partial<ServeRun> | null;
  if (r?.schema !== SERVE_SCHEMA_ID || !Array.isArray(r.groups) || !r.settings || !r.fingerprint)
    throw new UserError(`${file} is not a server run of schema ${SERVE_SCHEMA_ID}: run gpushare bench --serve again`);
  return r as ServeRun;
}
