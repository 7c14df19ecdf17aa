/** Interrupted, killed, busy and bad-input runs, on the fakes: nothing measured is lost, nothing is left behind. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { cli, editedCopy, expectOneLineError, QUICK, ROOT, runOnDisk, tempDir, unfolded, until } from '../helpers.js';

async function untilTrials(out: string, n: number): Promise<void> {
  while ((runOnDisk(out)?.trials.length ?? 0) < n) await sleep(50);
}

describe('kill -9 and --resume', () => {
  it('continues after the last finished trial: nothing lost, nothing twice, the orphan MPS daemon quit', async () => {
    const out = path.join(tempDir(), 'run');
    const args = [
      'bench',
      '--out',
      out,
      '--modes',
      'timeslice,mps',
      '--workloads',
      'gemm',
      '--rounds',
      '6',
      '--max-rounds',
      '6',
      '--window-ms',
      '100',
    ];
    const child = cli(args);
    // Wait until the MPS arm is under way: the daemon is on disk and trials of it are done.
    while (!(runOnDisk(out)?.trials.some((t) => t.comparisonId.startsWith('mps/')) ?? false)) await sleep(50);
    child.kill('SIGKILL');
    await child;
    const killed = runOnDisk(out) as Run;
    const orphan = killed.modes.find((m) => m.mode === 'mps')?.mps;
    expect(orphan?.shutdown).toBe('running');
    expect(await isRunning(orphan?.controlPid as number)).toBe(true);
    // Workloads see their stdin close and exit by themselves.
    const workloads = [
      ...new Set(killed.trials.flatMap((t) => ('clients' in t ? t.clients.map((c) => c.pid as number) : []))),
    ];
    await until(
      async () => (await Promise.all(workloads.map((pid) => isRunning(pid)))).every((running) => !running),
      15_000,
      'the workloads to exit',
    );

    const resumed = await cli(['bench', '--resume', out, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    const ids = run.trials.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(2 * 4 * 6);
    expect(run.trials.slice(0, killed.trials.length)).toEqual(killed.trials);
    expect(run.resumes).toEqual([{ at: expect.any(String), trialsKept: killed.trials.length }]);
    expect(await isRunning(orphan?.controlPid as number)).toBe(false);
    expect(run.warnings).toContain(`MPS daemon ${orphan?.controlPid} left by the interrupted harness: quit on resume`);
    expect(readdirSync(path.join(out, 'mps'))).toEqual(
      expect.arrayContaining(['interrupted-control.log', 'control.log']),
    );
    expect(run.samples.length).toBeGreaterThan(killed.samples.length);
  });

  it('refuses to resume a complete run, with settings of its own, or pinned to CPUs it may no longer use', async () => {
    const out = path.join(tempDir(), 'run');
    await cli(['bench', '--out', out, '--modes', 'streams', '--workloads', 'spin', ...QUICK]);
    const complete = await cli(['bench', '--resume', out]);
    expect(complete.exitCode).toBe(2);
    expectOneLineError(complete.stderr, `${out} holds a complete run: there is nothing to resume`);
    const clash = await cli(['bench', '--resume', out, '--modes', 'mps']);
    expect(clash.exitCode).toBe(2);
    expectOneLineError(clash.stderr, '--resume continues a run with its own settings: drop --modes');
    // Pinned (--cpu-pin auto) to a CPU this process may not use now (a pod restarted on another cpuset).
    const elsewhere = editedCopy(out, (run) => {
      run.status = 'interrupted';
      for (const c of run.plan) c.clientEnv = c.clientEnv.map((env) => ({ ...env, GPUSHARE_CPUS: '4095' }));
    });
    const lost = await cli(['bench', '--resume', elsewhere]);
    expect(lost.exitCode).toBe(2);
    expectOneLineError(
      lost.stderr,
      `cannot resume ${elsewhere} here: its clients are pinned (--cpu-pin auto) to CPUs 4095, which this process may not use`,
    );
  });
});

describe('signals', () => {
  it('a second Ctrl-C forces the exit and still kills every child', async () => {
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
      '300',
      '--exit-timeout-s',
      '30',
    ]);
    await untilTrials(out, 2);
    const before = runOnDisk(out) as Run;
    child.kill('SIGINT');
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    const pids = [
      ...new Set(before.trials.flatMap((t) => ('clients' in t ? t.clients.map((c) => c.pid as number) : []))),
    ];
    await until(
      async () => (await Promise.all(pids.map((pid) => isRunning(pid)))).every((running) => !running),
      15_000,
      'the workloads to exit',
    );
    const mps = before.modes[0]?.mps;
    expect(await isRunning(mps?.controlPid as number)).toBe(false);
    expect((await loadRun(out)).trials.length).toBeGreaterThanOrEqual(2);
  });
});

describe('a busy GPU', () => {
  it('is refused with the evidence', async () => {
    const result = await cli(['bench', '--out', path.join(tempDir(), 'run'), ...QUICK], { FAKE_SMI: 'busy' });
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      'GPU 0 is busy (compute process 4242 (python3, 30000 MiB); utilization 97%; 30000 MiB of memory in use): wait until it is idle, or pass --allow-busy',
    );
  });

  it('with --allow-busy is measured, marked contaminated, and the gate trusts none of it', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(
      ['bench', '--out', out, '--modes', 'timeslice', '--workloads', 'gemm', '--allow-busy', ...QUICK],
      { FAKE_SMI: 'busy' },
    );
    // The graded ratio is invalid, so bench, the CI gate on GPU pods, exits 3 too.
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain(
      'gpushare: timeslice/gemm/slowdown is invalid: the GPU was busy when the run started',
    );
    expect((await loadRun(out)).contamination).toHaveLength(3);
    const gate = await cli(['gate', out]);
    expect(gate.exitCode).toBe(3);
    expect(unfolded(gate.stdout)).toContain(
      'timeslice/gemm/slowdown: invalid: the GPU was busy when the run started (compute process 4242',
    );
  });
});

describe('bad input and bad environments: exit 2, one line, nothing measured lost', () => {
  it('a workload line of megabytes fails its trial without eating memory', async () => {
    const out = path.join(tempDir(), 'run');
    await cli(['bench', '--out', out, '--modes', 'timeslice', '--workloads', 'gemm', ...QUICK], {
      FAKE_WORKLOAD: 'huge-line',
      FAKE_WORKLOAD_CLIENT: '0',
    });
    const failed = (await loadRun(out)).trials.find((t) => t.status === 'failed');
    expect(failed?.status === 'failed' && failed.reason).toBe(
      `workload "gemm" (client 0) printed a line over 1 MiB starting "{"event":"result","pad":"${'x'.repeat(55)}…"`,
    );
  });

  it('garbled nvidia-smi output', async () => {
    const result = await cli(['bench', '--out', path.join(tempDir(), 'run')], { FAKE_SMI: 'garbled-query' });
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'nvidia-smi --query-gpu printed an unreadable line: expected 12 fields, got 3');
  });

  it('an output directory that cannot be written', async () => {
    const file = path.join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const result = await cli(['bench', '--out', path.join(file, 'run'), ...QUICK]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `cannot write the output directory ${file}/run (ENOTDIR): choose another with --out`,
    );
  });

  it('an unreadable or invalid thresholds file given to bench', async () => {
    const missing = await cli(['bench', '--config', '/nonexistent.yaml', ...QUICK]);
    expect(missing.exitCode).toBe(2);
    expectOneLineError(missing.stderr, 'cannot read the thresholds file /nonexistent.yaml (ENOENT)');
    const file = path.join(tempDir(), 't.json');
    writeFileSync(file, '{"thresholds": {"x": {"min": "1"}}}');
    const invalid = await cli(['bench', '--config', file, ...QUICK]);
    expect(invalid.exitCode).toBe(2);
    expectOneLineError(invalid.stderr, 'thresholds.x.min: Invalid input: expected number, received string (got "1")');
  });
});

describe('security', () => {
  it('no harness code starts a shell or runs a command string', () => {
    const files = readdirSync(path.join(ROOT, 'harness'), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    );
    // Only execa's argv form: no shell option, no command-string or template APIs, no raw child_process.
    const offenders = files.filter((f) =>
      /shell\s*:|child_process|execaCommand|import \{[^}]*\$[^}]*\} from 'execa'/.test(
        readFileSync(path.join(ROOT, 'harness', f), 'utf8'),
      ),
    );
    expect(offenders).toEqual([]);
  });
});
