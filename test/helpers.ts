import { cpSync, existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { expect, type TestContext } from 'vitest';
import type { Run } from '../harness/bench/record/schema.js';
import { run as runArgv } from '../harness/cli/run.js';
import { systemClock } from '../harness/core/clock.js';
import { UserError } from '../harness/core/errors.js';
import { SIMULATOR_BIN } from '../harness/core/paths.js';
import { openRun, STORE_DIR, STORED_RUN_SUFFIX } from '../harness/record/evidence.js';
import { createRunner, execaRunner } from '../harness/system/proc/runner.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
/** gpushare's simulator (shipped in the package): the fake nvidia-smi, nvidia-cuda-mps-control and python3. */
export const FAKES = SIMULATOR_BIN;
export const CLI = path.join(ROOT, 'dist', 'harness', 'main.js');

/** A recorded real output: test/fixtures, or simulator/recorded for what the simulated nvidia-smi replays. */
export function fixture(name: string): string {
  const recorded = path.join(ROOT, 'simulator', 'recorded', name);
  return readFileSync(existsSync(recorded) ? recorded : path.join(ROOT, 'test', 'fixtures', name), 'utf8');
}

/** A fresh directory under the suite's temporary root (TMPDIR, set by test/setup/temp-root.ts), which goes when the suite ends. */
export function tempDir(prefix = 'gpushare-test-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A fake `torch` package (test/fakes/python): put on PYTHONPATH, the real Python helper runs on the CPU. */
export const FAKE_TORCH = path.join(ROOT, 'test', 'fakes', 'python');

/** The real python3 of this machine (the tests' PATH, without the simulator's): runs the Python helper itself. */
export const PYTHON = 'python3';

/** PATH with the fakes first: nvidia-smi, nvidia-cuda-mps-control and python3 are the fakes. */
export function fakePath(): string {
  return `${FAKES}${path.delimiter}${process.env.PATH ?? ''}`;
}

/** A PATH holding only node and the fake python3: a machine without NVIDIA's tools. */
export function pathWithoutNvidia(): string {
  const dir = tempDir('gpushare-bin-');
  symlinkSync(process.execPath, path.join(dir, 'node'));
  symlinkSync(path.join(FAKES, 'python3'), path.join(dir, 'python3'));
  return dir;
}

/** What one run of the CLI printed (less one final newline, as execa gives it) and returned. */
export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs argv through `run(argv, deps)` in this process, as main does, with fake deps: output captured,
 * the processes it starts given the fakes first on PATH (or `options.path`) and `env` on top of this
 * process's environment, which stays untouched, so runs may overlap. `cwd` (default: a fresh empty
 * directory) is where default output (runs/results/, runs/reports/) would go. A bug, which main would print
 * with its stack and exit 70, rejects.
 */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  options: { path?: string; cwd?: string } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const exitCode = await runArgv(args, {
    runner: createRunner({ ...process.env, ...env, PATH: options.path ?? fakePath() }),
    clock: systemClock,
    out: (text) => {
      stdout += text;
    },
    err: (text) => {
      stderr += text;
    },
    cwd: options.cwd ?? tempDir(),
    terminal: { isTty: false, columns: 80, nowMs: () => systemClock.monotonicUs() / 1000 },
  });
  const chomp = (text: string) => text.replace(/\n$/, '');
  return { exitCode, stdout: chomp(stdout), stderr: chomp(stderr) };
}

/** Runs the built CLI as a user would, with the given PATH and extra environment. */
export function cli(
  args: string[],
  env: Record<string, string> = {},
  options: { path?: string; timeoutMs?: number } = {},
) {
  return execa(process.execPath, [CLI, ...args], {
    reject: false,
    env: { ...env, PATH: options.path ?? fakePath() },
    // A test that sends SIGTERM checks how the CLI winds down: no SIGKILL from execa 5 s later, which
    // on a loaded machine could come before the CLI had quit its daemon and saved its run.
    forceKillAfterDelay: false,
    // Below the e2e tests' 180 s deadline: a run killed here fails its test with what it printed.
    timeout: options.timeoutMs ?? 150_000,
  });
}

/** A line as it would print from a checkout at `/repo`: for measuring widths without the clone's path in them. */
export function atShortPath(line: string): string {
  return line.replaceAll(ROOT, '/repo');
}

/** Folded text as one run of words: each line break and the indent after it one space, whatever the indent (doctor folds under its text column). */
export function joined(text: string): string {
  return text.replace(/\n\s+/g, ' ');
}

/** Command lines folded as shell continuations (` \\` then an indent) made whole again: what a dry run prints, at any checkout path. */
export function unbroken(text: string): string {
  return text.replace(/ \\\n +/g, ' ');
}

/** The fast settings every end-to-end test uses. */
export const QUICK = ['--rounds', '6', '--max-rounds', '6', '--window-ms', '50'];

/** Text folded by wrapLine made whole again: each continuation line (indented 2 past its line) joined back with a space. */
export function unfolded(text: string): string {
  return text.replace(/\n {4}(?=\S)/g, ' ').replace(/\n {2}(?![-!] )(?=\S)/g, ' ');
}

