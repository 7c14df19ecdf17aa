/**
 * The record of a multi-GPU bench (bench --gpus): host.json in a parent directory that holds one
 * ordinary run directory per GPU (gpu<N>/) and the cross-GPU check's run (cross/).
 */
import { HOST_FILE } from '../../record/kinds.js';
import { loadRecord, type RecordHeader } from '../../record/record-file.js';

export const HOST_SCHEMA_ID = 'gpushare-host/1';

/** One GPU's bench: its run directory, relative to the parent, and how it ended. */
export interface HostGpu {
  index: number;
  uuid: string;
  name: string | null;
  /** Run directory relative to the parent directory, e.g. gpu0. */
  dir: string;
  /** bench's exit code for this GPU's run; null until it ends. */
  exitCode: number | null;
}

export interface HostRun extends RecordHeader<typeof HOST_SCHEMA_ID> {
  gpus: HostGpu[];
  /** The cross-GPU check's run directory, relative to the parent; null with a single GPU. */
  crossDir: string | null;
  /** Whether the per-GPU runs ran side by side, and why (decided from the cross-GPU check). */
  schedule: { parallel: boolean; reason: string } | null;
}

/** host.json of `dir`, or null when `dir` is not a multi-GPU run. */
export function loadHostRun(dir: string): Promise<HostRun | null> {
  return loadRecord<HostRun>(dir, HOST_FILE, HOST_SCHEMA_ID, 'gpushare bench --gpus');
}
