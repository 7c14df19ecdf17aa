import { spawn } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { type MpsDaemon, parseControlPid, startMpsDaemon } from '../../harness/system/mps/daemon.js';
import { prepareMpsDirectory } from '../../harness/system/mps/ownership.js';
import {
  killMpsProcessesSettledSync,
  listPipeProcessesSync,
  mpsProcessesOfSync,
} from '../../harness/system/mps/pipe-processes.js';
import { isRunning, readProcess } from '../../harness/system/proc/process-table.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { fakePath, fixture, until } from '../helpers.js';

const savedPath = process.env.PATH;
const started: MpsDaemon[] = [];
const options = { visibleDevices: 'GPU-test', startTimeoutMs: 3000, quitTimeoutMs: 1000 };

async function start(behaviour: string) {
  process.env.FAKE_MPS = behaviour;
  const result = await startMpsDaemon(execaRunner, systemClock, options);
  if (result.ok) started.push(result.daemon);
  return result;
}

beforeAll(() => {
  process.env.PATH = fakePath();
});
afterEach(async () => {
  for (const daemon of started.splice(0)) {
    await daemon.stop();
    await daemon.removeDirectory();
  }
  delete process.env.FAKE_MPS;
});
afterAll(() => {
  process.env.PATH = savedPath;
});

