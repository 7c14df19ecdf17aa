/**
 * gpushare deletes and kills only what it can prove it created, and no run is lost: an MPS daemon
 * killed while starting, forged or stale MPS records, a locked run directory, SIGHUP/SIGQUIT, a
 * forced exit, a foreign --out, a FIFO for run.json and stale temp files. All on the fakes.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { prepareMpsDirectory } from '../../harness/system/mps/ownership.js';
import { findProcesses, isRunning, type ProcessInfo, readEnviron } from '../../harness/system/proc/process-table.js';
import { cli, editedCopy, expectOneLineError, fakePath, QUICK, runOnDisk, tempDir, until } from '../helpers.js';

/** The live (fake) MPS processes started for `pipeDirectory`. */
async function mpsProcessesFor(pipeDirectory: string): Promise<ProcessInfo[]> {
  const found: ProcessInfo[] = [];
  for (const p of await findProcesses('nvidia-cuda-mps'))
    if ((await readEnviron(p.pid))?.includes(`CUDA_MPS_PIPE_DIRECTORY=${pipeDirectory}`)) found.push(p);
  return found;
}

const mpsOf = (run: Run | null) => run?.modes.find((m) => m.mode === 'mps')?.mps ?? null;

/** Daemons the tests start themselves, as someone else's would be: quit at the end. */
const foreign: Array<{ pipe: string; log: string }> = [];
afterAll(async () => {
  for (const d of foreign) {
    await execa('nvidia-cuda-mps-control', [], {
      input: 'quit\n',
      reject: false,
      env: { PATH: fakePath(), CUDA_MPS_PIPE_DIRECTORY: d.pipe, CUDA_MPS_LOG_DIRECTORY: d.log },
    });
  }
});

/** Starts a fake MPS daemon that gpushare did not start, and returns its control PID. */
async function startForeignDaemon(): Promise<number> {
  const root = tempDir('someone-elses-mps-');
  const d = { pipe: path.join(root, 'pipe'), log: path.join(root, 'log') };
  mkdirSync(d.pipe);
  mkdirSync(d.log);
  foreign.push(d);
  await execa('nvidia-cuda-mps-control', ['-d'], {
    env: { PATH: fakePath(), CUDA_MPS_PIPE_DIRECTORY: d.pipe, CUDA_MPS_LOG_DIRECTORY: d.log },
  });
  let pid = 0;
  await until(
    () => {
      const log = existsSync(path.join(d.log, 'control.log'))
        ? readFileSync(path.join(d.log, 'control.log'), 'utf8')
        : '';
      pid = Number(/Control\s+(\d+)\]/.exec(log)?.[1] ?? 0);
      return pid > 0;
    },
    15_000,
    'the foreign daemon to log its PID',
  );
  return pid;
}

/** A finished MPS run, made resumable again: the base of the forged-record tests. */
let finishedMpsRun: string | null = null;
async function resumableMpsRun(edit: (run: Run) => void): Promise<string> {
  if (finishedMpsRun === null) {
    const out = path.join(tempDir(), 'run');
    const done = await cli(['bench', '--out', out, '--modes', 'mps', '--workloads', 'gemm', ...QUICK]);
    expect(done.exitCode).toBe(0);
    finishedMpsRun = out;
  }
  return editedCopy(finishedMpsRun, (run) => {
    run.status = 'interrupted';
    edit(run);
  });
}

