/**
 * bench before it measures, in process: without nvidia-smi or with a failing one, --dry-run, bad
 * flags, an output directory that holds another run. The runs themselves: test/e2e/bench.test.ts.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectOneLineError, pathWithoutNvidia, QUICK, runCli, tempDir } from '../helpers.js';

const cli = runCli;

describe('gpushare bench refuses before it measures', () => {
  it('without nvidia-smi: exits 2 with one line pointing to doctor, and measures nothing', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out], {}, { path: pathWithoutNvidia() });
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'cannot bench here: nvidia-smi not found on PATH');
    expect(result.stderr).toContain('gpushare doctor');
    expect(existsSync(out)).toBe(false);
  });

  it('with a failing nvidia-smi: exits 2 quoting it', async () => {
    const result = await cli(['bench', '--out', path.join(tempDir(), 'run')], { FAKE_SMI: 'fail' });
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, "couldn't communicate with the NVIDIA driver");
  });

  it('--dry-run prints the plan and an estimate anywhere, GPU or not', async () => {
    const result = await cli(['bench', '--dry-run'], {}, { path: pathWithoutNvidia() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(
      'timeslice/gemm: 2 client(s), arms solo-c0 solo-c1 contended, at least 6 rounds (ABBA) = 18 trials',
    );
    expect(result.stdout).toContain('mig: decided at run time');
    expect(result.stdout).toMatch(
      /8 comparisons, at least 132 trials, about \d+ s \(estimate\), plus up to 45 s of extra rounds \(up to 40 per comparison\) until every headline CI is within ±2\.0% and every graded one within ±1\.0%/,
    );
  });

  it.each([
    [['--modes', 'warp'], 'unknown mode "warp" in --modes'],
    [['--rounds', '-1'], '--rounds -1: needs a number from 1 to 1000'],
    [['--bogus'], 'unknown flag --bogus for bench (see gpushare bench --help)'],
  ])('bad input %j: exit 2, one line, no stack trace', async (args, message) => {
    const result = await cli(['bench', ...args]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
  });

  it('refuses an output directory that holds a different run', async () => {
    const out = tempDir();
    writeFileSync(path.join(out, 'run.json'), JSON.stringify({ id: 'someone-else' }));
    const result = await cli(['bench', '--out', out, ...QUICK]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'already holds a different run (someone-else)');
  });
});