describe('MPS control daemon lifecycle (fake nvidia-cuda-mps-control)', () => {
  it('reads the control PID from a real control.log', () => {
    expect(parseControlPid(fixture('mps-control.log'))).toBe(574);
  });

  it('starts in private 0700 directories, answers, reports its server, quits and is gone', async () => {
    const result = await start('ok');
    if (!result.ok) throw new Error(result.reason);
    const { daemon } = result;
    for (const dir of [daemon.env.CUDA_MPS_PIPE_DIRECTORY, daemon.env.CUDA_MPS_LOG_DIRECTORY]) {
      expect(statSync(dir as string).mode & 0o777).toBe(0o700);
    }
    expect(daemon.controlPid).not.toBeNull();
    expect((await readProcess(daemon.controlPid as number))?.comm).toBe('nvidia-cuda-mps');
    const servers = await daemon.serverPids();
    expect(servers).toHaveLength(1);
    expect(await daemon.stop()).toBe('quit');
    expect(await isRunning(daemon.controlPid as number)).toBe(false);
    expect(await isRunning(servers[0] as number)).toBe(false);
    const logs = await daemon.logs();
    expect(logs.find((l) => l.name === 'control.log')?.content).toMatch(/Starting control daemon[\s\S]*Cmd:quit/);
  });

  it('kills by PID a daemon that will not quit', async () => {
    const result = await start('refuse-quit');
    if (!result.ok) throw new Error(result.reason);
    const servers = await result.daemon.serverPids();
    const how = await result.daemon.stop();
    expect(how).toMatch(/^killed by PID \(\d+(, \d+)?\) after quit did not finish within 1000 ms$/);
    expect(await isRunning(result.daemon.controlPid as number)).toBe(false);
    expect(await isRunning(servers[0] as number)).toBe(false);
  });

  it('reports a daemon that dies at start, with its log', async () => {
    const result = await start('crash');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe('the MPS daemon did not answer get_server_list within 3000 ms');
    expect(result.logs[0]?.content).toContain('Starting control daemon');
  });

  it('reports a control binary that refuses to start', async () => {
    const result = await start('no-start');
    expect(result).toMatchObject({
      ok: false,
      reason: 'nvidia-cuda-mps-control -d failed (exited with 1: An instance of this daemon is already running)',
    });
  });

  it('never touches a daemon it did not start', async () => {
    const other = await start('ok');
    const ours = await start('ok');
    if (!other.ok || !ours.ok) throw new Error('start failed');
    expect(other.daemon.env.CUDA_MPS_PIPE_DIRECTORY).not.toBe(ours.daemon.env.CUDA_MPS_PIPE_DIRECTORY);
    await ours.daemon.stop();
    expect(await isRunning(ours.daemon.controlPid as number)).toBe(false);
    expect(await isRunning(other.daemon.controlPid as number)).toBe(true);
  });

  it('an interrupted start kills the daemon that does not answer yet, its server too, and removes its directory', async () => {
    process.env.FAKE_MPS = 'slow-start';
    const prepared = await prepareMpsDirectory('run-a');
    const controller = new AbortController();
    const starting = startMpsDaemon(
      execaRunner,
      systemClock,
      { ...options, startTimeoutMs: 60_000, signal: controller.signal },
      prepared,
    );
    // Both processes are up (the server logged), and the daemon does not answer for a minute.
    await until(() => mpsProcessesOfSync(prepared.pipeDirectory).length === 2, 15_000, 'the daemon and its server');
    controller.abort('SIGINT');
    const result = await starting;
    expect(result).toMatchObject({
      ok: false,
      interrupted: true,
      reason: expect.stringMatching(/^interrupted while the MPS daemon started \(killed PID \d+, \d+\)$/),
    });
    expect(mpsProcessesOfSync(prepared.pipeDirectory)).toEqual([]);
    expect(existsSync(prepared.root)).toBe(false);
  });

  it('kills by pipe directory: the daemon and server of that directory, and nothing of another', async () => {
    const other = await start('ok');
    const ours = await start('ok');
    if (!other.ok || !ours.ok) throw new Error('start failed');
    const pipe = ours.daemon.env.CUDA_MPS_PIPE_DIRECTORY as string;
    const servers = await ours.daemon.serverPids();
    const killed = killMpsProcessesSettledSync(pipe);
    expect(killed.sort()).toEqual([ours.daemon.controlPid as number, ...servers].sort());
    expect(mpsProcessesOfSync(pipe)).toEqual([]);
    expect(await isRunning(other.daemon.controlPid as number)).toBe(true);
    expect(mpsProcessesOfSync(other.daemon.env.CUDA_MPS_PIPE_DIRECTORY as string)).toHaveLength(2);
  });

  it('does not stop at one empty scan: a process that names the directory a moment later is killed too', async () => {
    const ours = await prepareMpsDirectory('run-a');
    // The shell does not name the directory; 0.2 s later the sleep it becomes does (as a process in exec
    // is unseen for a moment, then seen).
    const late = spawn('sh', ['-c', `sleep 0.2; exec env CUDA_MPS_PIPE_DIRECTORY=${ours.pipeDirectory} sleep 60`], {
      stdio: 'ignore',
    });
    try {
      await until(async () => await isRunning(late.pid as number), 10_000, 'the shell to run');
      expect(killMpsProcessesSettledSync(ours.pipeDirectory, 100, 1500)).toEqual([late.pid]);
      await until(async () => !(await isRunning(late.pid as number)), 10_000, 'the late one to be gone');
    } finally {
      late.kill('SIGKILL');
      rmSync(ours.root, { recursive: true, force: true });
    }
  });

  it("at the deadline kills what still names the run's private pipe directory unnamed (a daemon slow to name itself), and nothing naming another", async () => {
    const ours = await prepareMpsDirectory('run-a');
    const theirs = await prepareMpsDirectory('run-b');
    const spawnNaming = (pipe: string) =>
      spawn('sleep', ['60'], { env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: pipe }, stdio: 'ignore' });
    const slow = spawnNaming(ours.pipeDirectory);
    const other = spawnNaming(theirs.pipeDirectory);
    try {
      await until(
        () =>
          listPipeProcessesSync().some((p) => p.pid === slow.pid) &&
          listPipeProcessesSync().some((p) => p.pid === other.pid),
        10_000,
        'the two processes to name their pipe directories',
      );
      expect(killMpsProcessesSettledSync(ours.pipeDirectory, 100)).toEqual([slow.pid]);
      await until(async () => !(await isRunning(slow.pid as number)), 10_000, 'the slow one to be gone');
      expect(await isRunning(other.pid as number)).toBe(true);
    } finally {
      slow.kill('SIGKILL');
      other.kill('SIGKILL');
      rmSync(ours.root, { recursive: true, force: true });
      rmSync(theirs.root, { recursive: true, force: true });
    }
  });
});
