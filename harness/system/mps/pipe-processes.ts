/**
 * The MPS processes of one pipe directory, found by what they are and where they listen: a command
 * name starting with nvidia-cuda-mps (both binaries; the fake daemon sets its title to match) and
 * CUDA_MPS_PIPE_DIRECTORY=<dir> in the environment. Synchronous, so that a forced exit, where
 * process.exit follows at once, can kill them too. The one way gpushare kills a daemon of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { MPS_COMM_PREFIX } from './ownership.js';

/** A live MPS process and the pipe directory its environment names (null: none, or unreadable). */
export interface MpsProcess {
  pid: number;
  pipeDirectory: string | null;
}

/** Every live (not zombie) MPS process of this machine that this user can see. */
export function listMpsProcessesSync(): MpsProcess[] {
  const found: MpsProcess[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readOrNull(`/proc/${entry}/stat`);
    if (stat === null) continue;
    // comm may contain spaces and parentheses: it runs from the first "(" to the last ")".
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (!comm.startsWith(MPS_COMM_PREFIX) || state === 'Z' || state === 'X') continue;
    const pipe = readOrNull(`/proc/${entry}/environ`)
      ?.split('\0')
      .find((v) => v.startsWith('CUDA_MPS_PIPE_DIRECTORY='));
    found.push({ pid: Number(entry), pipeDirectory: pipe?.slice('CUDA_MPS_PIPE_DIRECTORY='.length) ?? null });
  }
  return found;
}

/** PIDs of the live MPS processes started for `pipeDirectory`. */
export function mpsProcessesOfSync(pipeDirectory: string): number[] {
  return listMpsProcessesSync()
    .filter((p) => p.pipeDirectory === pipeDirectory)
    .map((p) => p.pid);
}

/** Signals every MPS process of `pipeDirectory` (SIGKILL unless told); returns their PIDs. */
export function killMpsProcessesSync(pipeDirectory: string, signal: NodeJS.Signals = 'SIGKILL'): number[] {
  const pids = mpsProcessesOfSync(pipeDirectory);
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone already.
    }
  }
  return pids;
}

/**
 * Kills every MPS process of `pipeDirectory` and waits, synchronously, up to `settleMs` until none
 * is left (killing again any that appeared meanwhile): for a forced exit, which cannot await.
 */
export function killMpsProcessesSettledSync(pipeDirectory: string, settleMs = 1000): number[] {
  const killed = new Set<number>();
  const deadline = Date.now() + settleMs;
  for (;;) {
    const alive = killMpsProcessesSync(pipeDirectory);
    for (const pid of alive) killed.add(pid);
    if (alive.length === 0 || Date.now() >= deadline) return [...killed];
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function readOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
