/** GPU test of a small client sweep and a short capacity search on the real GPU (no ratios asserted: those are measurements). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { CapacityRun } from '../../harness/capacity/record.js';
import { CLI, runOnDisk, tempDir } from '../helpers.js';

const gpuCli = (args: string[]) => execa(process.execPath, [CLI, ...args], { reject: false, timeout: 280_000 });

describe('client sweeps and capacity on a real GPU', () => {
  it('a sweep of 2 and 3 spin clients measures each count, with one shared solo arm at 3', async () => {
    const out = path.join(tempDir(), 'sweep');
    const result = await gpuCli([
      'bench',
      '--modes',
      'timeslice',
      '--workloads',
      'spin',
      '--clients',
      '2,3',
      '--rounds',
      '6',
      '--max-rounds',
      '6',
      '--out',
      out,
      '--quiet',
    ]);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const run = runOnDisk(out);
    expect(run?.plan.map((c) => `${c.id} ${c.arms.map((a) => a.id).join(',')}`)).toEqual([
      'timeslice/spin@2 solo-c0,solo-c1,contended',
      'timeslice/spin@3 solo-c0,contended',
    ]);
    expect(run?.trials.every((t) => t.status === 'ok')).toBe(true);
  });

  it('a capacity search under MPS finds a passing rate within a generous target', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await gpuCli([
      'capacity',
      '--slo-p99-ms',
      '50',
      '--modes',
      'mps',
      '--clients',
      '2',
      '--workloads',
      'spin',
      '--set',
      'spin.spin-us=100',
      '--max-steps',
      '4',
      '--out',
      out,
    ]);
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'capacity.json'), 'utf8')) as CapacityRun;
    expect(run.points[0]?.status).toBe('measured');
    expect(run.points[0]?.steps.length).toBeGreaterThan(0);
    expect(run.points[0]?.steps[0]?.clients.every((c) => c.requests > 0 && c.scheduleLagMs >= 0)).toBe(true);
  });
});
