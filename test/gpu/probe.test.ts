/**
 * GPU test of `gpushare probe`: the fault and client-limit probes on the real GPU and MPS daemon,
 * and nothing left running afterwards (no workload, no MPS process, no GPU memory held).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { ProbeRun } from '../../harness/probe/record.js';
import { findProcesses } from '../../harness/system/proc/process-table.js';
import { CLI, tempDir } from '../helpers.js';

describe('gpushare probe on a real GPU', () => {
  it('measures a fault under time-slicing and MPS and the MPS client limit, and leaves nothing behind', async () => {
    const out = path.join(tempDir(), 'probe');
    const result = await execa(process.execPath, [CLI, 'probe', '--probes', 'fault,client-limit', '--out', out], {
      reject: false,
      timeout: 280_000,
    });
    console.log(String(result.stdout));
    expect(result.exitCode).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'probe.json'), 'utf8')) as ProbeRun;
    expect(run.probes.map((o) => `${o.probe}/${'mode' in o ? o.mode : ''}/${o.status}`)).toEqual([
      'fault/timeslice/measured',
      'fault/mps/measured',
      'client-limit/mps/measured',
    ]);
    const fault = run.probes.find((o) => o.probe === 'fault' && o.mode === 'mps');
    if (fault?.probe !== 'fault' || fault.status !== 'measured') throw new Error('no MPS fault outcome');
    expect(fault.faulterError).toMatch(/illegal/);
    expect(fault.recovery.accepted).toBe(true);
    const limit = run.probes.find((o) => o.probe === 'client-limit');
    if (limit?.probe !== 'client-limit' || limit.status !== 'measured') throw new Error('no client-limit outcome');
    expect(limit.accepted).toBeGreaterThan(1);
    expect(run.cleanup.every((c) => c.leftPids.length === 0)).toBe(true);
    expect(await findProcesses('nvidia-cuda-mps')).toEqual([]);
    // Both reads must succeed: an empty answer from a failed ps or nvidia-smi would pass as "nothing left".
    const ps = await execa('ps', ['-eo', 'args']);
    expect(
      String(ps.stdout)
        .split('\n')
        .filter((l) => l.includes('isolation.py')),
    ).toEqual([]);
    const apps = await execa('nvidia-smi', ['--query-compute-apps=pid', '--format=csv,noheader']);
    expect(String(apps.stdout).trim()).toBe('');
  });
});
