/**
 * `kill -9` of bench at every stage of prestarting leaves no process behind: held, importing (a
 * built-in or a custom command that never reaches gpushare's helper), stopped (SIGSTOP, by a user's
 * job control or a debugger) and switching. A process busy importing or switching never reads its stdin again,
 * and a stopped one cannot: only the harness's watchdog (system/proc/watchdog.ts) ends them.
 *
 * Prestarting needs spare cores: on a 2-core machine bench holds nothing. Each case therefore resumes a
 * run recorded on a host of more CPUs (its fingerprint edited): the scheduler sizes its prestarting by
 * the run's recorded host, so the real stages are reached here too.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { readProcess } from '../../harness/system/proc/process-table.js';
import { cli, FAKES, joined, ROOT, tempDir, until } from '../helpers.js';

const SHORT = ['--rounds', '2', '--max-rounds', '2', '--window-ms', '50', '--quiet'];
/**
 * A custom command that never imports gpushare's helper: prestarted (GPUSHARE_HOLD=1) it "imports" for
 * ever, else it becomes the simulator's gemm (by path: a pyenv shim puts the real python3 first on PATH).
 */
const SLOW_IMPORT_PY = `import os, sys, time
if os.environ.get('GPUSHARE_HOLD') == '1':
    with open(os.environ['STAGE_LOG'], 'a') as log:
        log.write('{"pid": %d, "stage": "importing"}\\n' % os.getpid())
    while True:
        time.sleep(3600)
os.execv(${JSON.stringify(process.execPath)}, ['node', ${JSON.stringify(path.join(FAKES, 'python3'))}, ${JSON.stringify(path.join(ROOT, 'workloads', 'gemm.py'))}])
`;

let builtin: string;
let custom: string[];
let customRun: string;

beforeAll(async () => {
  const dir = tempDir('gpushare-death-base-');
  builtin = path.join(dir, 'builtin');
  const made = await cli([
    'bench',
    '--out',
    builtin,
    '--modes',
    'timeslice',
    '--workloads',
    'gemm,infer',
    '--clients',
    '2,4',
    ...SHORT,
  ]);
  expect(made.exitCode, made.stderr).not.toBe(2);
  const script = path.join(dir, 'slow_import.py');
  writeFileSync(script, SLOW_IMPORT_PY);
  custom = ['python3', script];
  customRun = path.join(dir, 'custom');
  const madeCustom = await cli(
    ['bench', '--out', customRun, '--modes', 'timeslice', '--clients', '2,4', ...SHORT, '--', ...custom],
    { STAGE_LOG: path.join(dir, 'check.log') },
  );
  expect(madeCustom.exitCode, madeCustom.stderr).not.toBe(2);
}, 120_000);

/** A copy of `base` in a temp directory of its own, made interrupted before its first trial, on a host of `cpus` CPUs. */
function unstarted(base: string, cpus: number): { tmp: string; out: string } {
  const tmp = tempDir('gpushare-death-');
  const out = path.join(tmp, 'run');
  cpSync(base, out, { recursive: true });
  const file = path.join(out, 'run.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
  Object.assign(run, { status: 'interrupted', finishedAt: null, trials: [], stops: [], clientStarts: [] });
  run.fingerprint.host = { ...run.fingerprint.host, cpus, allowedCpus: [...Array(cpus).keys()], cpuQuota: null };
  writeFileSync(file, JSON.stringify(run));
  return { tmp, out };
}

/** The stages the fake workloads (FAKE_LOG) and the custom command (STAGE_LOG) reached: PIDs by stage. */
function stages(log: string): Map<string, number[]> {
  const found = new Map<string, number[]>();
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return found;
  }
  for (const line of text.split('\n')) {
    if (!line.endsWith('}')) continue; // a line still being written
    const entry = JSON.parse(line) as { pid: number; stage?: string };
    if (entry.stage !== undefined) found.set(entry.stage, [...(found.get(entry.stage) ?? []), entry.pid]);
  }
  return found;
}

/** Every live process started under `tmp` (its TMPDIR): workloads, the sampler, the watchdog. Read synchronously: quick on a loaded machine. */
function processesUnder(tmp: string): number[] {
  const ours: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (running(pid) && readOr(`/proc/${pid}/environ`).split('\0').includes(`TMPDIR=${tmp}`)) ours.push(pid);
  }
  return ours;
}

