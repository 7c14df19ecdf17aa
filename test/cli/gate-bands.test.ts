/**
 * The gate's between-run band (harness/bench/gate/bands.ts) on copies of a committed run: the band
 * learned from a directory of baseline runs or the default floor, where it places its edge, and the
 * exit codes on either side of it.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { DEFAULT_RUN, expectOneLineError, runCli, tempDir, unfolded } from '../helpers.js';

interface GateJson {
  exitCode: number;
  setAside: string[];
  history: string[];
  baselines: string[];
  changes: Array<{
    metricId: string;
    status: string;
    change: number;
    band: {
      source: string;
      runs: number | null;
      between: number;
      betweenSd: number;
      within: number;
      halfWidth: number;
      smallestCaught: { power: number; change: number };
    } | null;
  }>;
}

// z(0.95) and z(0.975); t(99.5%, 57 df), the floors' 58 runs (scipy.stats gives the same to 4 decimals).
const Z95 = 1.6449;
const Z975 = 1.96;
const T_FLOOR = 2.9204;

/** The smallest change the gate states it catches in 95% of runs, from its band's parts (docs/statistics-and-gate.md). */
const caughtLog = (band: NonNullable<GateJson['changes'][number]['band']>, betweenSdLog: number) =>
  Math.log1p(band.halfWidth) + Z95 * Math.hypot(betweenSdLog, Math.log1p(band.within) / Z975);

const GEMM = 'timeslice/gemm';
/** The fixture run's release lead before each window. */
const DEFAULT_LEAD_MS = (JSON.parse(readFileSync(path.join(DEFAULT_RUN, 'run.json'), 'utf8')) as Run).config
  .releaseLeadMs;
const SPIN = 'timeslice/spin';

