import { existsSync } from 'node:fs';
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

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or null when it is gone. */
export async function processStartTicks(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  // Fields after comm's closing ")" start at field 3 (state); starttime is field 22.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[22 - 3]);
  return Number.isFinite(ticks) ? ticks : null;
}

/** Linux's USER_HZ: /proc reports times in these ticks, 100 per second on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** When a process started, in ms since the epoch (±1 s: the boot time is whole seconds), or null. */
export async function processStartedAtMs(pid: number): Promise<number | null> {
  const ticks = await processStartTicks(pid);
  const stat = await readFile('/proc/stat', 'utf8').catch(() => '');
  const btime = /^btime (\d+)$/m.exec(stat);
  if (ticks === null || btime === null) return null;
  return Number(btime[1]) * 1000 + (ticks * 1000) / TICKS_PER_SECOND;
}

/** This boot's random id: a PID recorded under another boot id is not the same process. */
export async function bootId(): Promise<string> {
  return (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => 'unknown')).trim();
}

/** The process's environment as NAME=value strings, or null when it cannot be read (another user's). */
export async function readEnviron(pid: number): Promise<string[] | null> {
  const text = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => null);
  return text === null ? null : text.split('\0').filter(Boolean);
}

/** A process's parent PID, or null when it is gone. */
async function parentPid(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return Number.isFinite(ppid) ? ppid : null;
}

/** A process as it was seen: the same PID with another start time later is another process. */
export interface SeenProcess {
  pid: number;
  startTicks: number;
}

/** Whether `seen` is still that process and has not exited (a zombie has, only unreaped). */
export async function stillRunning(seen: SeenProcess): Promise<boolean> {
  return (await processStartTicks(seen.pid)) === seen.startTicks && (await isRunning(seen.pid));
}

/**
 * Every live process whose environment holds `entry` (NAME=value), with its start time: what a child
 * started with that mark passed on to every process it made, whichever session or parent it has now.
 */
export async function processesWithEnv(entry: string): Promise<SeenProcess[]> {
  const found: SeenProcess[] = [];
  for (const entryName of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entryName)) continue;
    const pid = Number(entryName);
    if (pid === process.pid || !(await readEnviron(pid))?.includes(entry)) continue;
    const startTicks = await processStartTicks(pid);
    if (startTicks !== null && (await isRunning(pid))) found.push({ pid, startTicks });
  }
  return found;
}

/**
 * Every live descendant of `pid`, with its start time: a child that called setsid() has left the
 * process group but is still a descendant while its parent lives, and the start time tells a
 * reused PID apart later.
 */
export async function descendants(pid: number): Promise<SeenProcess[]> {
  const childrenOf = hasChildrenFiles() ? childrenFromTasks : await childrenByScan();
  const found: SeenProcess[] = [];
  const queue = await childrenOf(pid);
  while (queue.length > 0) {
    const next = queue.shift() as number;
    const startTicks = await processStartTicks(next);
    if (startTicks !== null) found.push({ pid: next, startTicks });
    queue.push(...(await childrenOf(next)));
  }
  return found;
}

let childrenFiles: boolean | null = null;
/** Whether this kernel lists each thread's children in /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN). */
function hasChildrenFiles(): boolean {
  childrenFiles ??= existsSync(`/proc/self/task/${process.pid}/children`);
  return childrenFiles;
}

/** The children of `pid`, from every one of its threads' children file: a few reads, not one per process. */
export async function childrenFromTasks(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const children: number[] = [];
  for (const tid of tasks) {
    const text = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const child of text.split(' ')) if (/^\d+$/.test(child)) children.push(Number(child));
  }
  return children;
}

/** Children by parent, from the parent PID of every process in /proc: where the kernel has no children files. */
export async function childrenByScan(): Promise<(pid: number) => Promise<number[]>> {
  const entries = (await readdir('/proc').catch(() => [] as string[])).filter((e) => /^\d+$/.test(e)).map(Number);
  const children = new Map<number, number[]>();
  for (const child of entries) {
    const parent = await parentPid(child);
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  return async (pid) => children.get(pid) ?? [];
}
