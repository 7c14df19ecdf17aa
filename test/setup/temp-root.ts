/**
 * Vitest's global setup: one temporary root for the whole suite. TMPDIR points into it, so every
 * temporary directory the tests, the CLI they start and its fakes make (gpushare-test-*, the MPS
 * daemons' private gpushare-mps-* directories...) lands there; at the end it is removed, after a check
 * that no fake process the suite started outlived it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SIMULATOR_BIN } from '../../harness/core/paths.js';
import { findProcesses, type ProcessInfo, readEnviron } from '../../harness/system/proc/process-table.js';

const LEFTOVER_DEADLINE_MS = 15_000;

export default function setup(): () => Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'gpushare-suite-'));
  process.env.TMPDIR = root;
  // Node reads NODE_EXTRA_CA_CERTS's bundle at every process start (60 ms of CPU on a 2-core machine), and
  // the suite starts thousands of node processes: the CLI and its fakes, none of which reaches the network.
  // npm, which may, gets it back (NPM_ENV in test/helpers.ts).
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  if (ca !== undefined) {
    process.env.GPUSHARE_SUITE_NPM_CA = ca;
    delete process.env.NODE_EXTRA_CA_CERTS;
  }
  return async () => {
    try {
      const left = await leftovers(root);
      if (left.length > 0) {
        for (const p of left) process.kill(p.pid, 'SIGKILL');
        throw new Error(
          `the suite left ${left.length} fake process(es) running: ${left.map((p) => `${p.pid} ${p.argv.join(' ')}`).join('; ')}`,
        );
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
}

/** The fake MPS daemons and workloads started under this suite's TMPDIR still running after a grace period. */
async function leftovers(root: string): Promise<ProcessInfo[]> {
  const end = Date.now() + LEFTOVER_DEADLINE_MS;
  for (;;) {
    const ours: ProcessInfo[] = [];
    for (const p of await findProcesses('')) {
      if (!p.argv.some((a) => a.startsWith(SIMULATOR_BIN)) && !p.comm.startsWith('nvidia-cuda-mps')) continue;
      if ((await readEnviron(p.pid))?.includes(`TMPDIR=${root}`)) ours.push(p);
    }
    if (ours.length === 0 || Date.now() > end) return ours;
    await new Promise((r) => setTimeout(r, 200));
  }
}