/**
 * The committed real runs tests read: a reference run under results/, or a run of the evidence store
 * (evidence/<id>.tar.br, unpacked once into gpushare's cache). Both are written once and never replaced,
 * so no new or rerun run changes what a test sees; test/fixtures/runs/README.md says what each is for.
 */
async function committedRun(id: string): Promise<string> {
  const reference = path.join(ROOT, 'results', id);
  if (existsSync(reference)) return reference;
  return openRun(path.join(ROOT, STORE_DIR, `${id}${STORED_RUN_SUFFIX}`));
}

/** The runs the tests read, by id (test/fixtures/runs/README.md). */
export const FIXTURE_RUN_IDS = [
  '2026-11-21-h200-a6c68a',
  '2026-11-21-h200-d7edc0',
  '2026-11-22-h100-80gb-hbm3-c263f1',
  '2026-11-22-h100-80gb-hbm3-c67faf',
  '2026-11-22-h100-80gb-hbm3-d4099d',
  '2026-11-22-h100-80gb-hbm3-e4176e',
  '2026-11-22-h100-80gb-hbm3-f89eae',
  '2026-11-23-h100-80gb-hbm3-capacity-7490ed',
  '2026-11-23-h100-80gb-hbm3-probe-84e6b8',
  '2026-11-23-h200-x2-73884e',
  '2026-11-24-h100-80gb-hbm3-mix-35ef80',
  '2026-11-27-h100-80gb-hbm3-01535a',
  '2026-11-27-h100-80gb-hbm3-2c8cff',
  '2026-11-27-h100-80gb-hbm3-serve-501b6b',
  '2026-11-27-h100-80gb-hbm3-serve-c2aa92',
] as const;
type FixtureRunId = (typeof FIXTURE_RUN_IDS)[number];
const fixtureRun = (id: FixtureRunId) => committedRun(id);

let fixtureDir: Promise<string> | undefined;
/** A directory holding a copy of every fixture run, each named by its id, as a user's results/ would (made once per test process). */
export function fixtureRunsDir(): Promise<string> {
  fixtureDir ??= (async () => {
    const dir = tempDir('gpushare-fixture-runs-');
    for (const id of FIXTURE_RUN_IDS) cpSync(await fixtureRun(id), path.join(dir, id), { recursive: true });
    return dir;
  })();
  return fixtureDir;
}

/** The default H100 run (run schema 2) and the repeat made straight after it. */
export const DEFAULT_RUN = await fixtureRun('2026-11-22-h100-80gb-hbm3-d4099d');
export const REPEAT_RUN = await fixtureRun('2026-11-22-h100-80gb-hbm3-f89eae');
/** The default H100 suite at its older 250 ms windows, and the repeat made after it. */
export const H100_RUN = await fixtureRun('2026-11-22-h100-80gb-hbm3-e4176e');
export const H100_REPEAT_RUN = await fixtureRun('2026-11-22-h100-80gb-hbm3-c263f1');
/** The default H100 suite through protocol loop 2 (2026-11-27), each process's loop checked: the README's sample. */
export const LOOP2_RUN = await fixtureRun('2026-11-27-h100-80gb-hbm3-2c8cff');
/** The first H200 run, of run schema 1 (read through the migration): every mode, MPS measured cheaper. */
export const H200_RUN = await fixtureRun('2026-11-21-h200-a6c68a');
/** An H200 run of the streams mode alone (run schema 1). */
export const H200_STREAMS_RUN = await fixtureRun('2026-11-21-h200-d7edc0');
/** The mix matrix on the H100 (2026-11-24): victim infer beside five aggressors, time-sliced, MPS with caps, in one process. */
export const H100_MIX_RUN = await fixtureRun('2026-11-24-h100-80gb-hbm3-mix-35ef80');
/** The H100 client sweep (2026-11-27): infer at 2, 4 and 8 clients and tenants in every mode but MIG. */
export const H100_SWEEP_RUN = await fixtureRun('2026-11-27-h100-80gb-hbm3-01535a');
/** resnet18 through examples/torchvision_model.py on the H100: a custom workload, time-sliced and MPS. */
export const CUSTOM_RUN = await fixtureRun('2026-11-22-h100-80gb-hbm3-c67faf');
/** A capacity run on the H100 (capacity.json). */
export const CAPACITY_RUN = await fixtureRun('2026-11-23-h100-80gb-hbm3-capacity-7490ed');
/** A probe run on the H100 (probe.json). */
export const PROBE_RUN = await fixtureRun('2026-11-23-h100-80gb-hbm3-probe-84e6b8');
/** A bench --serve run on the H100 (serve.json): the reference server, every mode at 1, 2 and 4 copies. */
export const SERVE_RUN = await fixtureRun('2026-11-27-h100-80gb-hbm3-serve-501b6b');
/** A capacity --serve run on the H100 (serve.json). */
export const SERVE_CAPACITY_RUN = await fixtureRun('2026-11-27-h100-80gb-hbm3-serve-c2aa92');
/** A two-GPU H200 host (--gpus all): host.json, gpu0/, gpu1/ and the cross run. */
export const MULTI_GPU_RUN = await fixtureRun('2026-11-23-h200-x2-73884e');