/** A copy of the fixture run under `dir` with its own id, one comparison's contended clients doing `keep` × the work per second. */
function copy(dir: string, id: string, slowed: Record<string, number> = {}, edit: (run: Run) => void = () => {}) {
  const to = path.join(dir, id);
  cpSync(DEFAULT_RUN, to, { recursive: true });
  const file = path.join(to, 'run.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
  run.id = id;
  for (const trial of run.trials) {
    const keep = slowed[trial.comparisonId];
    if (keep === undefined || trial.arm !== 'contended' || trial.status !== 'ok') continue;
    // The same iterations over a window 1 ÷ keep as long: every per-round slowdown of the comparison
    // moves by exactly 1 ÷ keep (iterations are integers in the schema, windows are not).
    for (const client of trial.clients)
      client.windowEndUs = client.windowStartUs + (client.windowEndUs - client.windowStartUs) / keep;
  }
  edit(run);
  writeFileSync(file, JSON.stringify(run));
  return to;
}

const gateJson = async (args: string[]) => {
  const result = await runCli(['gate', ...args, '--json']);
  return { exitCode: result.exitCode, json: JSON.parse(result.stdout) as GateJson, stderr: result.stderr };
};
const changeOf = (gate: GateJson, id: string) => gate.changes.find((c) => c.metricId === id);
/** The console's line under a ratio's row: its change [CI], band (from), what it catches, status (whole: the layout fits 80 columns unfolded). */
const changeLine = (stdout: string, id: string) => {
  const lines = stdout.split('\n');
  return lines[lines.findIndex((l) => l.startsWith(`${id} `)) + 1]?.trim().split(/ {2,}/);
};

describe('gate --baseline <directory of runs>', () => {
  // Four baseline runs whose timeslice/gemm slowdowns differ by a few per cent, as runs on different GPUs do.
  const root = tempDir();
  const baselines = path.join(root, 'baselines');
  mkdirSync(baselines);
  const factors = [0.96, 1, 1.04, 1];
  for (const [i, f] of factors.entries()) copy(baselines, `base-${i}`, { [GEMM]: f });

  it('learns the band from the runs, names them, and sets aside a run measured differently', async () => {
    const other = copy(baselines, 'other-window', {}, (run) => void (run.config.windowMs = 300));
    const fewer = copy(baselines, 'fewer', {}, (run) => {
      run.plan = run.plan.filter((c) => c.id !== 'mps/infer');
      run.trials = run.trials.filter((t) => t.comparisonId !== 'mps/infer');
    });
    const candidate = copy(root, 'candidate');
    const { exitCode, json } = await gateJson([candidate, '--baseline', baselines]);
    rmSync(other, { recursive: true });
    rmSync(fewer, { recursive: true });
    expect(exitCode).toBe(0);
    expect(json.baselines).toEqual(['base-0', 'base-1', 'base-2', 'base-3']);
    expect(json.history).toEqual(json.baselines);
    expect(json.setAside).toEqual([
      expect.stringMatching(/^fewer: other comparisons \(streams\/spin, .*mps\/gemm\)$/),
      'other-window: window: 300 ms before vs 500 ms now',
    ]);
    const gemm = changeOf(json, `${GEMM}/slowdown`);
    expect(gemm?.band).toMatchObject({ source: 'learned', runs: 4 });
    // t(99.5%, 3 df) = 7.453 × the SD of the four runs' log slowdowns × √(1 + 1/4): the spread, not the rounds.
    const logs = factors.map((f) => -Math.log(f));
    const mean = logs.reduce((s, x) => s + x, 0) / logs.length;
    const sd = Math.sqrt(logs.reduce((s, x) => s + (x - mean) ** 2, 0) / (logs.length - 1));
    expect(Math.log1p(gemm?.band?.between ?? 0)).toBeCloseTo(7.453 * sd * Math.sqrt(1.25), 3);
  });

  it('a candidate just inside the band is unchanged (exit 0), just outside it regressed (exit 1)', async () => {
    const first = await gateJson([copy(root, 'probe'), '--baseline', baselines]);
    const gemm = changeOf(first.json, `${GEMM}/slowdown`);
    const edge = Math.log1p(gemm?.band?.halfWidth ?? Number.NaN);
    // The band is the learned spread's, far wider than the change's own within-run CI and the noise band.
    expect(edge).toBeGreaterThan(Math.hypot(Math.log1p(gemm?.band?.within ?? 0), Math.log(1.02)) * 3);
    const start = Math.log(gemm?.change ?? Number.NaN);
    const at = async (offset: number) => {
      // Slowdown ÷ keep: the change lands at edge + offset on the log scale.
      const keep = Math.exp(start - (edge + offset));
      return gateJson([copy(root, `at-${offset}`, { [GEMM]: keep }), '--baseline', baselines]);
    };
    const inside = await at(-1e-4);
    expect([changeOf(inside.json, `${GEMM}/slowdown`)?.status, inside.exitCode]).toEqual(['unchanged', 0]);
    const outside = await at(1e-4);
    expect([changeOf(outside.json, `${GEMM}/slowdown`)?.status, outside.exitCode]).toEqual(['regression', 1]);
  });

  it("states the smallest change it catches in 95% of runs: the band + z(0.95) × the change's spread, learned", async () => {
    const candidate = copy(root, 'power');
    const { json } = await gateJson([candidate, '--baseline', baselines]);
    const gemm = changeOf(json, `${GEMM}/slowdown`);
    const band = gemm?.band;
    if (!band) throw new Error('no band');
    // The spread of the four runs' log slowdowns × √(1 + 1/4): what the band's between-run part stands for.
    const logs = factors.map((f) => -Math.log(f));
    const mean = logs.reduce((x, y) => x + y, 0) / logs.length;
    const sd = Math.sqrt(logs.reduce((x, y) => x + (y - mean) ** 2, 0) / (logs.length - 1)) * Math.sqrt(1.25);
    expect(Math.log1p(band.betweenSd)).toBeCloseTo(sd, 4);
    expect(band.smallestCaught.power).toBe(0.95);
    // A slowdown: the ratio rises; caught beyond the band's edge by z(0.95) of its spread.
    expect(Math.log1p(band.smallestCaught.change)).toBeCloseTo(caughtLog(band, sd), 3);
    expect(band.smallestCaught.change).toBeGreaterThan(band.halfWidth);
    const caught = `+${(band.smallestCaught.change * 100).toFixed(1)}%`;
    const text = await runCli(['gate', candidate, '--baseline', baselines]);
    expect(text.stdout).toMatch(/^ {2}change \[within-run 95% CI\] +band \(from\) +catches at 95% +status$/m);
    expect(text.stdout).toContain(`±${(band.halfWidth * 100).toFixed(1)}% (4 runs)`);
    expect(changeLine(text.stdout, `${GEMM}/slowdown`)).toEqual([
      expect.stringMatching(/^[-+]0\.0% \[[\d.]+, [\d.]+\]$/),
      `±${(band.halfWidth * 100).toFixed(1)}% (4 runs)`,
      caught,
      'unchanged',
    ]);
  });

  it('sets aside a baseline of another harness generation (release lead, gpushare version), naming why once', async () => {
    const set = path.join(root, 'generations');
    for (const i of [0, 1, 2])
      cpSync(path.join(baselines, `base-${i}`), path.join(set, `base-${i}`), { recursive: true });
    copy(set, 'lead-10', {}, (run) => void (run.config.releaseLeadMs = 10));
    copy(set, 'old-harness', {}, (run) => void (run.tool.version = '0.0.0'));
    const candidate = copy(root, 'generation');
    const { exitCode, json } = await gateJson([candidate, '--baseline', set]);
    expect(exitCode).toBe(0);
    expect(json.baselines).toEqual(['base-0', 'base-1', 'base-2']);
    const lead = DEFAULT_LEAD_MS;
    expect(json.setAside).toEqual([
      `lead-10: release lead: 10 ms before vs ${lead} ms now`,
      'old-harness: gpushare version: 0.0.0 before vs 0.1.0 now',
    ]);
    // One such run named as the baseline: refused, as for the protocol loop, unless --allow-mismatch.
    const one = await runCli(['gate', candidate, '--baseline', path.join(set, 'lead-10')]);
    expect(one.exitCode).toBe(2);
    expectOneLineError(
      one.stderr,
      `refusing to compare runs measured differently: release lead: 10 ms before vs ${lead} ms now; --allow-mismatch`,
    );
    const allowed = await gateJson([candidate, '--baseline', path.join(set, 'old-harness'), '--allow-mismatch']);
    expect(allowed.exitCode).toBe(0);
  });

  it('a quoted glob names the same runs', async () => {
    const { json } = await gateJson([copy(root, 'globbed'), '--baseline', path.join(baselines, 'base-*')]);
    expect(json.baselines).toEqual(['base-0', 'base-1', 'base-2', 'base-3']);
    expect(changeOf(json, `${GEMM}/slowdown`)?.band).toMatchObject({ source: 'learned', runs: 4 });
  });

  it('--history learns the band from other runs while the change is taken against one run', async () => {
    const { json } = await gateJson([
      copy(root, 'against-one'),
      '--baseline',
      path.join(baselines, 'base-1'),
      '--history',
      baselines,
    ]);
    expect(json.baselines).toEqual(['base-1']);
    expect(json.history).toEqual(['base-0', 'base-1', 'base-2', 'base-3']);
    const gemm = changeOf(json, `${GEMM}/slowdown`);
    expect(gemm?.band).toMatchObject({ source: 'learned', runs: 4 });
    // One reference run: √(1 + 1/1), not the √(1 + 1/4) of the four runs as the reference.
    const logs = factors.map((f) => -Math.log(f));
    const mean = logs.reduce((s, x) => s + x, 0) / logs.length;
    const sd = Math.sqrt(logs.reduce((s, x) => s + (x - mean) ** 2, 0) / (logs.length - 1));
    expect(Math.log1p(gemm?.band?.between ?? 0)).toBeCloseTo(7.453 * sd * Math.SQRT2, 3);
  });

  it('a run found twice is counted once, and named once as set aside; a run on a busy GPU is set aside, saying why', async () => {
    const set = path.join(root, 'with-twins');
    for (const i of [0, 1, 2])
      cpSync(path.join(baselines, `base-${i}`), path.join(set, `base-${i}`), { recursive: true });
    // base-0 again under two more names (copied twice, or linked), and a run measured with --allow-busy.
    cpSync(path.join(baselines, 'base-0'), path.join(set, 'base-0-again'), { recursive: true });
    cpSync(path.join(baselines, 'base-0'), path.join(set, 'base-0-copy'), { recursive: true });
    copy(set, 'busy', {}, (run) => void (run.contamination = ['another process held 12 GiB']));
    const { json } = await gateJson([copy(root, 'twins'), '--baseline', set]);
    expect(json.baselines).toEqual(['base-0', 'base-1', 'base-2']);
    expect(changeOf(json, `${GEMM}/slowdown`)?.band).toMatchObject({ source: 'learned', runs: 3 });
    expect(json.setAside).toEqual([
      'busy: it was measured on a busy GPU (another process held 12 GiB): its ratios are no reference',
      'base-0: found 3 times (one run id), counted once',
    ]);
    // --allow-mismatch keeps runs that differ only in GPU or settings, never one measured on a busy GPU.
    const allowed = await gateJson([copy(root, 'twins-allowed'), '--baseline', set, '--allow-mismatch']);
    expect(allowed.json.baselines).not.toContain('busy');
  });

  it('one named baseline measured on a busy GPU: named as the problem, exit 3', async () => {
    const busy = copy(root, 'busy-one', {}, (run) => void (run.contamination = ['utilization 80%']));
    const result = await runCli(['gate', copy(root, 'against-busy'), '--baseline', busy]);
    expect(result.exitCode).toBe(3);
    expect(unfolded(result.stdout)).toContain(
      'baseline busy-one: it was measured on a busy GPU (utilization 80%): its ratios are no reference',
    );
  });

  it('a directory with no runs in it: exit 2, one line', async () => {
    const result = await runCli(['gate', DEFAULT_RUN, '--baseline', tempDir()]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('no run directories there');
  });
});

describe('gate --baseline <one run>: the default floor', () => {
  it('a 2.5% worse timeslice/spin stays inside its ±3% floor (it would regress against its within-run CI and the noise band alone)', async () => {
    const root = tempDir();
    const baseline = copy(root, 'baseline');
    const worse = copy(root, 'worse', { [SPIN]: 1 / 1.025 });
    const { exitCode, json } = await gateJson([worse, '--baseline', baseline]);
    const spin = changeOf(json, `${SPIN}/slowdown`);
    expect(spin?.change).toBeCloseTo(1.025, 6);
    expect(spin?.band).toMatchObject({ source: 'floor', runs: null, between: 0.03 });
    // Without the between-run part the band would be the within-run CI and the noise band (2%) alone.
    expect(Math.max(spin?.band?.within ?? 1, 0.02)).toBeLessThan(0.025);
    expect([spin?.status, exitCode]).toEqual(['unchanged', 0]);
    // The floor stands for the spread of the 58 runs it was learned from: ±3% ÷ t(99.5%, 57).
    const band = spin?.band;
    if (!band) throw new Error('no band');
    expect(Math.log1p(band.betweenSd)).toBeCloseTo(Math.log1p(0.03) / T_FLOOR, 4);
    expect(Math.log1p(band.smallestCaught.change)).toBeCloseTo(caughtLog(band, Math.log1p(0.03) / T_FLOOR), 3);
    const caught = (band.smallestCaught.change * 100).toFixed(1);
    const text = await runCli(['gate', worse, '--baseline', baseline]);
    expect(changeLine(text.stdout, `${SPIN}/slowdown`)).toEqual([
      expect.stringMatching(/^\+2\.5% \[[\d.]+, [\d.]+\]$/),
      '±3.1% (floor)',
      `+${caught}%`,
      'unchanged',
    ]);
  });
});
