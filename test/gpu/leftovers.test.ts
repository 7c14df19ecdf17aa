/**
 * GPU tests (npm run test:gpu, on the GPU machine): probe and capacity killed with -9 while their MPS
 * daemon runs leave a daemon that doctor names as gpushare's own, and --resume stops it and finishes
 * the run; `ps` afterwards shows no MPS process (a `<defunct>` entry is an exited one, not running).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { findProcesses } from '../../harness/system/proc/process-table.js';
import { CLI, joined, tempDir } from '../helpers.js';
import { gpuCli, psReport } from './processes.js';

/** MPS processes still running (zombies excluded: an exited daemon waits for init to reap it). */
async function runningMps(): Promise<number[]> {
  return (await findProcesses('nvidia-cuda-mps')).filter((p) => p.state !== 'Z').map((p) => p.pid);
}

function record<T>(file: string): T | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

interface WithDaemons {
  status: string;
  daemons?: Array<{ shutdown: string }>;
}

/** Starts `args`, waits until its record lists a running MPS daemon (and `also` holds), then kill -9. */
async function killWhileDaemonRuns(args: string[], file: string, also: (r: WithDaemons) => boolean): Promise<void> {
  const child = execa(process.execPath, [CLI, ...args], { reject: false });
  const deadline = Date.now() + 240_000;
  for (;;) {
    const r = record<WithDaemons>(file);
    if (r?.daemons?.some((d) => d.shutdown === 'running') && also(r)) break;
    if (Date.now() > deadline) throw new Error(`no running MPS daemon recorded in ${file} within 240 s`);
    await sleep(200);
  }
  await sleep(1000);
  child.kill('SIGKILL');
  await child;
}

describe('kill -9 while the MPS daemon runs, then --resume, on a real GPU', () => {
  it('probe: doctor names the leftover daemon, --resume stops it and finishes, nothing left running', async () => {
    const out = path.join(tempDir(), 'probe');
    await killWhileDaemonRuns(['probe', '--probes', 'sm-cap', '--out', out], path.join(out, 'probe.json'), () => true);
    const afterKill = await psReport('right after kill -9 of probe');
    expect(afterKill).toMatch(/nvidia-cuda-mps/);
    const doctor = await gpuCli(['doctor']);
    console.log(`doctor after the kill:\n${doctor.stdout}`);
    expect(joined(doctor.stdout)).toContain(`gpushare probe --resume ${out}`);
    const resumed = await gpuCli(['probe', '--resume', out]);
    console.log(`probe --resume: exit ${resumed.exitCode}\n${resumed.stderr}`);
    expect(resumed.exitCode).toBe(0);
    const run = record<WithDaemons & { probes: Array<{ probe: string; status: string }> }>(
      path.join(out, 'probe.json'),
    );
    expect(run?.status).toBe('complete');
    expect(run?.probes.map((p) => `${p.probe}:${p.status}`)).toEqual(['sm-cap:measured']);
    await sleep(2000);
    await psReport('after probe --resume');
    expect(await runningMps()).toEqual([]);
  });

  it('capacity: doctor names the leftover daemon, --resume stops it and finishes, nothing left running', async () => {
    const out = path.join(tempDir(), 'capacity');
    const args = ['capacity', '--slo-p99-ms', '10', '--modes', 'mps', '--clients', '1,2', '--max-steps', '3'];
    const file = path.join(out, 'capacity.json');
    await killWhileDaemonRuns([...args, '--window-ms', '500', '--out', out], file, (r) =>
      Boolean((r as { points?: Array<{ steps: unknown[] }> }).points?.[0]?.steps.length),
    );
    await psReport('right after kill -9 of capacity');
    const doctor = await gpuCli(['doctor']);
    console.log(`doctor after the kill:\n${doctor.stdout}`);
    expect(joined(doctor.stdout)).toContain(`gpushare capacity --resume ${out}`);
    const resumed = await gpuCli(['capacity', '--resume', out]);
    console.log(`capacity --resume: exit ${resumed.exitCode}\n${resumed.stdout}\n${resumed.stderr}`);
    expect([0, 3]).toContain(resumed.exitCode);
    const run = record<WithDaemons & { points: Array<{ mode: string; clients: number }> }>(file);
    expect(run?.status).toBe('complete');
    expect(run?.points.map((p) => `${p.mode}×${p.clients}`).sort()).toEqual(['mps×1', 'mps×2']);
    await sleep(2000);
    await psReport('after capacity --resume');
    expect(await runningMps()).toEqual([]);
  });
});