/** Whether `pid` exists and is not a zombie. */
function running(pid: number): boolean {
  const stat = readOr(`/proc/${pid}/stat`);
  return stat !== '' && !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Resumes `base` (made unstarted on `cpus` CPUs) with `env`, waits until `reached` holds of the
 * stages logged, kills the harness with -9 and expects every process it started to be gone.
 */
async function killAt(
  base: string,
  cpus: number,
  env: Record<string, string>,
  reached: (stages: Map<string, number[]>) => boolean | Promise<boolean>,
  what: string,
): Promise<void> {
  const { tmp, out } = unstarted(base, cpus);
  const log = path.join(tmp, 'stages.log');
  const harness = cli(['bench', '--resume', out], { TMPDIR: tmp, FAKE_LOG: log, STAGE_LOG: log, ...env });
  let exited = false;
  void harness.then(() => {
    exited = true;
  });
  try {
    await until(async () => exited || (await reached(stages(log))), 60_000, what);
    // At once: the stage may pass (a held process is told to start), and the run must not end first.
    harness.kill('SIGKILL');
    const killed = await harness;
    expect(killed.signal, `the harness ended before it was killed: ${killed.stderr}`).toBe('SIGKILL');
    const staged = [...stages(log).values()].flat();
    expect(staged.length).toBeGreaterThan(0);
    await until(() => processesUnder(tmp).length === 0, 15_000, 'every process of the killed harness to be gone').catch(
      (error: Error) => {
        const left = processesUnder(tmp).map(
          (pid) =>
            `${pid} ${readOr(`/proc/${pid}/stat`).split(' ').slice(2, 5).join(' ')} ${readOr(`/proc/${pid}/cmdline`).replaceAll('\0', ' ').slice(0, 120)}`,
        );
        throw new Error(`${error.message}; left: ${left.join(' | ')}`);
      },
    );
    expect(staged.filter(running)).toEqual([]);
  } finally {
    // A failed case leaves nothing running for the next.
    harness.kill('SIGKILL');
    for (const pid of processesUnder(tmp)) process.kill(pid, 'SIGKILL');
  }
}

describe('kill -9 of bench at every stage of prestarting leaves no process', () => {
  it('held: prestarted, imported, waiting to be told to start', async () => {
    await killAt(builtin, 8, {}, (s) => (s.get('holding')?.length ?? 0) > 0, 'a prestarted process to say holding');
  });

  it('importing: a prestarted process that reads no stdin while it imports', async () => {
    await killAt(
      builtin,
      8,
      { FAKE_WORKLOAD: 'slow-import' },
      (s) => (s.get('importing')?.length ?? 0) > 0,
      'a prestarted process to be importing',
    );
  });

  it('stopped: an importer stopped (SIGSTOP) by someone else, which cannot read its stdin', async () => {
    await killAt(
      builtin,
      8,
      { FAKE_WORKLOAD: 'slow-import' },
      async (s) => {
        const importers = s.get('importing') ?? [];
        for (const pid of importers) process.kill(-pid, 'SIGSTOP');
        for (const pid of importers) if ((await readProcess(pid))?.state === 'T') return true;
        return false;
      },
      'a prestarted importer to be stopped',
    );
  });

  it('switching: a process busy switching to the next workload', async () => {
    await killAt(
      builtin,
      2,
      { FAKE_WORKLOAD: 'slow-switch' },
      (s) => (s.get('switching')?.length ?? 0) > 0,
      'a process to be switching',
    );
  });

  it('importing, a custom command that never imports the helper', async () => {
    await killAt(
      customRun,
      8,
      {},
      async (s) => {
        // Its Python, not only the simulator's python3 that runs it, must have got there.
        for (const pid of s.get('importing') ?? [])
          if ((await readProcess(pid))?.comm.startsWith('python')) return true;
        return false;
      },
      'a prestarted custom process to be importing',
    );
  });

  it('what survives anyway (its watchdog killed too): doctor names it, and --resume kills it', async () => {
    const { tmp, out } = unstarted(builtin, 8);
    const log = path.join(tmp, 'stages.log');
    const harness = cli(['bench', '--resume', out], { TMPDIR: tmp, FAKE_LOG: log, FAKE_WORKLOAD: 'slow-import' });
    try {
      await until(
        () => (stages(log).get('importing')?.length ?? 0) > 0,
        60_000,
        'a prestarted process to be importing',
      );
      // The watchdog first, then the harness: nothing is left to kill what the harness started.
      const watchdogs = processesUnder(tmp).filter((pid) =>
        readOr(`/proc/${pid}/cmdline`).includes('gpushare watchdog'),
      );
      expect(watchdogs).toHaveLength(1);
      for (const pid of watchdogs) process.kill(pid, 'SIGKILL');
      harness.kill('SIGKILL');
      await harness;
      const importing = stages(log).get('importing') ?? [];
      expect(importing.filter(running)).toEqual(importing);

      const doctor = await cli(['doctor'], { TMPDIR: tmp });
      for (const pid of importing)
        expect(joined(doctor.stdout)).toMatch(
          new RegExp(
            `processes [\\d, ]*\\b${pid}\\b[\\d, ]* left by gpushare pid ${harness.pid}, which has exited: stop them with kill -9 -- -\\d+`,
          ),
        );

      const resumed = await cli(['bench', '--resume', out], { TMPDIR: tmp });
      expect(resumed.stderr).toMatch(
        /gpushare: warning: killed \d+ process\(es\) left by the interrupted harness: PIDs /,
      );
      await until(() => importing.filter(running).length === 0, 15_000, 'the left processes to be gone');
      await until(() => processesUnder(tmp).length === 0, 15_000, 'every process of the run to be gone');
    } finally {
      harness.kill('SIGKILL');
      for (const pid of processesUnder(tmp)) process.kill(pid, 'SIGKILL');
    }
  });
});