describe('kill -9 while the MPS daemon starts', () => {
  it('records the private directory before the daemon runs, so --resume finds and stops it', async () => {
    const out = path.join(tempDir(), 'run');
    const child = cli(['bench', '--out', out, '--modes', 'mps', '--workloads', 'gemm', ...QUICK], {
      FAKE_MPS: 'slow-start',
    });
    let pipe = '';
    await until(
      async () => {
        const mps = mpsOf(runOnDisk(out));
        pipe = mps?.pipeDirectory ?? '';
        // Both the control daemon and its server are up, and neither answers yet.
        return mps?.shutdown === 'starting' && pipe !== '' && (await mpsProcessesFor(pipe)).length === 2;
      },
      30_000,
      'run.json to record the starting daemon',
    );
    child.kill('SIGKILL');
    await child;
    expect(readFileSync(path.join(path.dirname(pipe), '.gpushare-mps'), 'utf8')).toContain(
      `"runId":"${runOnDisk(out)?.id}"`,
    );
    expect(await mpsProcessesFor(pipe)).toHaveLength(2);

    const resumed = await cli(['bench', '--resume', out, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    expect(await mpsProcessesFor(pipe)).toEqual([]);
    expect(existsSync(path.dirname(pipe))).toBe(false);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    expect(run.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^MPS daemon \d+ left by the interrupted harness: killed by PID \(\d+, \d+\) on resume$/),
      ]),
    );
    expect(readdirSync(path.join(out, 'mps'))).toContain('interrupted-control.log');
    // The killed harness's lock was stale: taken over, and said so.
    expect(run.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^took over the stale lock of gpushare pid \d+ \(that process is gone\)$/),
      ]),
    );
    expect(resumed.stderr).toMatch(/gpushare: warning: took over the stale lock of gpushare pid \d+/);
  });
});

