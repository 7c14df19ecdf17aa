/** What `gpushare capacity` records (capacity.json): every step of every search, as measured. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Step } from '../analysis/capacity.js';
import { UserError } from '../errors.js';
import type { Fingerprint, WorkloadSpec } from './schema.js';

export const CAPACITY_SCHEMA_ID = 'gpushare-capacity/1';
export const CAPACITY_FILE = 'capacity.json';

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

/** One mode and client count: its steps, or why it could not run (a client that never became ready). */
export type CapacityPoint = { mode: 'timeslice' | 'mps'; clients: number } & ({ status: 'measured'; steps: Step[] } | { status: 'skipped' | 'failed'; reason: string; steps: Step[] });

export interface CapacityRun {
  schema: typeof CAPACITY_SCHEMA_ID;
  id: string;
  status: 'running' | 'complete' | 'interrupted' | 'failed';
  createdAt: string;
  finishedAt: string | null;
  fingerprint: Fingerprint;
  gpuIndex: number;
  settings: CapacitySettings;
  points: CapacityPoint[];
  warnings: string[];
}

/** The capacity run saved in `dir`, or null when `dir` holds none. */
export async function loadCapacityRun(dir: string): Promise<CapacityRun | null> {
  const text = await readFile(path.join(dir, CAPACITY_FILE), 'utf8').catch(() => null);
  if (text === null) return null;
  let run: unknown;
  try {
    run = JSON.parse(text);
  } catch {
    throw new UserError(`${path.join(dir, CAPACITY_FILE)} is not JSON: it was cut short or edited; run gpushare capacity again`);
  }
  if ((run as { schema?: unknown }).schema !== CAPACITY_SCHEMA_ID) throw new UserError(`${path.join(dir, CAPACITY_FILE)} is not a ${CAPACITY_SCHEMA_ID} record`);
  return run as CapacityRun;
}
