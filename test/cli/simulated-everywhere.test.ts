/**
 * A run made on gpushare's simulator says SIMULATED in every output of every command, and in every
 * report: one run of each kind (bench, bench --serve, capacity, capacity --serve, probe, mix, verify)
 * made in process on the simulator (runCli puts simulator/bin first on PATH), then each command that
 * makes or reads them. Where the words can go, they are the words; JSON carries `"simulated": true`,
 * JUnit a suite named SIMULATED.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gate } from '../../harness/bench/gate/gate.js';
import { gateMarkdown } from '../../harness/bench/gate/outputs.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { type CliResult, QUICK, ROOT, runCli, tempDir } from '../helpers.js';

/** The words every output of a simulated run starts with (what fits a first line of 80 columns). */
const SAYS = "SIMULATED: made on gpushare's simulator, not on a GPU";
const BANNER = `> **${SAYS}; its numbers are the simulator's arithmetic and say nothing about any GPU**`;
const SERVER = `node ${path.join(ROOT, 'simulator', 'openai-server.cjs')} --port {port} --ttft-ms 2 --itl-ms 1`;
const SERVE_FAST = [
  ...['--copies', '1', '--modes', 'timeslice', '--window-s', '0.2', '--ceiling-step-s', '0.05'],
  ...['--warmup-s', '0'],
];
const TOKENS = ['--input-tokens', '8', '--output-tokens', '8'];

/** The argv that makes each kind of run, its --out appended. */
const MAKE: Record<string, string[]> = {
  bench: ['bench', '--modes', 'streams,timeslice', '--workloads', 'spin', ...QUICK, '--quiet'],
  'bench --serve': ['bench', '--serve', SERVER, ...SERVE_FAST, ...TOKENS, '--rounds', '1'],
  capacity: ['capacity', '--slo-p99-ms', '2', '--clients', '1', '--modes', 'timeslice', '--window-ms', '200'],
  'capacity --serve': ['capacity', '--serve', SERVER, ...SERVE_FAST, ...TOKENS, '--max-step-s', '0.5'],
  probe: ['probe', '--probes', 'sm-cap,default-stream'],
  mix: ['mix', '--slo-p99-ms', '5', '--victim-qps', '1000', '--aggressors', 'compute', '--modes', 'timeslice'],
  verify: ['verify'],
};
const EXTRA: Record<string, string[]> = {
  capacity: ['--start-qps', '1000', '--max-steps', '2'],
  mix: ['--rounds', '1', '--window-ms', '100'],
};

const dirs: Record<string, string> = {};
const made: Record<string, CliResult> = {};
/** The report a run wrote beside it: report.md, or a bench run's report/<id>.md. */
const reportOf = (dir: string) => {
  if (readdirSync(dir).includes('report.md')) return readFileSync(path.join(dir, 'report.md'), 'utf8');
  const md = readdirSync(path.join(dir, 'report')).find((f) => f.endsWith('.md'));
  return readFileSync(path.join(dir, 'report', md as string), 'utf8');
};

