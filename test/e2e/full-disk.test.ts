/**
 * A disk that fills up mid-run, on a real (tiny) tmpfs: one line and exit 2, the MPS daemon still
 * stopped, finished trials and the daemon's logs kept, and --resume continues once there is space.
 * Needs root to mount the tmpfs; elsewhere the seam tests in test/unit/mps-ownership.test.ts cover it.
 */
import { closeSync, existsSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRun } from '../../harness/bench/record/store.js';
import { findProcesses, readEnviron } from '../../harness/system/proc/process-table.js';
import { cli, expectOneLineError, runOnDisk, tempDir, until } from '../helpers.js';

const mnt = tempDir('gpushare-full-disk-');
const mounted =
  process.getuid?.() === 0 &&
  (await execa('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { reject: false })).exitCode === 0;
afterAll(async () => {
  if (mounted) await execa('umount', [mnt], { reject: false });
});

/** Writes until the file system is full. */
function fill(file: string): void {
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

describe.skipIf(!mounted)('a full disk mid-run (tmpfs)', () => {
  it('exits 2 with one line, stops the MPS daemon, keeps its logs, and --resume continues', async () => {
    const out = path.join(mnt, 'run');
    const child = cli([
      'bench',
      '--out',
      out,
      '--modes',
      'mps',
      '--workloads',
      'gemm',
      '--rounds',
      '4',
      '--max-rounds',
      '4',
      '--window-ms',
      '200',
      '--quiet',
    ]);
    await until(
      () => (runOnDisk(out)?.trials.length ?? 0) >= 2 && runOnDisk(out)?.modes[0]?.mps?.shutdown === 'running',
      30_000,
      'two trials in the MPS arm',
    );
    const pipe = runOnDisk(out)?.modes[0]?.mps?.pipeDirectory as string;
    fill(path.join(mnt, 'filler'));
    const result = await child;
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `(ENOSPC): the trials finished before it are kept in ${out}; fix the disk and continue with gpushare bench --resume ${out}`,
    );
    const mps = [];
    for (const p of await findProcesses('nvidia-cuda-mps'))
      if ((await readEnviron(p.pid))?.includes(`CUDA_MPS_PIPE_DIRECTORY=${pipe}`)) mps.push(p);
    expect(mps).toEqual([]);
    // The logs could not go to the full disk: they stay in the private directory, not lost.
    expect(readdirSync(path.join(path.dirname(pipe), 'log'))).toContain('control.log');
    const saved = await loadRun(out);
    expect(saved.trials.length).toBeGreaterThanOrEqual(2);

    rmSync(path.join(mnt, 'filler'));
    const resumed = await cli(['bench', '--resume', out, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    expect(run.trials.slice(0, saved.trials.length)).toEqual(saved.trials);
    expect(readdirSync(path.join(out, 'mps'))).toContain('interrupted-control.log');
    expect(existsSync(path.dirname(pipe))).toBe(false);
  });
});
