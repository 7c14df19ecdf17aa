import { readdir, readFile } from 'node:fs/promises';

/** A process as /proc shows it. `state` is the one-letter state ("Z" for a zombie). */
export interface ProcessInfo {
  pid: number;
  comm: string;
  state: string;
  argv: string[];
}

/** Reads one process from /proc, or null when it is gone. */
export async function readProcess(pid: number): Promise<ProcessInfo | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces and parentheses: it runs from the first "(" to the last ")".
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(open + 1, close);
    const state = stat.slice(close + 2, close + 3);
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    return { pid, comm, state, argv: cmdline.split('\0').filter(Boolean) };
  } catch {
    return null;
  }
}

/** True while the process exists and is not a zombie (a zombie has exited; only its parent's wait is missing). */
export async function isRunning(pid: number): Promise<boolean> {
  const info = await readProcess(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X';
}

/** Every live process whose command name starts with `prefix`. */
export async function findProcesses(prefix: string): Promise<ProcessInfo[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const found: ProcessInfo[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const info = await readProcess(Number(entry));
    if (info && info.state !== 'Z' && info.comm.startsWith(prefix)) found.push(info);
  }
  return found;
}
