/** A client sweep end to end with the fakes: a comparison per count, and a point past the MPS client limit that fails cleanly. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, QUICK, runOnDisk, tempDir, unfolded } from '../helpers.js';

describe('gpushare bench --clients 2,4 (fake GPU)', () => {
  it('measures each count as its own comparison; the MPS point past the client limit is not measured, with the error quoted', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(
      [
        'bench',
        '--modes',
        'timeslice,mps',
        '--workloads',
        'spin',
        '--clients',
        '4,2',
        ...QUICK,
        '--out',
        out,
        '--quiet',
      ],
      { FAKE_MPS_CLIENTS: '3' },
    );
    // mps/spin@4 measured nothing: bench says so and exits 3.
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('mps/spin@4 measured nothing');
    const run = runOnDisk(out);
    expect(run?.plan.map((c) => c.id)).toEqual(['timeslice/spin@2', 'timeslice/spin@4', 'mps/spin@2', 'mps/spin@4']);
    expect(run?.stops.map((s) => `${s.comparisonId} ${s.reason}`)).toEqual([
      'timeslice/spin@2 fixed-rounds',
      'timeslice/spin@4 fixed-rounds',
      'mps/spin@2 fixed-rounds',
      'mps/spin@4 aborted',
    ]);
    // Every count's clients were timed from start to ready, for the memory they hold.
    expect(run?.clientStarts?.map((s) => s.comparisonId)).toEqual([
      'timeslice/spin@2',
      'timeslice/spin@4',
      'mps/spin@2',
    ]);

    const reports = path.join(out, 'report');
    const md = readFileSync(path.join(reports, `${run?.id}.md`), 'utf8');
    expect(md).toContain('## Scaling with the number of clients');
    // The fake time-slices 4 clients 4 ways: each client's slowdown against the one shared solo arm is 4.
    expect(md).toMatch(/\| timeslice \| spin \| 4 \| 4\.00× ±0\.0% \| 1\.00× \| 1\.00× \|/);
    expect(md).toMatch(/\| mps \| spin \| 4 \| not measured: .*busy or unavailable \(fake MPS client limit\)/);
    expect(existsSync(path.join(reports, run?.id ?? '', 'clientScaling.svg'))).toBe(true);
    expect(readdirSync(path.join(reports, run?.id ?? ''))).toContain('clientScaling.svg');

    // plan quotes the sweep at the fewest measured clients at or above the count asked, else marks it.
    const at3 = await cli(['plan', '--explain', '--models', '3', '--mem-gib', '1', '--sm-pct', '10', '--run', out]);
    expect(unfolded(at3.stdout)).toMatch(/measured on run .* with 4 spin clients: slowdown 4\.00×/);
    const at40 = await cli(['plan', '--explain', '--models', '40', '--mem-gib', '1', '--sm-pct', '10', '--run', out]);
    expect(unfolded(at40.stdout)).toMatch(
      /with 4 spin clients \(the most measured, fewer than the 40 asked: more cost more\)/,
    );
    expect(at40.stdout).toContain('binding limit:');
  });

  it('--modes streams,green: N tenants in one process at each count, beside timeslice; green past the SM split is skipped with the reason', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli([
      'bench',
      '--modes',
      'streams,green,timeslice',
      '--workloads',
      'infer',
      '--clients',
      '2,17',
      ...QUICK,
      '--out',
      out,
      '--quiet',
    ]);
    // green at 17 is skipped (132 SMs make 16 groups of 8 at most), not a failure: exit 0.
    expect(result.exitCode).toBe(0);
    const run = runOnDisk(out);
    expect(run?.plan.map((c) => `${c.id}${c.tenants ? ` (${c.tenants} tenants)` : ''}`)).toEqual([
      'streams/infer',
      'streams/infer@2 (2 tenants)',
      'streams/infer@17 (17 tenants)',
      'green/infer@2 (2 tenants)',
      'green/infer@17 (17 tenants)',
      'timeslice/infer@2',
      'timeslice/infer@17',
    ]);
    expect(run?.stops.find((s) => s.comparisonId === 'green/infer@17')).toMatchObject({
      reason: 'unsupported',
      detail: expect.stringContaining('not the 17 asked for an even split: at most 16 tenants'),
    });
    // One process per in-process comparison; its tenants' memory from its ready line.
    expect(run?.clientStarts?.find((s) => s.comparisonId === 'streams/infer@17')).toMatchObject({
      processes: 1,
      memoryReservedMiB: 17 * 73,
    });
    const contended = run?.trials.find((t) => t.comparisonId === 'streams/infer@17' && t.arm === 'contended');
    expect(contended?.status === 'ok' && new Set(contended.clients.map((c) => c.pid)).size).toBe(1);
    const md = readFileSync(path.join(out, 'report', `${run?.id}.md`), 'utf8');
    // The simulator: 1 + 0.55·(n−1) slower on streams of one process, 1 + 0.1·(n−1) in green contexts on top
    // of the slice's own 1 + 0.15·(N−1) against the whole-GPU alone (1.15 × 1.1 at 2), host time per step
    // 10·(1 + 0.5·(n−1)) µs, 73 MiB reserved per tenant.
    // The memory columns are left out: they need nvidia-smi samples inside 50 ms windows, which a loaded
    // machine's sampler can miss (the report then says "—"); the reservation is checked from the record.
    expect(md).toMatch(/\| streams \| infer \| 2 \| 1\.55× ±0\.0% \| 1\.29× \|.*\| 10\.0 → 15\.0 \| 6 \|/);
    expect(run?.clientStarts?.find((s) => s.comparisonId === 'streams/infer@2')?.memoryReservedMiB).toBe(146);
    expect(md).toMatch(/\| green \| infer \| 2 \| 1\.27× ±0\.0% \|/);
    expect(md).toMatch(/\| `in-slice-slowdown` \| 1\.100 \|/);
    expect(md).toMatch(/\| green \| infer \| 17 \| not measured: skipped: .*at most 16 tenants get green contexts/);
    expect(md).toMatch(/\| timeslice \| infer \| 2 \| 2\.00× ±0\.0% \|/);
    expect(md).toContain('the rise is the wait for the GIL');
  });
});
