/** `gpushare capacity` with the fakes: open-loop steps, a rate search per mode and client count, and the cases that must not pass. */
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CapacityRun } from '../../harness/capacity/record.js';
import { findProcesses } from '../../harness/system/proc/process-table.js';
import { cli, expectOneLineError, FAKES, ROOT, tempDir, unfolded, until } from '../helpers.js';

const FAST = ['--window-ms', '200', '--start-qps', '1000', '--max-steps', '14'];
/** A command the simulator plays (a script of gpushare's own workloads/, given as your own command after --). */
const PLAYED = ['python3', path.join(ROOT, 'workloads', 'spin.py')];

function capacityRun(out: string): CapacityRun {
  return JSON.parse(readFileSync(path.join(out, 'capacity.json'), 'utf8')) as CapacityRun;
}

describe('gpushare capacity (fake GPU)', () => {
  it('finds a capacity per mode and client count; the fake MPS carries more than time-slicing at 2 clients', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli(
      ['capacity', '--slo-p99-ms', '2', '--clients', '1,2', ...FAST, '--out', out, '--json'],
      {},
      { timeoutMs: 120_000 },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    // --json: stdout is the JSON alone; the progress, a line per step, is on stderr.
    expect(result.stderr).toMatch(/^ {2}timeslice × 1, step 1 of at most 14: 1000 req\/s, /m);
    const rows = (
      JSON.parse(result.stdout) as {
        rows: Array<{ mode: string; clients: number; capacityQps: number | null; failedAtQps: number | null }>;
      }
    ).rows;
    expect(rows.map((r) => `${r.mode}×${r.clients}`)).toEqual(['timeslice×1', 'timeslice×2', 'mps×1', 'mps×2']);
    const at = (mode: string, clients: number) => rows.find((r) => r.mode === mode && r.clients === clients);
    expect(at('mps', 2)?.capacityQps).toBeGreaterThan(at('timeslice', 2)?.capacityQps ?? Infinity);
    for (const r of rows)
      expect((r.failedAtQps as number) / (r.capacityQps as number) - 1).toBeLessThanOrEqual(0.05 + 1e-9);
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toContain('| mode | clients | capacity (req/s, total) |');
    // Every step keeps each client's latencies as a histogram, merged only when analysed.
    expect(capacityRun(out).points[0]?.steps[0]?.clients[0]?.histogram).toMatch(/^[A-Za-z0-9+/=]+$/);
    // Where the time went: a part per point, its windows the steps' windows, adding up to the wall time.
    const { timeAccount: time, points } = capacityRun(out);
    expect(time?.parts.map((p) => p.id)).toEqual(['timeslice@1', 'timeslice@2', 'mps@1', 'mps@2']);
    expect(time?.windowsS).toBeCloseTo(
      points.flatMap((p) => p.steps).reduce((a, step) => a + step.windowS, 0),
      6,
    );
    expect(time && time.windowsS + time.startupS + time.harnessS + time.outsideS).toBeCloseTo(time?.wallS ?? -1, 6);
    expect(report).toMatch(/^measuring: [\d.]+ s of [\d.]+ s \(\d+%\); client start-up/m);
  });

  it('streams and green: N tenants of one process per point; green past the SM split is skipped with the reason, exit 0', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli(
      [
        'capacity',
        '--slo-p99-ms',
        '2',
        '--modes',
        'streams,green',
        '--clients',
        '2,17',
        '--window-ms',
        '200',
        '--start-qps',
        '1000',
        '--max-steps',
        '3',
        '--out',
        out,
      ],
      {},
      { timeoutMs: 120_000 },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const points = capacityRun(out).points;
    expect(points.map((p) => `${p.mode}×${p.clients} ${p.status}`)).toEqual([
      'streams×2 measured',
      'streams×17 measured',
      'green×2 measured',
      'green×17 skipped',
    ]);
    // One result per tenant in each step: 2 and 17 of them.
    expect(points.map((p) => p.steps[0]?.clients.length ?? 0)).toEqual([2, 17, 2, 0]);
    expect(unfolded(result.stdout)).toMatch(
      /green\s+17 clients {2}skipped: .*at most 16 tenants get green contexts of their own/,
    );
  });

  it('a point whose every step was invalid is reported invalid with the reason, exit 3, never "nothing passed"', async () => {
    const out = path.join(tempDir(), 'cap');
    // The command of the issue: client 1's generator falls 5 ms behind its schedule, over the 2 ms allowed.
    const result = await cli(
      [
        'capacity',
        '--slo-p99-ms',
        '10',
        '--modes',
        'timeslice',
        '--clients',
        '2',
        '--max-steps',
        '2',
        '--window-ms',
        '200',
        '--out',
        out,
      ],
      { FAKE_WORKLOAD: 'lag', FAKE_WORKLOAD_CLIENT: '1' },
    );
    expect(result.exitCode, result.stderr).toBe(3);
    expect(unfolded(result.stdout)).toMatch(
      /timeslice\s+2 clients {2}invalid: no valid step in 2: a generator issued requests 5\.0 ms late \(p99\)/,
    );
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toContain('| timeslice | 2 | invalid: no valid step in 2: a generator issued requests 5.0 ms late');
    expect(report).not.toMatch(/none: |nothing passed/);
  });

  it("runs bench's result checks on every step: windows on the wall clock are invalid, exit 3", async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli(
      [
        'capacity',
        '--slo-p99-ms',
        '10',
        '--modes',
        'timeslice',
        '--clients',
        '2',
        '--window-ms',
        '200',
        '--start-qps',
        '1000',
        '--max-steps',
        '2',
        '--out',
        out,
      ],
      { FAKE_WORKLOAD: 'wall-clock' },
    );
    expect(result.exitCode, result.stderr).toBe(3);
    expect(capacityRun(out).points[0]?.steps.map((s) => s.invalid)).toEqual([
      expect.stringMatching(/^client 0 reported a window starting at \d+ µs, .* \(CLOCK_MONOTONIC µs expected\)$/),
      expect.stringMatching(/CLOCK_MONOTONIC µs expected/),
    ]);
    expect(unfolded(result.stdout)).toMatch(/invalid: no valid step in 2: client 0 reported a window starting at/);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain("(bench's checks)");
  });

  it("at docs/install.md's settings (default --window-ms), a rate over the latencies 2000 ms steps report still gets a verdict", async () => {
    // The simulated infer serves 20000 req/s a client before its p99 passes 10 ms: above the 10000 req/s whose
    // latencies a 2000 ms step reports. Steps shorten themselves there; none is invalid, and a rate fails above the capacity.
    const out = path.join(tempDir(), 'cap');
    const result = await cli(
      ['capacity', '--slo-p99-ms', '10', '--clients', '1', '--modes', 'timeslice', '--start-qps', '6400', '--out', out],
      {},
      { timeoutMs: 120_000 },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const steps = capacityRun(out).points[0]?.steps ?? [];
    expect(steps.flatMap((step) => step.clients).every((c) => (c.unreported ?? 0) === 0)).toBe(true);
    expect(result.stderr).not.toMatch(/: invalid|no latency reported|--window-ms/);
    expect(unfolded(result.stdout)).toMatch(/^timeslice\s+1 clients {2}\d+ req\/s \(fails at \d+\); p99 /m);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toMatch(
      /shorter where a client would serve more requests than the 20000 latencies it reports a window \(\d+ of \d+ steps\)/,
    );
  });

  it('when --max-steps runs out before a rate fails, the capacity is a lower bound (≥), and progress has a line per step with an ETA', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli([
      'capacity',
      '--slo-p99-ms',
      '10',
      '--modes',
      'timeslice',
      '--clients',
      '1',
      '--window-ms',
      '200',
      '--start-qps',
      '1000',
      '--max-steps',
      '2',
      '--out',
      out,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(unfolded(result.stdout)).toMatch(
      /^timeslice\s+1 clients {2}≥ 2000 req\/s \(no rate failed within --max-steps 2\); p99 [\d.]+ ms over 640 requests$/m,
    );
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain(
      '| timeslice | 1 | ≥ 2000 (no rate failed within --max-steps 2) |',
    );
    // Step lines are indented 2 and fold 2 deeper: join only those continuations.
    const steps = result.stderr
      .replace(/\n {4}(?=\S)/g, ' ')
      .split('\n')
      .filter((l) => l.includes(', step '));
    expect(steps).toEqual([
      expect.stringMatching(
        /^ {2}timeslice × 1, step 1 of at most 2: 1000 req\/s, p99 [\d.]+ ms \(target 10 ms\): pass; at most \d+:\d\d left$/,
      ),
      expect.stringMatching(
        /^ {2}timeslice × 1, step 2 of at most 2: 2000 req\/s, p99 [\d.]+ ms \(target 10 ms\): pass; done$/,
      ),
    ]);
  });

  it('a point interrupted before its first step is reported interrupted, and its clients are stopped', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'cap');
    // A python of this test's own, so that its workloads are found among every other suite's.
    const python = path.join(dir, 'python3');
    symlinkSync(path.join(FAKES, 'python3'), python);
    const ours = async () => (await findProcesses('node')).filter((p) => p.argv[1] === python);
    const child = cli(
      ['capacity', '--slo-p99-ms', '10', '--modes', 'timeslice', '--clients', '2', '--python', python, '--out', out],
      { FAKE_WORKLOAD: 'never-ready' },
    );
    await until(async () => (await ours()).length === 2, 30_000, 'both clients started');
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    expect(capacityRun(out).points[0]).toMatchObject({
      status: 'interrupted',
      reason: 'SIGINT came before its first step',
      steps: [],
    });
    expect(unfolded(result.stdout)).toMatch(/timeslice\s+2 clients {2}interrupted: SIGINT came before its first step/);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).not.toMatch(/none: |nothing passed/);
    expect(await ours()).toEqual([]);
  });

  it('measures the command after -- as the workload, named as bench names it', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli([
      'capacity',
      '--slo-p99-ms',
      '2',
      '--modes',
      'timeslice',
      '--clients',
      '1',
      ...FAST,
      '--out',
      out,
      '--json',
      '--',
      ...PLAYED,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(capacityRun(out).settings.workload).toEqual({
      name: 'custom',
      builtin: false,
      argv: PLAYED,
      params: {},
    });
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain(`Workload \`${PLAYED.join(' ')}\``);
    // The simulator serves spin in 0.25 ms a request (built-in infer: 0.05 ms), so one client carries at most 4000 req/s.
    const [row] = (JSON.parse(result.stdout) as { rows: Array<{ capacityQps: number }> }).rows;
    expect(row?.capacityQps).toBeGreaterThan(2000);
    expect(row?.capacityQps).toBeLessThanOrEqual(4000);
    const old = path.join(tempDir(), 'cap');
    const v1 = await cli(
      [
        'capacity',
        '--slo-p99-ms',
        '2',
        '--modes',
        'timeslice',
        '--clients',
        '1',
        ...FAST,
        '--out',
        old,
        '--',
        ...PLAYED,
      ],
      { FAKE_WORKLOAD: 'v1' },
    );
    expect(v1.exitCode).toBe(3);
    expect(unfolded(v1.stdout)).toContain(
      'failed: the workload speaks protocol version 1, which has no open-loop load',
    );
  });

  it('a workload of protocol version 1 is refused for open loop, and a client past the MPS limit fails its point with the error', async () => {
    const old = path.join(tempDir(), 'cap');
    const v1 = await cli(
      ['capacity', '--slo-p99-ms', '2', '--clients', '1', '--modes', 'timeslice', ...FAST, '--out', old],
      { FAKE_WORKLOAD: 'v1' },
    );
    expect(v1.exitCode).toBe(3);
    expect(capacityRun(old).points[0]).toMatchObject({
      status: 'failed',
      reason: 'the workload speaks protocol version 1, which has no open-loop load',
    });
    const out = path.join(tempDir(), 'cap');
    const limited = await cli(
      ['capacity', '--slo-p99-ms', '2', '--clients', '3', '--modes', 'mps', ...FAST, '--out', out],
      { FAKE_MPS_CLIENTS: '2' },
    );
    expect(limited.exitCode).toBe(3);
    expect(capacityRun(out).points[0]).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('client 2 of 3 never became ready'),
    });
    const point = capacityRun(out).points[0];
    expect(point?.status !== 'measured' ? point?.reason : '').toMatch(/busy or unavailable/);
  });

  it('needs its target, in one line', async () => {
    const result = await cli(['capacity', '--clients', '1']);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, '--slo-p99-ms is required: the p99 latency target in ms, e.g. --slo-p99-ms 10');
  });

  it('takes --clients as bench does, and --workload as the deprecated name of --workloads, with one warning', async () => {
    const refused = path.join(tempDir(), 'cap');
    const spaced = await cli(['capacity', '--slo-p99-ms', '10', '--clients', '2, 4', '--out', refused]);
    expect(spaced.exitCode).toBe(2);
    expectOneLineError(spaced.stderr, "--clients ' 4': needs a whole number from 1 to 64");
    expect(existsSync(refused)).toBe(false);
    const out = path.join(tempDir(), 'cap');
    const old = await cli([
      'capacity',
      '--slo-p99-ms',
      '10',
      '--modes',
      'timeslice',
      '--clients',
      '1',
      '--workload',
      'spin',
      '--window-ms',
      '200',
      '--start-qps',
      '1000',
      '--max-steps',
      '2',
      '--out',
      out,
    ]);
    expect(old.exitCode, old.stderr).toBe(0);
    expect(old.stderr.split('\n').filter((l) => l.includes('warning'))).toEqual([
      'gpushare: warning: --workload is deprecated: use --workloads',
    ]);
    expect(capacityRun(out).settings.workload.name).toBe('spin');
  });
});