/** Copies a run directory and rewrites its record (run.json, or `recordFile`, e.g. serve.json) through `edit`. */
export function editedCopy<R = Run>(runDir: string, edit: (run: R) => void, recordFile = 'run.json'): string {
  const copy = path.join(tempDir(), path.basename(runDir));
  cpSync(runDir, copy, { recursive: true });
  const file = path.join(copy, recordFile);
  const run = JSON.parse(readFileSync(file, 'utf8')) as R;
  edit(run);
  writeFileSync(file, JSON.stringify(run));
  return copy;
}

/** Makes every headline ratio 10% worse: K-stream work 10% slower, contended clients 10% less done. */
export function degrade(run: Run, factor = 1.1): void {
  const modeOf = new Map(run.plan.map((c) => [c.id, c.mode]));
  for (const trial of run.trials) {
    if (trial.status !== 'ok') continue;
    const streams = modeOf.get(trial.comparisonId) === 'streams';
    for (const client of trial.clients) {
      if (streams && client.variant.streams > 1) client.gpuMs *= factor;
      if (!streams && trial.arm === 'contended') client.iterations = Math.round(client.iterations / factor);
    }
  }
}

/** A user error: one line on stderr, containing `text`, and no stack trace. */
export function expectOneLineError(stderr: string, text: string): void {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).toContain(text);
  expect(stderr).not.toMatch(/\n\s+at /);
}

/** The message of the UserError that `fn` throws (fails the test if it throws nothing or something else). */
export function userErrorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof UserError) return error.message;
    throw error;
  }
  throw new Error('expected a UserError');
}

/** run.json as it is on disk now, or null while it is not there yet (a run in progress). */
export function runOnDisk(out: string): Run | null {
  try {
    return JSON.parse(readFileSync(path.join(out, 'run.json'), 'utf8')) as Run;
  } catch {
    return null;
  }
}

/**
 * How many times slower than an idle machine this one is now: the 1-minute load average over the cores,
 * at least 1 and at most 4. A deadline scales by it, so that a busy machine gets the time it needs and an
 * idle one still fails fast.
 */
export function loadFactor(load = os.loadavg()[0] ?? 0, cores = os.availableParallelism()): number {
  return Math.min(4, Math.max(1, load / cores));
}

/**
 * Polls `condition` every 50 ms until it holds, failing with `what` after `deadlineMs` times the machine's
 * load factor (read at each poll): a condition and a deadline, never a guess at how long a loaded machine takes.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  deadlineMs: number,
  what: string,
): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    const allowedMs = deadlineMs * loadFactor();
    if (Date.now() - start > allowedMs)
      throw new Error(`timed out after ${Math.round(allowedMs)} ms (${deadlineMs} ms × load) waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const warnedAbout = new Set<string>();

/**
 * Fails or skips a test that needs `tool`: a test must not pass when the tool it checks is absent.
 * Missing under CI=true (CI installs it), the test fails naming the tool; elsewhere it is skipped with
 * one line saying what to install.
 */
export async function requireTool(context: TestContext, tool: string, install: string): Promise<void> {
  if ((await execaRunner.which(tool)) !== null) return;
  if (process.env.CI === 'true') throw new Error(`${tool} is not on PATH, and CI=true needs it: ${install}`);
  // Said once per test file on stderr, and with each skipped test in the reporter.
  if (!warnedAbout.has(tool))
    console.warn(`gpushare tests: ${tool} is not installed, so the tests that need it are skipped: ${install}`);
  warnedAbout.add(tool);
  context.skip(`${tool} is not installed: ${install} to run this test`);
}

/** shellcheck finds nothing in `file` (every severity); without shellcheck, skipped or, under CI=true, failed. */
export async function expectShellcheckClean(context: TestContext, file: string): Promise<void> {
  await requireTool(context, 'shellcheck', 'install shellcheck (e.g. apt-get install shellcheck)');
  const result = await execa('shellcheck', [file], { reject: false });
  expect([file, result.exitCode, result.stdout, result.stderr]).toEqual([file, 0, '', '']);
}

/** The environment npm gets in the tests: the CA bundle the suite's global setup took from every other process. */
export const NPM_ENV: Record<string, string> =
  process.env.GPUSHARE_SUITE_NPM_CA !== undefined ? { NODE_EXTRA_CA_CERTS: process.env.GPUSHARE_SUITE_NPM_CA } : {};

/** For fleet tests: copies run `from` to `<fleet>/<to>` as GPU `index` with UUID `uuid`, its run.json edited by `edit`. */
export function placeRun(
  fleet: string,
  from: string,
  to: string,
  uuid: string,
  index = 0,
  edit: (run: Run) => void = () => undefined,
): void {
  const dir = path.join(fleet, to);
  cpSync(from, dir, { recursive: true });
  const file = path.join(dir, 'run.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.config.gpuIndex);
  if (gpu) Object.assign(gpu, { uuid, index });
  run.config.gpuIndex = index;
  edit(run);
  writeFileSync(file, JSON.stringify(run));
}