describe('--resume acts only on what it can prove is its own', () => {
  it("leaves a recorded directory alone that is not gpushare's, and the daemon whose PID was recorded", async () => {
    const victim = path.join(tempDir(), 'precious');
    mkdirSync(path.join(victim, 'pipe'), { recursive: true });
    writeFileSync(path.join(victim, 'keep.txt'), "the user's");
    const pid = await startForeignDaemon();
    const dir = await resumableMpsRun((run) => {
      const mps = run.modes.find((m) => m.mode === 'mps');
      if (mps)
        mps.mps = {
          controlPid: pid,
          serverPids: [],
          logFiles: [],
          pipeDirectory: path.join(victim, 'pipe'),
          shutdown: 'running',
        };
    });
    const resumed = await cli(['bench', '--resume', dir, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    expect(readFileSync(path.join(victim, 'keep.txt'), 'utf8')).toBe("the user's");
    expect(await isRunning(pid)).toBe(true);
    expect((await loadRun(dir)).warnings).toContain(
      `${victim}/pipe is not provably gpushare's (${victim}/pipe is not under gpushare's ${path.join(os.tmpdir(), 'gpushare-mps-XXXXXX')}/pipe): nothing there was touched`,
    );
  });

  it('does not kill a recorded PID that now belongs to an MPS daemon of someone else (PID reuse)', async () => {
    const pid = await startForeignDaemon();
    const dir = await resumableMpsRun((run) => {
      const mps = run.modes.find((m) => m.mode === 'mps');
      if (mps) mps.mps = { controlPid: pid, serverPids: [], logFiles: [], pipeDirectory: '', shutdown: 'running' };
    });
    // A genuine private directory of this run, with its marker: the PID is what is wrong.
    const run = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as Run;
    const prepared = await prepareMpsDirectory(run.id);
    const root = prepared.root;
    const mps = run.modes.find((m) => m.mode === 'mps')?.mps;
    if (mps) mps.pipeDirectory = prepared.pipeDirectory;
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify(run));

    const resumed = await cli(['bench', '--resume', dir, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    expect(await isRunning(pid)).toBe(true);
    expect(existsSync(root)).toBe(false);
    const warnings = (await loadRun(dir)).warnings;
    expect(warnings).toContain(
      `PID ${pid} left alone: its environment does not name ${prepared.pipeDirectory}, so it is not provably the daemon gpushare started`,
    );
    expect(warnings).toContain(
      `MPS daemon ${pid} left by the interrupted harness: none of its processes is running (a recorded PID belongs to another process now)`,
    );
  });

  it('leaves a gpushare-looking directory alone whose marker belongs to another run', async () => {
    const prepared = await prepareMpsDirectory('some-other-run');
    const dir = await resumableMpsRun((run) => {
      const mps = run.modes.find((m) => m.mode === 'mps');
      if (mps)
        mps.mps = {
          controlPid: null,
          serverPids: [],
          logFiles: [],
          pipeDirectory: prepared.pipeDirectory,
          shutdown: 'starting',
        };
    });
    const resumed = await cli(['bench', '--resume', dir, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    expect(existsSync(prepared.root)).toBe(true);
    expect((await loadRun(dir)).warnings.join('\n')).toContain(
      `.gpushare-mps belongs to run some-other-run, not ${(await loadRun(dir)).id}): nothing there was touched`,
    );
    rmSync(prepared.root, { recursive: true, force: true });
  });

  it('removes the temp files a harness killed mid-write left', async () => {
    const dir = await resumableMpsRun(() => undefined);
    for (const name of ['run.json.123456789', 'trials.csv.42', 'samples.csv.7'])
      writeFileSync(path.join(dir, name), '{"half');
    writeFileSync(path.join(dir, 'notes.txt.1'), "the user's");
    const resumed = await cli(['bench', '--resume', dir, '--quiet']);
    expect(resumed.exitCode).toBe(0);
    expect(readdirSync(dir).filter((n) => /\.\d+$/.test(n))).toEqual(['notes.txt.1']);
  });
});

describe('one harness per run directory', () => {
  it('refuses a second bench into the same --out, and a --resume of a run whose harness is alive', async () => {
    const out = path.join(tempDir(), 'run');
    const first = cli([
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
    await until(
      () => (runOnDisk(out)?.trials.length ?? 0) >= 1 && mpsOf(runOnDisk(out))?.shutdown === 'running',
      30_000,
      'the first run to be in its MPS arm',
    );
    const daemon = mpsOf(runOnDisk(out))?.controlPid as number;

    const second = await cli(['bench', '--out', out, '--modes', 'timeslice', ...QUICK]);
    expect(second.exitCode).toBe(2);
    expectOneLineError(
      second.stderr,
      `${out} is in use by another gpushare (pid ${first.pid}): wait for it to finish, or stop it first`,
    );
    const resume = await cli(['bench', '--resume', out]);
    expect(resume.exitCode).toBe(2);
    expectOneLineError(resume.stderr, `${out} is in use by another gpushare (pid ${first.pid})`);
    // The live harness's daemon was not quit by the refused resume.
    expect(await isRunning(daemon)).toBe(true);

    first.kill('SIGINT');
    expect((await first).exitCode).toBe(130);
    expect(existsSync(path.join(out, '.lock'))).toBe(false);
    expect((await loadRun(out)).status).toBe('interrupted');
  });
});

describe('SIGHUP, SIGQUIT and a forced exit in the MPS arm', () => {
  it.each([
    ['SIGHUP', 129],
    ['SIGQUIT', 131],
  ] as const)('%s is handled like SIGTERM: run interrupted, daemon quit, exit %i', async (signal, code) => {
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
    await until(() => (runOnDisk(out)?.trials.length ?? 0) >= 2, 30_000, 'two finished trials');
    child.kill(signal);
    const result = await child;
    expect(result.exitCode).toBe(code);
    const run = await loadRun(out);
    expect(run.status).toBe('interrupted');
    const mps = mpsOf(run);
    expect(mps?.shutdown).toBe('quit');
    expect(await isRunning(mps?.controlPid as number)).toBe(false);
    expect(await mpsProcessesFor(mps?.pipeDirectory as string)).toEqual([]);
  });

  it('a second Ctrl-C still saves the run as interrupted and keeps the MPS logs in the run directory', async () => {
    const out = path.join(tempDir(), 'run');
    // A daemon that ignores quit keeps the clean shutdown busy for 10 s: the later Ctrl-C forces it.
    const child = cli(
      [
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
      ],
      { FAKE_MPS: 'refuse-quit' },
    );
    await until(() => (runOnDisk(out)?.trials.length ?? 0) >= 2, 30_000, 'two finished trials');
    const pipe = mpsOf(runOnDisk(out))?.pipeDirectory as string;
    let exited = false;
    void child.finally(() => (exited = true));
    // Signals of one kind sent at once may arrive as one: Ctrl-C again until the harness is gone.
    await until(
      () => {
        if (!exited) child.kill('SIGINT');
        return exited;
      },
      30_000,
      'the forced exit',
    );
    expect((await child).exitCode).toBe(130);
    const run = await loadRun(out);
    expect(run.status).toBe('interrupted');
    expect(mpsOf(run)?.shutdown).toBe('killed by PID on a forced exit (a second SIGINT)');
    expect(mpsOf(run)?.logFiles).toContain('mps/control.log');
    expect(readFileSync(path.join(out, 'mps', 'control.log'), 'utf8')).toContain('Starting control daemon');
    expect(existsSync(path.dirname(pipe))).toBe(false);
    expect(existsSync(path.join(out, '.lock'))).toBe(false);
    await until(async () => (await mpsProcessesFor(pipe)).length === 0, 10_000, 'the killed daemon to be gone');
  });
});

describe('--out that is not a run directory', () => {
  it('refuses a non-empty directory that holds no run, and leaves its files alone', async () => {
    const out = tempDir();
    writeFileSync(path.join(out, 'trials.csv'), 'my,own,trials\n');
    const result = await cli(['bench', '--out', out, '--modes', 'streams', '--workloads', 'spin', ...QUICK]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${out} is not empty and holds no gpushare run (it has trials.csv): choose an empty or new directory with --out`,
    );
    expect(readdirSync(out)).toEqual(['trials.csv']);
    expect(readFileSync(path.join(out, 'trials.csv'), 'utf8')).toBe('my,own,trials\n');
  });

  it('refuses a blank --out (an empty one is refused earlier, by the CLI)', async () => {
    const result = await cli(['bench', '--out', '  ', '--modes', 'streams', '--workloads', 'spin', ...QUICK]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, '--out is empty: give the directory the run should go to');
  });
});

describe('a run.json that is not a regular file', () => {
  it('a FIFO is refused at once instead of blocking gate forever', async () => {
    const dir = tempDir();
    await execa('mkfifo', [path.join(dir, 'run.json')]);
    const result = await cli(['gate', dir], {}, { timeoutMs: 20_000 });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${dir}/run.json is not a regular file: give a run directory made by gpushare bench`,
    );
  });
});

describe('a workload child that calls setsid()', () => {
  /** Live processes whose environment holds `token`: every one is a descendant of this test's run. */
  async function withToken(token: string): Promise<number[]> {
    const pids: number[] = [];
    for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
      const environ = await readEnviron(Number(entry));
      if (environ?.includes(`GPUSHARE_TEST_TOKEN=${token}`) && (await isRunning(Number(entry))))
        pids.push(Number(entry));
    }
    return pids;
  }

  it('is killed with its workload instead of outliving the run', async () => {
    const token = `setsid-${process.pid}-${Date.now()}`;
    try {
      const result = await cli(
        ['bench', '--out', path.join(tempDir(), 'run'), '--modes', 'timeslice', '--workloads', 'gemm', ...QUICK],
        { FAKE_WORKLOAD: 'setsid-child', GPUSHARE_TEST_TOKEN: token },
      );
      expect(result.exitCode).toBe(0);
      await until(async () => (await withToken(token)).length === 0, 10_000, 'the setsid() children to be gone');
    } finally {
      for (const pid of await withToken(token)) process.kill(pid, 'SIGKILL');
    }
  });
});
