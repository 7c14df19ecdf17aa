/**
 * bench before it measures, in process: without nvidia-smi or with a failing one, --dry-run, bad
 * flags, an output directory that holds another run. The runs themselves: test/e2e/bench.test.ts.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRun } from '../../harness/bench/record/store.js';
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

  it('--dry-run prints the plan and an estimate anywhere; without a GPU it then refuses as bench would (exit 2)', async () => {
    const result = await cli(['bench', '--dry-run'], {}, { path: pathWithoutNvidia() });
    // Lines folded to the 80 columns read as one.
    const stdout = result.stdout.replace(/\n {2}(?=\S)(?!python3)/g, ' ');
    expect(stdout).toContain(
      'timeslice/gemm: 2 client(s), arms alone solo-c0 solo-c1 contended, at least 6 rounds (ABBA) = 24 trials',
    );
    expect(stdout).toContain('mig: decided at run time');
    expect(stdout).toMatch(
      /8 comparisons, at least 168 trials, about \d+ s \(estimate\), plus up to 45 s of extra rounds \(up to 34 more per comparison, 40 in all\) until every headline CI is within ±2\.0% and every graded one within ±1\.0%/,
    );
    expect(stdout).toMatch(
      /^estimate: \d+% of it inside measurement windows, assuming 8 s to start a comparison's clients cold \(and each workload's plain process, once\), 3 s prestarted and 1 s switched from the previous comparison's processes, and 8 s outside comparisons$/m,
    );
    const real = await cli(['bench', '--out', path.join(tempDir(), 'run')], {}, { path: pathWithoutNvidia() });
    expect(real.exitCode).toBe(2);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe(real.stderr);
  });

  it('--dry-run makes the checks the real run makes before measuring: thresholds, --out, skipped modes', async () => {
    const typo = path.join(tempDir(), 'typo.yaml');
    writeFileSync(typo, 'thresholds:\n  "mps/infre/slowdown": { max: 1.2 }\n');
    const thresholds = await cli(['bench', '--dry-run', '--config', typo]);
    expect(thresholds.exitCode).toBe(2);
    expectOneLineError(thresholds.stderr, 'thresholds pattern "mps/infre/slowdown" matches no metric of this run');
    const full = tempDir();
    writeFileSync(path.join(full, 'notes.txt'), 'mine\n');
    const out = await cli(['bench', '--dry-run', '--out', full]);
    expect(out.exitCode).toBe(2);
    expectOneLineError(out.stderr, `${full} is not empty and holds no gpushare run`);
    expect(readFileSync(path.join(full, 'notes.txt'), 'utf8')).toBe('mine\n');
    const fresh = path.join(tempDir(), 'new');
    expect((await cli(['bench', '--dry-run', '--out', fresh])).exitCode).toBe(0);
    expect(existsSync(fresh)).toBe(false);
    const mig = await cli(['bench', '--dry-run', '--modes', 'mig']);
    expect(mig.exitCode).toBe(3);
    expect(mig.stdout).toContain('mig: MIG is Disabled on GPU 0');
    expectOneLineError(mig.stderr, 'nothing would be measured: every mode asked for is skipped on this machine (mig)');
  });

  it.each([
    [['--rounds', '3', '--max-rounds', '3'], 'no extra rounds (--max-rounds 3 is --rounds)'],
    [['--rounds', '3', '--max-rounds', '4'], 'plus up to 45 s of extra rounds (up to 1 more per comparison, 4 in all)'],
  ])('--dry-run %j promises the extra rounds it may run: %s', async (flags, promise) => {
    const result = await cli(['bench', '--dry-run', '--modes', 'timeslice', '--workloads', 'spin', ...flags]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.replace(/\n {2}(?=\S)/g, ' ')).toContain(`(estimate), ${promise}`);
  });

  it('--dry-run --gpu of a GPU this machine lacks: refused in one line before any plan, as the run refuses it', async () => {
    const result = await cli(['bench', '--dry-run', '--gpu', '3']);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expectOneLineError(result.stderr, 'cannot bench here: no GPU with index 3: nvidia-smi lists 0');
    const real = await cli(['bench', '--gpu', '3', '--out', path.join(tempDir(), 'run')]);
    expect(result.stderr).toBe(real.stderr);
  });

  it('--dry-run --json prints the plan as JSON', async () => {
    const result = await cli(['bench', '--dry-run', '--json', '--modes', 'timeslice', '--workloads', 'gemm']);
    expect(result.exitCode).toBe(0);
    const plan = JSON.parse(result.stdout) as {
      dryRun: boolean;
      comparisons: Array<{ id: string; clients: number; arms: string[]; minTrials: number }>;
      minTrials: number;
    };
    expect(plan.dryRun).toBe(true);
    expect(plan.comparisons).toEqual([
      expect.objectContaining({
        id: 'timeslice/gemm',
        clients: 2,
        arms: ['alone', 'solo-c0', 'solo-c1', 'contended'],
        minTrials: 24,
      }),
    ]);
    expect(plan.minTrials).toBe(24);
  });

  it('a run in which every mode asked for was skipped measured nothing: exit 3, naming it', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, '--modes', 'mig', ...QUICK, '--quiet']);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('gpushare: nothing was measured: every mode asked for was skipped (mig)');
    expect((await loadRun(out)).status).toBe('complete');
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
