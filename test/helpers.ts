import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const FAKES = path.join(ROOT, 'test', 'fakes', 'bin');
export const CLI = path.join(ROOT, 'dist', 'harness', 'main.js');

export function fixture(name: string): string {
  return readFileSync(path.join(ROOT, 'test', 'fixtures', name), 'utf8');
}

export function tempDir(prefix = 'gpushare-test-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

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
export function cli(args: string[], env: Record<string, string> = {}, options: { path?: string; timeoutMs?: number } = {}) {
  return execa(process.execPath, [CLI, ...args], {
    reject: false,
    env: { ...env, PATH: options.path ?? fakePath() },
    timeout: options.timeoutMs ?? 60_000,
  });
}

/** The fast settings every end-to-end test uses. */
export const QUICK = ['--rounds', '2', '--max-rounds', '2', '--window-ms', '100'];
