/** The run-directory lock: one holder, refused while it lives, taken over once it is stale. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { acquireRunLock, LOCK_FILE, liveLockHolder } from '../../harness/record/lock.js';
import { bootId, processStartTicks } from '../../harness/system/proc/process-table.js';
import { tempDir } from '../helpers.js';

async function owner(pid: number, startTicks: number | null, boot?: string) {
  return JSON.stringify({ pid, startTicks, bootId: boot ?? (await bootId()), hostname: os.hostname() });
}

/** The PID of a process that has exited: a dead holder. */
async function deadPid(): Promise<number> {
  const child = execa(process.execPath, ['-e', '']);
  await child;
  return child.pid as number;
}

describe('run directory lock', () => {
  it('is created with the holder, refuses a second taker naming it, and is removed on release', async () => {
    const dir = tempDir();
    const lock = await acquireRunLock(dir);
    expect(lock.warning).toBeNull();
    expect(JSON.parse(readFileSync(path.join(dir, LOCK_FILE), 'utf8'))).toEqual({
      pid: process.pid,
      startTicks: await processStartTicks(process.pid),
      bootId: await bootId(),
      hostname: os.hostname(),
    });
    await expect(acquireRunLock(dir)).rejects.toThrow(
      `${dir} is in use by another gpushare (pid ${process.pid}): wait for it to finish, or stop it first`,
    );
    lock.release();
    expect(existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    (await acquireRunLock(dir)).release();
  });

  it('takes over the lock of a holder that is gone, with a warning', async () => {
    const dir = tempDir();
    const pid = await deadPid();
    writeFileSync(path.join(dir, LOCK_FILE), await owner(pid, 1));
    const lock = await acquireRunLock(dir);
    expect(lock.warning).toBe(`took over the stale lock of gpushare pid ${pid} (that process is gone)`);
    expect(JSON.parse(readFileSync(path.join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('takes over a lock whose PID now belongs to another process, or was taken before a reboot', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, LOCK_FILE),
      await owner(process.pid, ((await processStartTicks(process.pid)) ?? 0) - 1),
    );
    const reused = await acquireRunLock(dir);
    expect(reused.warning).toBe(
      `took over the stale lock of gpushare pid ${process.pid} (its PID now belongs to another process)`,
    );
    reused.release();
    writeFileSync(
      path.join(dir, LOCK_FILE),
      await owner(process.pid, await processStartTicks(process.pid), 'another-boot'),
    );
    const rebooted = await acquireRunLock(dir);
    expect(rebooted.warning).toContain('(the machine has rebooted since)');
    rebooted.release();
  });

  it('release leaves alone a lock that another harness has taken over since', async () => {
    const dir = tempDir();
    const lock = await acquireRunLock(dir);
    const theirs = await owner(1, 1);
    writeFileSync(path.join(dir, LOCK_FILE), theirs);
    lock.release();
    expect(readFileSync(path.join(dir, LOCK_FILE), 'utf8')).toBe(theirs);
  });

  it('names its live holder to doctor, and no holder once it is released or stale', async () => {
    const dir = tempDir();
    expect(await liveLockHolder(dir)).toBeNull();
    const lock = await acquireRunLock(dir);
    expect(await liveLockHolder(dir)).toBe(process.pid);
    lock.release();
    expect(await liveLockHolder(dir)).toBeNull();
    writeFileSync(path.join(dir, LOCK_FILE), await owner(await deadPid(), 1));
    expect(await liveLockHolder(dir)).toBeNull();
  });
});