beforeAll(async () => {
  const plan = path.join(tempDir(), 'plan');
  expect(
    (
      await runCli([
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
  for (const [kind, argv] of Object.entries(MAKE)) {
    dirs[kind] = path.join(tempDir(), 'run');
    const args = kind === 'verify' ? [...argv, plan] : argv;
    made[kind] = await runCli([...args, ...(EXTRA[kind] ?? []), '--out', dirs[kind] as string]);
  }
}, 180_000);

describe('SIMULATED in every output of a simulated run', () => {
  it.each(Object.keys(MAKE))('%s: its console summary and its report say so first', (kind) => {
    const result = made[kind] as CliResult;
    expect(result.exitCode, `${kind}\n${result.stderr}`).not.toBe(2);
    expect(result.stdout.split('\n')[0], kind).toBe(SAYS + result.stdout.split('\n')[0]?.slice(SAYS.length));
    expect(reportOf(dirs[kind] as string).split('\n')[0], kind).toBe(BANNER);
  });

  it.each(Object.keys(MAKE))('%s: show, report (markdown, HTML, JSON) say so', async (kind) => {
    const dir = dirs[kind] as string;
    const shown = await runCli(['show', dir]);
    expect(shown.stdout, kind).toContain(SAYS);
    const out = tempDir();
    const md = await runCli(['report', dir, '--out', out]);
    expect(readFileSync(md.stdout.trim(), 'utf8').split('\n')[0], kind).toBe(BANNER);
    const html = await runCli(['report', dir, '--format', 'html', '--out', out]);
    expect(readFileSync(html.stdout.trim(), 'utf8'), kind).toContain(SAYS);
    const json = await runCli(['report', dir, '--json']);
    expect(JSON.stringify(JSON.parse(json.stdout)), kind).toMatch(/"simulated":true/);
  });

  it('a run made with --json (a server run, a probe run) says so in its JSON', async () => {
    const serve = await runCli([...(MAKE['bench --serve'] as string[]), '--json', '--out', path.join(tempDir(), 'r')]);
    expect(JSON.parse(serve.stdout)).toMatchObject({ simulated: true });
    const probe = await runCli(['probe', '--probes', 'default-stream', '--json', '--out', path.join(tempDir(), 'r')]);
    expect(JSON.parse(probe.stdout)).toMatchObject({ simulated: true });
  });

  it('gate: its console text, its JUnit suite, its JSON and its step summary', async () => {
    const bench = dirs.bench as string;
    const junit = path.join(tempDir(), 'gate.xml');
    const text = await runCli(['gate', bench, '--baseline', bench, '--junit', junit]);
    expect(text.stdout.split('\n')[0]).toBe(SAYS + text.stdout.split('\n')[0]?.slice(SAYS.length));
    expect(readFileSync(junit, 'utf8')).toMatch(/<testsuite name="SIMULATED gpushare gate /);
    expect(JSON.parse((await runCli(['gate', bench, '--json'])).stdout)).toMatchObject({ simulated: true });
    const run = await loadRun(bench);
    expect(gateMarkdown(gate(run, null, run.config.thresholds, { allowMismatch: false })).split('\n')[0]).toBe(BANNER);
  });

  it('plan --run (its screen, --explain, --json; a server run too), artifacts --run and the files plan --out writes', async () => {
    const plan = ['plan', '--models', '2', '--mem-gib', '2', '--sm-pct', '20', '--run', dirs.bench as string];
    expect((await runCli(plan)).stdout).toContain(SAYS);
    expect((await runCli([...plan, '--explain'])).stdout).toContain(SAYS);
    expect(JSON.parse((await runCli([...plan, '--json'])).stdout)).toMatchObject({ simulated: true });
    const out = path.join(tempDir(), 'plan');
    expect((await runCli([...plan, '--out', out])).exitCode).toBe(0);
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain(SAYS);
    expect((await runCli(['plan', '--run', dirs['bench --serve'] as string])).stdout.split('\n')[0]).toContain(SAYS);
    const artifacts = path.join(tempDir(), 'artifacts');
    expect((await runCli(['artifacts', '--run', dirs.bench as string, '--out', artifacts])).exitCode).toBe(0);
    expect(readFileSync(path.join(artifacts, 'README.md'), 'utf8')).toContain(BANNER);
  });

  it('fleet report of simulated runs, and report of two of them side by side', async () => {
    const fleet = tempDir();
    for (const node of ['a', 'b']) {
      mkdirSync(path.join(fleet, node));
      cpSync(dirs.bench as string, path.join(fleet, node, 'run'), { recursive: true });
    }
    const out = tempDir();
    const result = await runCli(['fleet', 'report', fleet, '--out', out, '--name', 'sim']);
    expect(result.stdout.split('\n')[0]).toContain(SAYS);
    expect(readFileSync(path.join(out, 'fleet-sim.md'), 'utf8').split('\n')[0]).toBe(BANNER);
    // Its JSON and JUnit, as gate's: a field, and the suite's name.
    const junit = path.join(out, 'fleet.xml');
    const json = await runCli(['fleet', 'report', fleet, '--json', '--junit', junit, '--out', out]);
    expect(JSON.parse(json.stdout)).toMatchObject({ simulated: true });
    expect(readFileSync(junit, 'utf8')).toContain('<testsuite name="SIMULATED gpushare fleet');
    const both = await runCli(['report', dirs.bench as string, path.join(fleet, 'a', 'run'), '--out', out]);
    expect(readFileSync(both.stdout.trim(), 'utf8').split('\n')[0]).toBe(BANNER);
  });

  it('doctor, and check in its one line: the GPU the simulator plays is named SIMULATED', async () => {
    expect((await runCli(['doctor'])).stdout).toContain(SAYS);
    const check = await runCli(['check', '--', 'python3', path.join(ROOT, 'workloads', 'spin.py')]);
    expect(check.exitCode, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/^check passed: "spin" \(protocol 3, NVIDIA H200 \(SIMULATED\)\) ready in /);
  });
});
