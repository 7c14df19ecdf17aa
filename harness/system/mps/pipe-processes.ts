/**
 * The MPS processes of one pipe directory, found by what they are and where they listen: a command
 * name starting with nvidia-cuda-mps (both binaries; the fake daemon sets its title to match) and
 * CUDA_MPS_PIPE_DIRECTORY=<dir> in the environment. Synchronous, so that a forced exit, where
 * process.exit follows at once, can kill them too. The one way gpushare kills a daemon of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { MPS_COMM_PREFIX } from './ownership.js';

/** A live process whose environment names an MPS pipe directory: an MPS process, or a client of one. */
export interface PipeProcess {
  pid: number;
  pipeDirectory: string;
  /** Its command name starts with nvidia-cuda-mps: the daemon or a server, not a client. */
  mps: boolean;
}

/** Every live (not zombie) process of this user's whose environment names an MPS pipe directory. */
export function listPipeProcessesSync(): PipeProcess[] {
  const found: PipeProcess[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pipe = readOrNull(`/proc/${entry}/environ`)
      ?.split('\0')
      .find((v) => v.startsWith('CUDA_MPS_PIPE_DIRECTORY='));
    const stat = pipe !== undefined ? readOrNull(`/proc/${entry}/stat`) : null;
    if (pipe === undefined || stat === null) continue;
    // comm may contain spaces and parentheses: it runs from the first "(" to the last ")".
    const close = stat.lastIndexOf(')');
    const state = stat.slice(close + 2, close + 3);
    if (state === 'Z' || state === 'X') continue;
    found.push({
      pid: Number(entry),
      pipeDirectory: pipe.slice('CUDA_MPS_PIPE_DIRECTORY='.length),
      mps: stat.slice(stat.indexOf('(') + 1, close).startsWith(MPS_COMM_PREFIX),
    });
  }
  return found;
}

/** PIDs of the live MPS processes started for `pipeDirectory`. */
export function mpsProcessesOfSync(pipeDirectory: string): number[] {
  return listPipeProcessesSync()
    .filter((p) => p.mps && p.pipeDirectory === pipeDirectory)
    .map((p) => p.pid);
}

/** SIGKILLs every MPS process of `pipeDirectory`; returns their PIDs. */
export function killMpsProcessesSync(pipeDirectory: string): number[] {
  const pids = mpsProcessesOfSync(pipeDirectory);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  return pids;
}

/**
 * Kills every MPS process of `pipeDirectory`, then waits, synchronously and up to `settleMs`, until no
 * process naming the directory is left: one still starting (an MPS server a daemon just forked, not
 * yet named) is killed once it is named. At the deadline, whatever still names the directory is killed
 * unnamed: the directory is the run's private one, so only the run's own processes name it (a daemon
 * slower to name itself than the deadline, on a loaded machine, outlived a forced exit). It returns only
 * once no process has named the directory for `quietMs`: one scan can miss a process, one in the middle
 * of exec, whose environment cannot be read for that moment (a double Ctrl-C between MPS sessions, under
 * load, left a daemon so). For a forced exit and an interrupted start, which must leave nothing behind.
 */
export function killMpsProcessesSettledSync(pipeDirectory: string, settleMs = 2000, quietMs = 100): number[] {
  const killed = new Set<number>();
  const deadline = Date.now() + settleMs;
  let quietSince: number | null = null;
  for (;;) {
    for (const pid of killMpsProcessesSync(pipeDirectory)) killed.add(pid);
    const left = listPipeProcessesSync().filter((p) => p.pipeDirectory === pipeDirectory);
    const now = Date.now();
    if (left.length > 0) quietSince = null;
    else quietSince ??= now;
    if (quietSince !== null && now - quietSince >= quietMs) return [...killed];
    if (now >= deadline) {
      for (const { pid } of left) {
        try {
          process.kill(pid, 'SIGKILL');
          killed.add(pid);
        } catch {
          // Gone already.
        }
      }
      // Past the deadline every scan kills what it finds; a quiet stretch or a second deadline ends it.
      if (now >= deadline + Math.max(settleMs, quietMs)) return [...killed];
    }
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
