/**
 * scripts/verify-gpu.sh, the GPU part of issue 39 in one go, on its CPU path: the built CLI against the
 * simulator's fake node (simulator/bin first on PATH). It plans from a committed run, verifies the files
 * with every named case, leaves no MPS daemon, and prints a compact summary.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { VerifyRun } from '../../harness/verify/record.js';
import { cli, expectShellcheckClean, fakePath, ROOT, tempDir, until } from '../helpers.js';

const SCRIPT = path.join(ROOT, 'scripts', 'verify-gpu.sh');

describe('scripts/verify-gpu.sh on the simulator', () => {
  it('writes both verify runs and a summary, runs every case, and leaves no daemon', async () => {
    const out = path.join(tempDir(), 'verify-gpu');
    const r = await execa('bash', [SCRIPT, out], { reject: false, env: { PATH: fakePath() }, timeout: 170_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const summary = readFileSync(path.join(out, 'summary.txt'), 'utf8');
    expect(summary).toBe(`${r.stdout}\n`);
    for (const step of ['plan', 'artifacts', 'verify-plan', 'verify-artifacts'])
      expect(summary).toMatch(new RegExp(`^step ${step}: exit [01] `, 'm'));
    expect(summary).toContain('mps daemons left running at the end: 0');
    const run: VerifyRun = JSON.parse(readFileSync(path.join(out, 'verify-plan', 'verify.json'), 'utf8'));
    expect(run.status).toBe('complete');
    expect(run.cases).toHaveLength(10);
    expect(run.rows.map((row) => row.id)).toContain('mps.pinned-mem');
    expect(existsSync(path.join(out, 'verify-artifacts', 'report.md'))).toBe(true);
    // Every private MPS directory is gone: the daemons were stopped and their roots removed.
    expect(readdirSync(path.join(out, 'tmp')).filter((n) => n.startsWith('gpushare-mps-'))).toEqual([]);
  }, 180_000);

  it('SIGINT during the cases: exit 130, the run saved interrupted, every daemon stopped, no MPS directory left', async () => {
    const plan = path.join(tempDir(), 'plan');
    expect(
      (
        await cli([
          'plan',
          '--models',
          '4',
          '--mem-gib',
          '10',
          '--sm-pct',
          '20',
          '--gpu-model',
          'H200-141GB',
          '--out',
          plan,
        ])
      ).exitCode,
    ).toBe(0);
    const tmp = tempDir();
    const out = path.join(tempDir(), 'verify');
    const child = cli(['verify', plan, '--cases', 'all', '--out', out], { TMPDIR: tmp });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await until(() => stderr.includes('case pipe-missing:'), 120_000, 'the first case to finish');
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    const run: VerifyRun = JSON.parse(readFileSync(path.join(out, 'verify.json'), 'utf8'));
    expect(run.status).toBe('interrupted');
    expect(run.daemons.every((d) => d.shutdown !== 'running' && d.shutdown !== 'starting')).toBe(true);
    expect(readdirSync(tmp).filter((n) => n.startsWith('gpushare-mps-'))).toEqual([]);
    expect(r.stderr).toContain('run gpushare verify again');
  }, 180_000);

  it('passes shellcheck', async (context) => {
    await expectShellcheckClean(context, SCRIPT);
  });
});
