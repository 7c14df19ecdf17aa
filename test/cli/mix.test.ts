/**
 * `gpushare mix` through run(argv, deps) on the simulator's workloads, whose contention follows who runs
 * beside whom and the aggressor's cap: the matrix, overloaded cells, the protection search, the
 * artifacts it feeds, the refusals and the estimate.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { Cell, Protection } from '../../harness/mix/analysis.js';
import { loadMixRun, type MixRun } from '../../harness/mix/record.js';
import { expectOneLineError, H100_MIX_RUN, runCli, tempDir } from '../helpers.js';

/** 12800 req/s: the simulated victim's capacity at p99 ≤ 1 ms, so 50% of it overloads beside gemm time-sliced. */
const SMALL = [
  'mix',
  '--victim-qps',
  '12800',
  '--aggressors',
  'compute,pcie',
  '--modes',
  'timeslice,mps,streams,green',
  '--thread-pcts',
  '50,10',
  '--rounds',
  '1',
  '--window-ms',
  '100',
  '--json',
];

describe('gpushare mix on the simulator', () => {
  let dir = '';
  let json: { runId: string; status: string; cells: Cell[]; protections: Protection[] };
  let report = '';
  beforeAll(async () => {
    dir = path.join(tempDir(), 'mix');
    const result = await runCli([...SMALL, '--out', dir]);
    expect(result.exitCode, result.stderr).toBe(0);
    json = JSON.parse(result.stdout);
    report = readFileSync(path.join(dir, 'report.md'), 'utf8');
  }, 120_000);

  const cell = (mode: string, aggressor: string, load: number) =>
    json.cells.find((c) => c.column === mode && c.aggressor === aggressor && c.load === load) as Cell;

  it("measures the victim's p99 beside each aggressor as a ratio to alone, with its interval and requests", () => {
    const c = cell('mps', 'compute', 0.25);
    expect(c.status).toBe('measured');
    // 25% of 12800 req/s over one 100 ms window, in each arm.
    expect([c.alone?.requests, c.together?.requests]).toEqual([320, 320]);
    expect(c.p99?.value).toBeGreaterThan(1);
    // 320 requests are too few for the p99's interval (437 needed), 640 at 50% load are not.
    expect(c.p99?.ci).toBeNull();
    expect(report).toContain("the p99's needs 437 requests");
    const half = cell('mps', 'compute', 0.5);
    expect(half.together?.requests).toBe(640);
    expect(half.p99?.ci?.[0]).toBeLessThanOrEqual(half.p99?.value as number);
    expect(half.p99?.ci?.[1]).toBeGreaterThanOrEqual(half.p99?.value as number);
    // The simulator's pressure: gemm presses harder than the pipeline, time-sliced harder than under MPS, less capped.
    const ratio = (m: string, a: string) => cell(m, a, 0.25).p99?.value as number;
    expect(ratio('timeslice', 'compute')).toBeGreaterThan(ratio('mps', 'compute'));
    expect(ratio('mps', 'compute')).toBeGreaterThan(ratio('mps 50%', 'compute'));
    expect(ratio('mps 50%', 'compute')).toBeGreaterThan(ratio('mps 10%', 'compute'));
    expect(ratio('mps', 'compute')).toBeGreaterThan(ratio('mps', 'pcie'));
  });

  it("keeps the aggressor's throughput beside the victim ÷ alone, lower the harder it is capped", () => {
    const kept = (m: string) => cell(m, 'compute', 0.25).kept?.value as number;
    expect(kept('mps')).toBeLessThan(1);
    expect(kept('mps 50%')).toBeLessThan(kept('mps'));
    expect(kept('mps 10%')).toBeLessThan(kept('mps 50%'));
  });

  it('reports a victim that cannot keep up as overloaded with the rate it served, not as a p99 ratio', () => {
    const c = cell('timeslice', 'compute', 0.5);
    expect(c.status).toBe('overloaded');
    expect(c.p99).toBeNull();
    expect(c.reason).toMatch(/climbed through the window/);
    expect(c.together?.servedQps).toBeCloseTo(6400, 0);
    // It served all it was offered: the matrix says why it is overloaded (not "served 6400 of 6400"), and
    // the every-cell table gives the rate served.
    expect(report).toContain('| compute | overloaded: its latency climbed through the window; kept 0.52 |');
    expect(report).toMatch(/\| 50% \| compute \| timeslice \| overloaded: its latency climbed .*\| 6400 \/ 6400 \|/);
  });

  it('finds, per aggressor and load, the cap that holds p99 within 2× alone and keeps the most throughput', () => {
    const at = (a: string, load: number) => json.protections.find((p) => p.aggressor === a && p.load === load);
    // Beside gemm uncapped the victim's p99 is ×2.65 at 25% load, capped at 50% ×1.70: 50% holds and keeps more than 10%.
    expect(at('compute', 0.25)?.threadPct).toBe(50);
    expect(at('compute', 0.5)?.threadPct).toBe(10);
    // The pipeline presses little: uncapped holds.
    expect(at('pcie', 0.25)?.threadPct).toBe(100);
    expect(at('compute', 0.25)?.kept?.value).toBeCloseTo(cell('mps 50%', 'compute', 0.25).kept?.value as number, 6);
  });

  it('measures the victim on a high-priority stream, and in green contexts, in one process with each aggressor; MIG is not measured', () => {
    const c = cell('streams', 'compute', 0.25);
    expect(c.status).toBe('measured');
    expect(c.together?.requests).toBe(320);
    // The simulator: beside gemm on streams of one process ×1.3 service time, under MPS ×1.8.
    expect(c.p99?.value).toBeLessThan(cell('mps', 'compute', 0.25).p99?.value as number);
    expect(c.p99?.value).toBeGreaterThan(1);
    expect(c.kept?.value).toBeLessThan(1);
    // Green contexts of its own SMs: less still (×1.1).
    expect(cell('green', 'compute', 0.25).p99?.value).toBeLessThan(c.p99?.value as number);
    expect(report).toContain('MIG: skipped');
  });

  it('writes the matrix, the heat map and the frontier into the report, and grades the cap claim', () => {
    expect(report).toContain('## Interference matrix: victim at 25% of capacity');
    expect(report).toContain('| aggressor | timeslice | mps | mps 50% | mps 10% | streams | green |');
    expect(report).toContain('![interference matrix](report-heatmap.svg)');
    expect(readFileSync(path.join(dir, 'report-heatmap.svg'), 'utf8')).toContain('<svg');
    expect(readFileSync(path.join(dir, 'report-frontier.svg'), 'utf8')).toContain('<svg');
    expect(report).toMatch(/which protects a neighbour \| .* \| \*\*holds\*\*/);
    // Without the bandwidth aggressor there is no pair to judge interleaving by.
    expect(report).toMatch(/interleave at the SM level \| .* \| \*\*not measured\*\*/);
  });

  it("carries each aggressor's cap into the artifacts: the launcher and the pod specs", async () => {
    const out = path.join(tempDir(), 'artifacts');
    const result = await runCli(['artifacts', '--mix', dir, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const launcher = readFileSync(path.join(out, 'gpushare-mix-client.sh'), 'utf8');
    // The lowest cap over the loads: 10% for gemm (50% held only at 25% load), uncapped for the pipeline.
    expect(launcher).toContain('compute) export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10 ;;');
    expect(launcher).toContain('pcie) export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 ;;');
    expect(launcher).toContain('victim) unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE');
    const pods = parseAllDocuments(readFileSync(path.join(out, 'gpushare-mix-pods.yaml'), 'utf8')).map((d) => d.toJS());
    const env = (name: string) =>
      pods.find((p) => p?.metadata?.name === `gpushare-mix-${name}`)?.spec.containers[0].env ?? null;
    expect(env('compute')).toEqual([{ name: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', value: '10' }]);
    expect(env('victim')).toBeNull();
    expect(env('pcie')).toBeNull();
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain(
      "compute: 10%, which held at every load measured (up to 50% of the victim's capacity)",
    );
  });

  it('carries the caps the H100 run found (35ef80), each with the load it held up to and where none did', async () => {
    const out = path.join(tempDir(), 'artifacts');
    const result = await runCli(['artifacts', '--mix', H100_MIX_RUN, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const launcher = readFileSync(path.join(out, 'gpushare-mix-client.sh'), 'utf8');
    // The protection table of its report: at 25% load compute 50%, bandwidth 25%, pcie 50%, train 50%,
    // launch uncapped; at 50% only launch (uncapped) held.
    for (const [aggressor, threadPct] of [
      ['compute', 50],
      ['bandwidth', 25],
      ['pcie', 50],
      ['train', 50],
    ] as const) {
      expect(launcher).toContain(`  ${aggressor}) export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${threadPct} ;;`);
      expect(launcher).toContain(
        `#   ${aggressor}: ${threadPct}%, which held up to 25% of the victim's capacity; at 50% no cap measured held`,
      );
    }
    expect(launcher).toContain(
      "#   launch: 100%, which held at every load measured (up to 50% of the victim's capacity)",
    );
    const pods = parseAllDocuments(readFileSync(path.join(out, 'gpushare-mix-pods.yaml'), 'utf8')).map((d) => d.toJS());
    const env = (name: string) =>
      pods.find((p) => p?.metadata?.name === `gpushare-mix-${name}`)?.spec.containers[0].env ?? null;
    expect(env('bandwidth')).toEqual([{ name: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', value: '25' }]);
    expect(env('launch')).toBeNull();
  });

  it("sets the train row beside tally-bench's published A100 ratios, labelled other hardware", async () => {
    const out = path.join(tempDir(), 'train');
    const result = await runCli([
      'mix',
      '--victim-qps',
      '12800',
      '--aggressors',
      'train',
      '--modes',
      'timeslice',
      '--loads',
      '25',
      '--rounds',
      '1',
      '--window-ms',
      '100',
      '--out',
      out,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const text = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(text).toContain('## Beside published numbers (other hardware)');
    expect(text).toMatch(/\| timeslice \| ×[\d.]+ .*\| ×2\.7 \| 0\.51–0\.73 \|/);
    expect(text).toContain('This run: the victim at 25% of its capacity beside the `train` aggressor.');
    expect(report).not.toContain('Beside published numbers');
  });

  it('plan --mix writes the same caps beside an MPS recommendation', async () => {
    const out = path.join(tempDir(), 'plan');
    const args = ['plan', '--models', '2', '--mem-gib', '4', '--sm-pct', '50', '--gpu-model', 'H100-80GB'];
    const result = await runCli([...args, '--mix', dir, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('\nuse: MPS\n');
    expect(readFileSync(path.join(out, 'gpushare-mix-client.sh'), 'utf8')).toContain(
      'compute) export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10 ;;',
    );
  });

  it('gpushare report regenerates the report and its charts from the run, byte for byte', async () => {
    const out = tempDir();
    const id = json.runId;
    const result = await runCli(['report', dir, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(readFileSync(path.join(out, `${id}.md`), 'utf8')).toBe(report.replaceAll('(report-', `(${id}-`));
    for (const chart of ['heatmap', 'frontier'])
      expect(readFileSync(path.join(out, `${id}-${chart}.svg`), 'utf8')).toBe(
        readFileSync(path.join(dir, `report-${chart}.svg`), 'utf8'),
      );
  });

  it('--resume measures again the round a killed run was in, keeps the rounds before it, and completes', async () => {
    const copy = path.join(tempDir(), 'killed');
    cpSync(dir, copy, { recursive: true });
    const run = (await loadMixRun(dir)) as MixRun;
    const kept = run.windows.filter((w) => w.mode !== 'mps');
    // Killed in mps's first round, after its first window: the record as the harness left it.
    const edited = {
      ...run,
      status: 'running',
      finishedAt: null,
      current: { mode: 'mps', round: 0 },
      windows: [...kept, run.windows.find((w) => w.mode === 'mps')],
    };
    writeFileSync(path.join(copy, 'mix.json'), JSON.stringify(edited));
    const result = await runCli(['mix', '--resume', copy, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const resumed = (await loadMixRun(copy)) as MixRun;
    expect(resumed.status).toBe('complete');
    expect(resumed.resumes).toEqual([{ at: expect.any(String), windowsKept: kept.length }]);
    expect(resumed.windows.length).toBe(run.windows.length);
    expect(JSON.parse(result.stdout).protections).toEqual(json.protections);
  });

  it('records every window through its schema, and --resume of a complete run is refused', async () => {
    const run = await loadMixRun(dir);
    expect(run?.windows.length).toBeGreaterThan(0);
    expect(run?.windows.every((w) => w.invalid === null)).toBe(true);
    const again = await runCli(['mix', '--resume', dir]);
    expectOneLineError(again.stderr, 'holds a complete run');
  });
});

describe('gpushare mix refuses bad input in one line', () => {
  it.each([
    [['--protect', '3y'], '--protect 3y: give a multiple'],
    [['--aggressors', 'gpu'], 'unknown aggressor kind "gpu" in --aggressors'],
    [['--modes', 'mig'], 'unknown mode "mig" in --modes'],
    [['--thread-pcts', '100'], '--thread-pcts 100: needs a number from 1 to 99'],
  ])('%j', async (args, text) => {
    const result = await runCli(['mix', '--slo-p99-ms', '5', ...args]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, text);
  });

  it("needs the victim's target or its capacity", async () => {
    const result = await runCli(['mix']);
    expectOneLineError(result.stderr, '--slo-p99-ms is required');
  });

  it('names the file, the key and what is wrong in a scenario file', async () => {
    const file = path.join(tempDir(), 'scenario.yaml');
    writeFileSync(file, 'victim: infer\naggressors:\n  - compute\n  - name: My Job\n    command: [./job]\n');
    const bad = await runCli(['mix', '--slo-p99-ms', '5', '--scenario', file, '--dry-run']);
    expectOneLineError(bad.stderr, `${file}: aggressors.1`);
    writeFileSync(file, 'victim: infer\nwindow: 5\n');
    expectOneLineError((await runCli(['mix', '--scenario', file])).stderr, `${file}: (top level): Unrecognized key`);
  });

  it('takes a custom aggressor from a scenario file, and --dry-run prints the windows and the time on an H100', async () => {
    const file = path.join(tempDir(), 'scenario.yaml');
    writeFileSync(file, 'sloP99Ms: 5\naggressors:\n  - compute\n  - name: my-job\n    command: [./job, --big]\n');
    const result = await runCli(['mix', '--scenario', file, '--modes', 'timeslice', '--dry-run']);
    expect(result.exitCode, result.stderr).toBe(0);
    // A round: 2 loads alone, 2 aggressors alone, 2 × 2 together.
    expect(result.stdout).toContain('timeslice: 8 windows a round × 3 rounds of 800 ms');
  });

  it('sizes the default matrix for about 8 minutes on an H100', async () => {
    const result = await runCli(['mix', '--slo-p99-ms', '5', '--dry-run']);
    const [, minutes] = /about (\d+):\d\d on an H100/.exec(result.stdout) ?? [];
    expect(Number(minutes)).toBeGreaterThanOrEqual(6);
    expect(Number(minutes)).toBeLessThanOrEqual(8);
  });
});
