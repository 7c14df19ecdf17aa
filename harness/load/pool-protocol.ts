/** The lines between the harness and its generator workers (load/pool.ts, load/worker-main.ts): JSON, one message a line. */
import type { RequestRecord } from './request.js';
import type { LoadPart, LoadRunOptions } from './run.js';

/** The most generator workers a run may have (--load-workers). */
export const MAX_LOAD_WORKERS = 64;

/** Harness → worker: send `part` of a load that starts at `startMs` (load/run.ts monotonicMs, the clock every process shares). */
export interface PoolJob {
  job: number;
  options: Pick<LoadRunOptions, 'request' | 'schedule' | 'durationMs' | 'inputTokensMax'>;
  part: LoadPart;
  startMs: number;
}

/** Worker → harness: up, a record of a job, or a job's end with the worker's CPU time over it, ms. */
export type WorkerLine =
  | { ready: true }
  | { job: number; record: RequestRecord }
  | { job: number; done: true; cpuMs: number };
