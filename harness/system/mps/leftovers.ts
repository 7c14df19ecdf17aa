/**
 * gpushare's own MPS leftovers on this machine: the private roots it made under the temp directory
 * (gpushare-mps-XXXXXX holding its marker) and the MPS processes whose environment names one of
 * them. What doctor lists as gpushare's, with how to stop each; any other MPS process is not.
 */
import { readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isMpsRootPath, type MpsMarker, readMpsMarkerSync } from './ownership.js';
import { listPipeProcessesSync } from './pipe-processes.js';

/** One root gpushare made, and what still runs for it. */
export interface MpsLeftover {
  root: string;
  pipeDirectory: string;
  marker: MpsMarker;
  /** The live MPS processes started for it. */
  pids: number[];
}

/** gpushare's MPS roots under `tempRoot`, oldest first. */
export async function findMpsLeftovers(tempRoot = os.tmpdir()): Promise<MpsLeftover[]> {
  const processes = listPipeProcessesSync().filter((p) => p.mps);
  const found: MpsLeftover[] = [];
  for (const name of (await readdir(tempRoot).catch(() => [] as string[])).sort()) {
    const root = path.join(tempRoot, name);
    if (!isMpsRootPath(root, tempRoot)) continue;
    const marker = readMpsMarkerSync(root);
    if (typeof marker === 'string') continue;
    const pipeDirectory = path.join(root, 'pipe');
    found.push({
      root,
      pipeDirectory,
      marker,
      pids: processes.filter((p) => p.pipeDirectory === pipeDirectory).map((p) => p.pid),
    });
  }
  return found.sort((a, b) => a.marker.createdAtMs - b.marker.createdAtMs);
}
