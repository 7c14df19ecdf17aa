import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { expect } from 'vitest';
import type { Run } from '../harness/bench/record/schema.js';
import { UserError } from '../harness/core/errors.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
/** gpushare's simulator (shipped in the package): the fake nvidia-smi, nvidia-cuda-mps-control and python3. */
export const FAKES = path.join(ROOT, 'simulator', 'bin');
export const CLI = path.join(ROOT, 'dist', 'harness', 'main.js');

/** A recorded real output: test/fixtures, or simulator/recorded for what the simulated nvidia-smi replays. */
export function fixture(name: string): string {
  const recorded = path.join(ROOT, 'simulator', 'recorded', name);
  return readFileSync(existsSync(recorded) ? recorded : path.join(ROOT, 'test', 'fixtures', name), 'utf8');
}

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

/** Runs the built CLI as a user would, with the given PATH and extra environment. */
export function cli(
  args: string[],
  env: Record<string, string> = {},
  options: { path?: string; timeoutMs?: number } = {},
) {
  return execa(process.execPath, [CLI, ...args], {
    reject: false,
    env: { ...env, PATH: options.path ?? fakePath() },
    timeout: options.timeoutMs ?? 60_000,
  });
}

/** The fast settings every end-to-end test uses. */
export const QUICK = ['--rounds', '6', '--max-rounds', '6', '--window-ms', '50'];

/** The committed real runs of the default suite (results/), oldest first. */
export function committedRuns(): string[] {
  const dir = path.join(ROOT, 'results');
  return readdirSync(dir)
    .map((name) => path.join(dir, name))
    .filter((run) => existsSync(path.join(run, 'run.json')))
    .sort();
}

/** The committed default H100 run (run schema 2) and the repeat made straight after it. */
export const DEFAULT_RUN = path.join(ROOT, 'results', '2026-11-22-h100-80gb-hbm3-d4099d');
export const REPEAT_RUN = path.join(ROOT, 'results', '2026-11-22-h100-80gb-hbm3-f89eae');

/** Copies a run directory and rewrites its run.json through `edit`. */
export function editedCopy(runDir: string, edit: (run: Run) => void): string {
  const copy = path.join(tempDir(), path.basename(runDir));
  cpSync(runDir, copy, { recursive: true });
  const file = path.join(copy, 'run.json');
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
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

/** Polls `condition` every 50 ms until it holds, failing with `what` after `deadlineMs`: a condition and a deadline, never a guess at how long a loaded machine takes. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  deadlineMs: number,
  what: string,
): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
