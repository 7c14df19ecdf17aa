/**
 * One harness per run directory: `<dir>/.lock`, created atomically (O_EXCL), holds the owner's PID,
 * start time, boot id and host. A live owner makes a second bench or --resume refuse; a dead one
 * (or a reused PID: another start time or boot) leaves a stale lock that is taken over.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { UserError } from '../core/errors.js';
import { bootId, isRunning, processStartTicks } from '../system/proc/process-table.js';

/** The lock file's name inside a run directory. */
export const LOCK_FILE = '.lock';

interface LockOwner {
  pid: number;
  startTicks: number | null;
  bootId: string;
  hostname: string;
}

/** A held lock. `release` is synchronous so that it also works on a forced exit. */
export interface RunLock {
  /** Set when a stale lock was taken over: a warning for the run. */
  readonly warning: string | null;
  /** The stale holder taken over, `<pid>:<start ticks>` (as left-workloads.ts marks its children); null: none. */
  readonly staleHolder: string | null;
  release(): void;
}

/** Takes `<dir>/.lock`, or throws a UserError naming the live holder. */
export async function acquireRunLock(dir: string): Promise<RunLock> {
  const file = path.join(dir, LOCK_FILE);
  const me: LockOwner = {
    pid: process.pid,
    startTicks: await processStartTicks(process.pid),
    bootId: await bootId(),
    hostname: os.hostname(),
  };
  const text = `${JSON.stringify(me)}\n`;
  let warning: string | null = null;
  let staleHolder: string | null = null;
  // Two tries: the second follows the removal of a stale lock (another harness may win that race).
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(file, 'wx', 0o644);
      await handle.writeFile(text);
      await handle.close();
      return { warning, staleHolder, release: () => releaseIfMine(file, text) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new UserError(
          `cannot create the lock file ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another directory`,
        );
      }
    }
    const holder = await readOwner(file);
    const staleness = holder === 'gone' ? 'gone' : await whyStale(holder, me);
    if (staleness === null && holder !== 'gone') {
      const where = holder.hostname === me.hostname ? '' : ` on ${holder.hostname}`;
      throw new UserError(
        `${dir} is in use by another gpushare (pid ${holder.pid}${where}): wait for it to finish, or stop it first`,
      );
    }
    if (holder !== 'gone') {
      warning = `took over the stale lock of gpushare pid ${holder.pid} (${staleness})`;
      if (holder.startTicks !== null) staleHolder = `${holder.pid}:${holder.startTicks}`;
    }
    await unlink(file).catch(() => undefined);
  }
  throw new UserError(`${dir} is in use by another gpushare (it took the lock just now): wait for it to finish`);
}

/** The PID of the live gpushare that holds `<dir>/.lock`, or null when none does (no lock, or a stale one). */
export async function liveLockHolder(dir: string): Promise<number | null> {
  const holder = await readOwner(path.join(dir, LOCK_FILE));
  if (holder === 'gone') return null;
  const me = { pid: process.pid, startTicks: null, bootId: await bootId(), hostname: os.hostname() };
  return (await whyStale(holder, me)) === null && holder.hostname === me.hostname ? holder.pid : null;
}

/** The lock's owner, 'gone' when the file vanished, or an unreadable owner that counts as stale. */
async function readOwner(file: string): Promise<LockOwner | 'gone'> {
  const content = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) =>
    error.code === 'ENOENT' ? null : '',
  );
  if (content === null) return 'gone';
  try {
    const owner = JSON.parse(content) as LockOwner;
    if (Number.isInteger(owner.pid) && owner.pid > 0) return owner;
  } catch {
    // A harness killed between creating and writing the file: no owner to respect.
  }
  return { pid: 0, startTicks: null, bootId: '', hostname: os.hostname() };
}

/** Why the holder no longer holds the lock, or null while it is alive. */
async function whyStale(holder: LockOwner, me: LockOwner): Promise<string | null> {
  // Another host's PID cannot be checked from here: its lock is respected.
  if (holder.hostname !== me.hostname) return null;
  if (holder.pid === 0) return 'an unreadable lock file';
  if (holder.bootId !== me.bootId) return 'the machine has rebooted since';
  if (!(await isRunning(holder.pid))) return 'that process is gone';
  if ((await processStartTicks(holder.pid)) !== holder.startTicks) return 'its PID now belongs to another process';
  return null;
}

function releaseIfMine(file: string, text: string): void {
  try {
    // A lock taken over after ours went stale is no longer ours to remove.
    if (readFileSync(file, 'utf8') === text) unlinkSync(file);
  } catch {
    // Already gone.
  }
}
