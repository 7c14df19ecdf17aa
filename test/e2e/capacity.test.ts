/** `gpushare capacity` with the fakes: open-loop steps, a rate search per mode and client count, and the cases that must not pass. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CapacityRun } from '../../harness/capacity/record.js';
import { cli, expectOneLineError, tempDir } from '../helpers.js';

const FAST = ['--window-ms', '200', '--start-qps', '1000', '--max-steps', '14'];

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
  });

  it('a generator that falls behind its schedule makes every step invalid: no capacity is claimed', async () => {
    const out = path.join(tempDir(), 'cap');
    const result = await cli(
      [
        'capacity',
        '--slo-p99-ms',
        '2',
        '--clients',
        '1',
        '--modes',
        'timeslice',
        '--window-ms',
        '200',
        '--start-qps',
        '1000',
        '--max-steps',
        '3',
        '--out',
        out,
      ],
      { FAKE_WORKLOAD: 'lag' },
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/timeslice\s+1 clients\s+nothing passed/);
    expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain(
      'invalid: a generator issued requests 5.0 ms late (p99) while its worker was idle',
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
});
