/** Finding a process's descendants in /proc: the kernel's children files, and the full scan where it has none. */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { childrenByScan, childrenFromTasks, descendants } from '../../harness/system/proc/process-table.js';
import { until } from '../helpers.js';

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/** A shell with a child in its group and a grandchild that left it with setsid(), each of them sleeping. */
async function tree(): Promise<number> {
  const shell = spawn('sh', ['-c', 'sleep 60 & sh -c "setsid sleep 60 & wait" & wait'], {
    detached: true,
    stdio: 'ignore',
  });
  const pid = shell.pid as number;
  started.push(pid);
  await until(async () => (await descendants(pid)).length === 3, 10_000, 'the tree to be up');
  return pid;
}

describe('the descendants of a process', () => {
  it('are its children and theirs, setsid() or not, each with its start time', async () => {
    const pid = await tree();
    const found = await descendants(pid);
    expect(found).toHaveLength(3);
    for (const d of found) expect(d.startTicks).toBeGreaterThan(0);
  });

  it('the children files and the full scan of /proc find the same children', async () => {
    const pid = await tree();
    const byScan = await childrenByScan();
    for (const parent of [pid, ...(await childrenFromTasks(pid))])
      expect((await childrenFromTasks(parent)).sort()).toEqual((await byScan(parent)).sort());
  });
});
