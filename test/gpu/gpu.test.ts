/**
 * GPU tests: run on the GPU machine with `npm run test:gpu` (never in CI). They check the real
 * nvidia-smi, the real MPS daemon and real PyTorch workloads; ratios are not asserted here (those are
 * measurements, made by `npm run bench`).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { loadRun } from '../../harness/bench/record/store.js';
import { systemClock } from '../../harness/core/clock.js';
import { startMpsDaemon } from '../../harness/system/mps/daemon.js';
import { findProcesses, isRunning } from '../../harness/system/proc/process-table.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { WorkloadClient } from '../../harness/workload/client.js';
import { runCommand } from '../../harness/workload/protocol.js';
import { builtinSpec } from '../../harness/workload/registry.js';
import { CLI, runOnDisk, tempDir } from '../helpers.js';
import { gpuCli, psReport } from './processes.js';

async function liveMpsProcesses(): Promise<number[]> {
  return (await findProcesses('nvidia-cuda-mps')).map((p) => p.pid);
}

describe('on a real GPU', () => {
  it('doctor finds the GPU, the MPS binaries and PyTorch', async () => {
    const result = await gpuCli(['doctor', '--json']);
    const f = JSON.parse(String(result.stdout)) as {
      ready: boolean;
      gpus: Array<{ name: string }>;
      mps: { controlPath: string | null };
      python: { torch: string | null };
    };
    expect(result.exitCode).toBe(0);
    expect(f.ready).toBe(true);
    expect(f.gpus[0]?.name).toMatch(/NVIDIA/);
    expect(f.mps.controlPath).not.toBeNull();
    expect(f.python.torch).not.toBeNull();
  });

  it('runs its own MPS daemon: a real client connects through it, then quit leaves nothing running', async () => {
    const before = await liveMpsProcesses();
    const started = await startMpsDaemon(execaRunner, systemClock, {
      visibleDevices: '0',
      startTimeoutMs: 15_000,
      quitTimeoutMs: 10_000,
    });
    if (!started.ok) throw new Error(started.reason);
    const { daemon } = started;
    const spec = builtinSpec('gemm', 'python3', { size: '1024' });
    const client = WorkloadClient.start(execaRunner, 0, 'gemm', spec.argv, { ...daemon.env, PYTHONUNBUFFERED: '1' });
    const signal = new AbortController().signal;
    expect((await client.awaitReady(120_000, signal)).kind).toBe('message');
    const reply = await client.run(
      runCommand('t', systemClock.monotonicUs() + 50_000, { kind: 'fixed-duration', durationMs: 200 }, { streams: 1 }),
      't',
      30_000,
      signal,
    );
    expect(reply.kind).toBe('message');
    const servers = await daemon.serverPids();
    expect(servers.length).toBe(1);
    await client.close(10_000);
    expect(await daemon.stop()).toBe('quit');
    expect(await isRunning(daemon.controlPid as number)).toBe(false);
    expect(await isRunning(servers[0] as number)).toBe(false);
    const logs = await daemon.logs();
    expect(logs.map((l) => l.name)).toEqual(['control.log', 'server.log']);
    expect(logs[1]?.content).toContain('Server has started');
    await daemon.removeDirectory();
    expect(await liveMpsProcesses()).toEqual(before);
    await psReport('after the MPS lifecycle test');
  });

  it('SIGINT in the MPS arm: exit 130, finished trials kept, no MPS daemon or workload left', async () => {
    const out = path.join(tempDir(), 'run');
    const child = execa(
      process.execPath,
      [CLI, 'bench', '--out', out, '--modes', 'mps', '--workloads', 'infer', '--rounds', '50', '--window-ms', '300'],
      { reject: false },
    );
    while ((runOnDisk(out)?.trials.length ?? 0) < 3) await sleep(200);
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    const run = await loadRun(out);
    expect(run.status).toBe('interrupted');
    expect(run.trials.length).toBeGreaterThanOrEqual(3);
    expect(run.modes[0]?.mps?.shutdown).toBe('quit');
    expect(await liveMpsProcesses()).toEqual([]);
    const ps = await psReport(`after SIGINT in the MPS arm (${run.trials.length} trials kept)`);
    expect(ps).not.toMatch(/workloads\/infer\.py/);
  });

  it('kill -9 in the MPS arm, then --resume: workloads exit on their own, nothing lost or duplicated, nothing left', async () => {
    const out = path.join(tempDir(), 'run');
    const args = [
      'bench',
      '--out',
      out,
      '--modes',
      'mps',
      '--workloads',
      'infer',
      '--rounds',
      '6',
      '--max-rounds',
      '6',
      '--window-ms',
      '300',
      '--quiet',
    ];
    const child = execa(process.execPath, [CLI, ...args], { reject: false });
    while ((runOnDisk(out)?.trials.length ?? 0) < 4) await sleep(200);
    child.kill('SIGKILL');
    await child;
    const kept = runOnDisk(out)?.trials ?? [];
    await sleep(3000);
    const psAfterKill = await psReport(`after kill -9 of the harness (${kept.length} trials on disk)`);
    expect(psAfterKill).not.toMatch(/workloads\/infer\.py/);
    const resumed = await gpuCli(['bench', '--resume', out, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    const ids = run.trials.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(18);
    expect(run.trials.slice(0, kept.length)).toEqual(kept);
    expect(run.resumes).toEqual([{ at: expect.any(String), trialsKept: kept.length }]);
    expect(await liveMpsProcesses()).toEqual([]);
    console.log(`resume: ${kept.length} trials kept, ${ids.length} in the end; warnings: ${run.warnings.join(' | ')}`);
    await psReport('after --resume');
  });

  it('kill -9 while the MPS daemon starts, then --resume: the daemon is found through run.json and quit, nothing left', async () => {
    const out = path.join(tempDir(), 'run');
    // The real daemon answers within milliseconds. A shim before it on PATH starts the real one and
    // then holds the harness in its start-up wait for 3 s: long enough to kill it there, every time.
    const real = String((await execa('which', ['nvidia-cuda-mps-control'])).stdout).trim();
    const shims = tempDir('gpushare-shim-');
    writeFileSync(
      path.join(shims, 'nvidia-cuda-mps-control'),
      `#!/bin/sh\n"${real}" "$@"\nrc=$?\nif [ "$1" = "-d" ]; then sleep 3; fi\nexit $rc\n`,
      { mode: 0o755 },
    );
    const env = { PATH: `${shims}${path.delimiter}${process.env.PATH ?? ''}` };
    const child = execa(
      process.execPath,
      [
        CLI,
        'bench',
        '--out',
        out,
        '--modes',
        'mps',
        '--workloads',
        'spin',
        '--rounds',
        '6',
        '--max-rounds',
        '6',
        '--window-ms',
        '200',
        '--quiet',
      ],
      { reject: false, env },
    );
    const deadline = Date.now() + 120_000;
    while (!(runOnDisk(out)?.modes[0]?.mps?.shutdown === 'starting' && (await liveMpsProcesses()).length > 0)) {
      if (Date.now() > deadline) throw new Error('did not catch the MPS daemon while it started');
      await sleep(20);
    }
    child.kill('SIGKILL');
    await child;
    await sleep(1000);
    const psAfterKill = await psReport('after kill -9 during MPS start');
    expect(psAfterKill).toMatch(/ nvidia-cuda-mps /);
    const resumed = await gpuCli(['bench', '--resume', out, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    expect(await liveMpsProcesses()).toEqual([]);
    expect(run.warnings.some((w) => /left by the interrupted harness: (quit|killed)/.test(w))).toBe(true);
    console.log(
      `kill -9 during MPS start: MPS processes right after the kill: ${psAfterKill.split('\n').filter((l) => / nvidia-cuda-mps /.test(l)).length}; warnings after resume: ${run.warnings.join(' | ')}`,
    );
    await psReport('after --resume after kill -9 during MPS start');
  });

  it('two benches into one directory: the second refuses while the first runs', async () => {
    const out = path.join(tempDir(), 'run');
    // 30 rounds (about 30 s): the first must still hold the lock when the second, a fresh Node process, reaches it.
    const first = execa(
      process.execPath,
      [
        CLI,
        'bench',
        '--out',
        out,
        '--modes',
        'timeslice',
        '--workloads',
        'spin',
        '--rounds',
        '30',
        '--max-rounds',
        '30',
        '--quiet',
      ],
      { reject: false },
    );
    while ((runOnDisk(out)?.trials.length ?? 0) < 1) await sleep(100);
    // --allow-busy: the first bench keeps the GPU busy, and the lock, not the busy check, must refuse.
    const second = await gpuCli([
      'bench',
      '--out',
      out,
      '--modes',
      'timeslice',
      '--workloads',
      'spin',
      '--quiet',
      '--allow-busy',
    ]);
    console.log(`second bench into ${out}: exit ${second.exitCode}: ${String(second.stderr).trim()}`);
    expect(second.exitCode).toBe(2);
    expect(String(second.stderr).trim().split('\n')).toHaveLength(1);
    expect(String(second.stderr)).toContain('is in use by another gpushare (pid');
    const result = await first;
    expect(result.exitCode).toBe(0);
    expect((await loadRun(out)).status).toBe('complete');
  });

  it('the generated mps-start.sh / mps-stop.sh run for real (compute mode left alone): up, answering, then gone', async () => {
    const out = path.join(tempDir(), 'artifacts');
    expect((await gpuCli(['artifacts', '--gpu-model', 'H100-80GB', '--out', out])).exitCode).toBe(0);
    const env = {
      CUDA_MPS_PIPE_DIRECTORY: path.join(tempDir(), 'pipe'),
      CUDA_MPS_LOG_DIRECTORY: path.join(tempDir(), 'log'),
    };
    const before = await liveMpsProcesses();
    const start = await execa(path.join(out, 'gpushare-mps-start.sh'), ['--skip-compute-mode'], { env, reject: false });
    expect([start.exitCode, String(start.stderr)]).toEqual([0, '']);
    const answer = await execa('nvidia-cuda-mps-control', [], { env, input: 'get_server_list\n', reject: false });
    expect(answer.exitCode).toBe(0);
    expect((await liveMpsProcesses()).length).toBeGreaterThan(before.length);
    const stop = await execa(path.join(out, 'gpushare-mps-stop.sh'), ['--skip-compute-mode'], { env, reject: false });
    expect([stop.exitCode, String(stop.stdout).trim()]).toEqual([0, 'MPS control daemon stopped']);
    await sleep(500);
    expect(await liveMpsProcesses()).toEqual(before);
    await psReport('after the generated MPS scripts');
  });

  it('a short real run of every mode writes a valid run', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await gpuCli([
      'bench',
      '--out',
      out,
      '--rounds',
      '6',
      '--max-rounds',
      '6',
      '--window-ms',
      '200',
      '--workloads',
      'spin',
      '--quiet',
    ]);
    expect(result.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    expect(run.modes.find((m) => m.mode === 'mig')?.status).toMatch(/ran|skipped/);
    expect(await liveMpsProcesses()).toEqual([]);
    await psReport('after a normal run');
  });
});
