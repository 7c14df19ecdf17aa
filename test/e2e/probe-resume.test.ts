/**
 * `probe --resume` after `kill -9` at the phases lifecycle.test.ts does not stop at (it stops at each
 * MPS daemon's start, life and end): before the probe saved anything, and in a time-sliced session.
 * Each resume completes the run, or says in one line why it cannot and what to do.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProbeRun } from '../../harness/probe/record.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { until } from '../helpers.js';
import { again, expectNothingLeft, jsonOnDisk, startIn } from './lifecycle-kit.js';

const SLOW = { timeout: 300_000 };
/** memory: a time-sliced session, then two MPS sessions. */
const EXPECTED = ['memory/mps/2048', 'memory/mps/null', 'memory/timeslice/null'];
const key = (o: ProbeRun['probes'][number]) =>
  `${o.probe}/${'mode' in o ? o.mode : '-'}/${'limitMib' in o ? o.limitMib : '-'}`;
const probeJson = (out: string) => jsonOnDisk<ProbeRun>(path.join(out, 'probe.json'));

describe.concurrent('probe: kill -9, then --resume', SLOW, () => {
  it('before its first save: one line saying nothing was saved and how to start afresh, which then works', async () => {
    const started = startIn(['probe', '--probes', 'memory']);
    const pid = started.child.pid as number;
    // At once, once it runs: it is still fingerprinting the machine, long before its directory is made.
    await until(() => isRunning(pid), 10_000, 'the probe to run');
    started.child.kill('SIGKILL');
    await started.child;
    expect(existsSync(path.join(started.out, 'probe.json'))).toBe(false);
    const resumed = await again(started, ['probe', '--resume', started.out]);
    expect(resumed.exitCode).toBe(2);
    expect(resumed.stderr.trim().split('\n')).toHaveLength(1);
    expect(resumed.stderr.trim()).toMatch(
      new RegExp(
        `^gpushare: ${started.out.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} holds no probe run to resume: (it does not exist|no probe\\.json was saved there) \\(a probe run killed before its first save leaves none\\); start it afresh with gpushare probe --out \\S+$`,
      ),
    );
    const afresh = await again(started, ['probe', '--probes', 'memory', '--out', started.out]);
    expect(afresh.exitCode, afresh.stderr).toBe(0);
    expect(probeJson(started.out)?.status).toBe('complete');
    await expectNothingLeft(started.tmp);
  });

  it('in its time-sliced session, before any MPS daemon: the resume completes the run', async () => {
    const started = startIn(['probe', '--probes', 'memory']);
    let ended = false;
    void started.child.finally(() => (ended = true));
    const inTimeslice = () => {
      const run = probeJson(started.out);
      return run?.status === 'running' && run.probes.length === 0 && (run.daemons ?? []).length === 0;
    };
    await until(() => ended || inTimeslice(), 60_000, 'the time-sliced session to run');
    started.child.kill('SIGKILL');
    const killed = await started.child;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const resumed = await again(started, ['probe', '--resume', started.out]);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    const run = probeJson(started.out) as ProbeRun;
    expect(run.status).toBe('complete');
    expect(run.probes.map(key).sort()).toEqual(EXPECTED);
    await expectNothingLeft(started.tmp);
  });
});
