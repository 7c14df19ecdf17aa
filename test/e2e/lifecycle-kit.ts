/**
 * What the run-lifecycle tests share: a harness with a temp directory of its own (TMPDIR), so that
 * its MPS roots and MPS processes, and only those, are counted while other suites run beside it; the
 * phases a run goes through, read from its record; and the two ways a user stops it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { findProcesses, readEnviron } from '../../harness/system/proc/process-table.js';
import { cli, tempDir, until } from '../helpers.js';

/** A harness started with a temp directory of its own, and where its run goes. */
export interface Started {
  child: ReturnType<typeof cli>;
  /** Its TMPDIR: its MPS roots (gpushare-mps-*) are made here. */
  tmp: string;
  out: string;
}

/** Starts `gpushare <args> --out <tmp>/run` with TMPDIR=<tmp>. */
export function startIn(args: string[], env: Record<string, string> = {}, tmp = tempDir('gpushare-life-')): Started {
  const out = path.join(tmp, 'run');
  return { child: cli([...args, '--out', out], { TMPDIR: tmp, ...env }, { timeoutMs: 120_000 }), tmp, out };
}

/** Runs `gpushare <args>` to its end with the same TMPDIR as the harness it follows. */
export function again(started: Started, args: string[], env: Record<string, string> = {}) {
  return cli(args, { TMPDIR: started.tmp, ...env }, { timeoutMs: 120_000 });
}

/** The live MPS processes (daemon and servers) whose pipe directory lies under `tmp`: this test's own. */
export async function mpsProcessesUnder(tmp: string): Promise<number[]> {
  const pids: number[] = [];
  for (const p of await findProcesses('nvidia-cuda-mps')) {
    const pipe = (await readEnviron(p.pid))?.find((v) => v.startsWith('CUDA_MPS_PIPE_DIRECTORY='));
    if (pipe?.startsWith(`CUDA_MPS_PIPE_DIRECTORY=${tmp}/`)) pids.push(p.pid);
  }
  return pids;
}

/** gpushare's private MPS roots under `tmp`. */
export function mpsRootsUnder(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('gpushare-mps-'));
}

/** Nothing of the run is left: no MPS process of it (given a deadline to die) and no MPS root of it. */
export async function expectNothingLeft(tmp: string): Promise<void> {
  await until(
    async () => (await mpsProcessesUnder(tmp)).length === 0,
    15_000,
    'the MPS processes of the run to be gone',
  );
  expect(mpsRootsUnder(tmp)).toEqual([]);
}

/** A JSON file as it is on disk now, or null while it is not there (or half-written). */
export function jsonOnDisk<T>(file: string): T | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return null;
  }
}

/** A daemon as a record lists it. */
export interface DaemonOnDisk {
  shutdown: string;
  pipeDirectory: string | null;
}

/** Some root of the run has a control.log: a daemon has started to start. */
export function daemonLogged(tmp: string): boolean {
  return mpsRootsUnder(tmp).some((root) => existsSync(path.join(tmp, root, 'log', 'control.log')));
}

/**
 * The daemons a record lists while its run goes on. A finished run's are none: its last daemon stays
 * `quit` on disk, and a stop after the run completed would not be the phase the case names.
 */
export function daemonsWhileRunning(
  record: { status: string; daemons?: DaemonOnDisk[] | undefined } | null,
): DaemonOnDisk[] {
  return record?.status === 'running' ? (record.daemons ?? []) : [];
}

/** Where a run is, from its record's daemons and its temp directory: each test kills it at one of these. */
export const PHASES = {
  /** A daemon recorded as starting has logged (the fake started slowly: FAKE_MPS=slow-start). */
  'while the daemon starts': (daemons: DaemonOnDisk[], tmp: string) =>
    daemons.some((d) => d.shutdown === 'starting') && daemonLogged(tmp),
  /** A daemon serves the run. */
  'while the daemon runs': (daemons: DaemonOnDisk[]) => daemons.some((d) => d.shutdown === 'running'),
  /** A daemon of the run has quit, and the run goes on: the next session is about to start, or has just. */
  'between MPS sessions': (daemons: DaemonOnDisk[]) => daemons.some((d) => d.shutdown === 'quit'),
} as const;
export type Phase = keyof typeof PHASES;

/** The environment that makes a phase last long enough to be hit. */
export function phaseEnv(phase: Phase): Record<string, string> {
  return phase === 'while the daemon starts' ? { FAKE_MPS: 'slow-start' } : {};
}

/** How a user stops a run. */
export type Stop = 'kill -9' | 'double Ctrl-C';
export const STOPS: readonly Stop[] = ['kill -9', 'double Ctrl-C'];

/**
 * Waits until `daemons()` (read from the run's records) shows `phase`, then stops the harness the
 * way `stop` says and returns how it ended. A double Ctrl-C is a user's: SIGINT, 100 ms, SIGINT.
 */
export async function stopAt(
  started: Started,
  phase: Phase,
  stop: Stop,
  daemons: () => DaemonOnDisk[],
): Promise<Stopped> {
  let ended = false;
  void started.child.finally(() => (ended = true));
  await until(() => ended || PHASES[phase](daemons(), started.tmp), 60_000, `the run to be ${phase}`);
  expect(ended, `the run ended before it was ${phase}`).toBe(false);
  if (stop === 'kill -9') started.child.kill('SIGKILL');
  else {
    started.child.kill('SIGINT');
    await sleep(100);
    started.child.kill('SIGINT');
  }
  const result = await started.child;
  return { exitCode: result.exitCode, signal: result.signal ?? null, stderr: result.stderr };
}

/** How a stopped harness ended: its exit code, or the signal that killed it, and what it said. */
export interface Stopped {
  exitCode: number | undefined;
  signal: string | null;
  stderr: string;
}

/** After the harness was stopped: a forced exit left nothing; a kill -9 left the daemon for --resume. */
export async function expectAfterStop(started: Started, stop: Stop, stopped: Stopped): Promise<void> {
  const ended = { exitCode: stopped.exitCode, signal: stopped.signal };
  if (stop === 'double Ctrl-C') {
    // 130, by the policy; or, where the second SIGINT came as the process was ending (the first had
    // already wound the run down), killed by it: Node puts back the default action while it tears down,
    // and no handler can run then (a child that exits 130 on SIGINT, sent SIGINT as it ended, died by the
    // signal 60 times in 200 here). A shell shows 130 either way; the record's status, checked next by
    // every caller, tells whether the run had saved itself.
    expect(
      [
        { exitCode: 130, signal: null },
        { exitCode: undefined, signal: 'SIGINT' },
      ],
      stopped.stderr,
    ).toContainEqual(ended);
    await expectNothingLeft(started.tmp);
  } else expect(ended).toEqual({ exitCode: undefined, signal: 'SIGKILL' });
}
