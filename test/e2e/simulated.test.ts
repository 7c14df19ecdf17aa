/**
 * The simulated mode: GPUSHARE_SIMULATE=1 runs on the simulator shipped in the package
 * (simulator/, nothing of test/ on PATH), and a run made there says so everywhere (run id, run.json,
 * report, console); gate, fleet report and plan refuse to set it beside a real run. gpushare demo is
 * tested where a user meets it: from the installed package (package.test.ts).
 */
import { cpSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { cli, DEFAULT_RUN, expectOneLineError, QUICK, ROOT, tempDir, unfolded } from '../helpers.js';

/** This machine's PATH as it is: no fake nvidia-smi, MPS daemon or python3 on it. */
const PLAIN_PATH = process.env.PATH ?? '';
const SIMULATED = "SIMULATED: made on gpushare's simulator, not on a GPU";

describe('a run on the simulator', () => {
  const out = path.join(tempDir(), 'run');
  let bench: Awaited<ReturnType<typeof cli>>;
  let run: Run;

  beforeAll(async () => {
    bench = await cli(
      ['bench', '--out', out, '--modes', 'streams,timeslice', '--workloads', 'spin', ...QUICK],
      { GPUSHARE_SIMULATE: '1' },
      { path: PLAIN_PATH, timeoutMs: 120_000 },
    );
    run = JSON.parse(readFileSync(path.join(out, 'run.json'), 'utf8')) as Run;
  }, 180_000);

  it('GPUSHARE_SIMULATE=1 runs on the simulator shipped in the package, with nothing of test/ on PATH', () => {
    expect(bench.exitCode, bench.stderr).toBe(0);
    expect(run.fingerprint.nvidiaSmi.path).toBe(path.join(ROOT, 'simulator', 'bin', 'nvidia-smi'));
    expect(PLAIN_PATH).not.toContain(path.join(ROOT, 'simulator'));
  });

  it('says it is simulated in run.json, its run id, its report and on the console', () => {
    expect(run.fingerprint.simulated).toBe(true);
    expect(run.id).toMatch(/^\d{4}-\d{2}-\d{2}-simulated-h200-[0-9a-f]{6}$/);
    const report = readFileSync(path.join(out, 'report', `${run.id}.md`), 'utf8');
    expect(report.split('\n')[0]).toBe(
      `> **${SIMULATED}; its numbers are the simulator's arithmetic and say nothing about any GPU**`,
    );
    expect(bench.stdout.split('\n')[0]).toContain(SIMULATED);
    // Each chart says so above it.
    const charts = readdirSync(path.join(out, 'report', run.id)).filter((f) => f.endsWith('.svg'));
    expect(charts.length).toBeGreaterThan(0);
    for (const chart of charts)
      expect(readFileSync(path.join(out, 'report', run.id, chart), 'utf8'), chart).toContain(`>${SIMULATED}</text>`);
    expect(unfolded(bench.stderr)).toMatch(/trials on NVIDIA H200 \(SIMULATED: gpushare's simulator\)/);
  });

  it('a real run is not marked: committed runs load without the field, with no banner in their reports', async () => {
    const real = JSON.parse(readFileSync(path.join(DEFAULT_RUN, 'run.json'), 'utf8')) as Run;
    expect(real.fingerprint.simulated).toBeUndefined();
    const report = await cli(['report', DEFAULT_RUN, '--out', tempDir()]);
    expect(readFileSync(report.stdout.trim(), 'utf8')).not.toContain('SIMULATED');
  });

  it('is known by where its nvidia-smi is: the same program anywhere else (a real one, to gpushare) is not simulated', async () => {
    const elsewhere = tempDir();
    cpSync(path.join(ROOT, 'simulator'), elsewhere, { recursive: true });
    const fingerprint = async (bin: string) =>
      (
        JSON.parse(
          (await cli(['doctor', '--json'], {}, { path: `${bin}${path.delimiter}${PLAIN_PATH}` })).stdout,
        ) as Run['fingerprint']
      ).simulated;
    expect(await fingerprint(path.join(ROOT, 'simulator', 'bin'))).toBe(true);
    expect(await fingerprint(path.join(elsewhere, 'bin'))).toBe(false);
  });

  it('gate refuses a simulated run against a real baseline, and the reverse, even with --allow-mismatch', async () => {
    for (const [a, b] of [
      [out, DEFAULT_RUN],
      [DEFAULT_RUN, out],
    ] as const) {
      const result = await cli(['gate', a, '--baseline', b, '--allow-mismatch']);
      expect(result.exitCode).toBe(2);
      // Either way round, the simulated one is named as such.
      expectOneLineError(
        result.stderr,
        `gpushare: cannot gate a run against this baseline: run ${run.id} was made on gpushare's simulator and run ${path.basename(DEFAULT_RUN)} on a real GPU`,
      );
    }
    const itself = await cli(['gate', out, '--baseline', out]);
    expect(itself.exitCode, itself.stderr).not.toBe(2);
  });

  it('fleet report refuses a directory that mixes simulated and real runs', async () => {
    const fleet = tempDir();
    mkdirSync(path.join(fleet, 'node-a'));
    cpSync(out, path.join(fleet, 'node-a', 'run'), { recursive: true });
    cpSync(DEFAULT_RUN, path.join(fleet, 'node-b'), { recursive: true });
    const result = await cli(['fleet', 'report', fleet, '--out', tempDir()]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `gpushare: cannot merge simulated and real runs into one fleet report: run ${run.id} was made on gpushare's simulator`,
    );
  });

  it('plan refuses to plan a real GPU from a simulated run; alone, it plans the simulated GPU and says so', async () => {
    const plan = ['plan', '--models', '2', '--mem-gib', '2', '--sm-pct', '20', '--run', out];
    const real = await cli([...plan, '--gpu-model', 'H100-80GB']);
    expect(real.exitCode).toBe(2);
    expectOneLineError(
      real.stderr,
      `gpushare: cannot plan for a real H100-80GB from run ${run.id}: it was made on gpushare's simulator`,
    );
    const alone = await cli(plan);
    expect(alone.exitCode, alone.stderr).toBe(0);
    expect(alone.stdout.split('\n')[0]).toContain(SIMULATED);
    const json = await cli([...plan, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ simulated: true });
  });
});
