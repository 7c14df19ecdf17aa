import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadRun } from '../../harness/bench/record/store.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { cli, runOnDisk, tempDir } from '../helpers.js';

describe('signals during the MPS arm', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s: kills the workloads, quits the daemon, keeps finished trials, exits %i', async (signal, code) => {
    const out = path.join(tempDir(), 'run');
    const child = cli([
      'bench',
      '--out',
      out,
      '--modes',
      'mps',
      '--workloads',
      'gemm',
      '--rounds',
      '50',
      '--window-ms',
      '200',
    ]);
    while ((runOnDisk(out)?.trials.length ?? 0) < 2) await sleep(50);
    child.kill(signal);
    const result = await child;
    expect(result.exitCode).toBe(code);
    expect(result.stderr).toMatch(/gpushare: run interrupted; \d+ finished trials are saved in /);
    const run = await loadRun(out);
    expect(run.status).toBe('interrupted');
    expect(run.trials.length).toBeGreaterThanOrEqual(2);
    const mps = run.modes[0]?.mps;
    expect(mps?.shutdown).toBe('quit');
    expect(await isRunning(mps?.controlPid as number)).toBe(false);
    for (const pid of mps?.serverPids ?? []) expect(await isRunning(pid)).toBe(false);
    const workloadPids = run.trials.flatMap((t) => ('clients' in t ? t.clients.map((c) => c.pid as number) : []));
    expect(workloadPids.length).toBeGreaterThan(0);
    for (const pid of new Set(workloadPids)) expect(await isRunning(pid)).toBe(false);
  });
});
