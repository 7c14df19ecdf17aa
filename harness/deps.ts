/** The side effects the commands use, gathered so main can swap in fakes in one place. */
import path from 'node:path';
import { systemClock, type Clock } from './clock.js';
import { PACKAGE_ROOT } from './paths.js';
import type { ProgressTerminal } from './progress.js';
import { execaRunner, type ProcessRunner } from './proc/runner.js';

export interface AppDeps {
  runner: ProcessRunner;
  clock: Clock;
  out: (text: string) => void;
  err: (text: string) => void;
  /** The working directory: default output goes under it (results/, reports/), never into the package. */
  cwd: string;
  /** Where progress is drawn: a bar on a terminal, plain lines elsewhere. */
  terminal: ProgressTerminal;
}

/** The fake nvidia-smi, nvidia-cuda-mps-control and python3 used by --fake-gpu and the tests. */
export const FAKES_BIN = path.join(PACKAGE_ROOT, 'test', 'fakes', 'bin');

export function systemDeps(options: { fakeGpu: boolean }): AppDeps {
  // A reader that goes away (`gpushare bench | head`) must not stop a run half-way: drop the output.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  // --fake-gpu puts the fakes first on PATH: everything else, execa included, stays real.
  if (options.fakeGpu) process.env.PATH = `${FAKES_BIN}${path.delimiter}${process.env.PATH ?? ''}`;
  return {
    runner: execaRunner,
    clock: systemClock,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    cwd: process.cwd(),
    // CI logs are not terminals even when a runner allocates a pty: plain lines there.
    terminal: { isTty: Boolean(process.stderr.isTTY) && !process.env.CI, columns: process.stderr.columns || 80, nowMs: () => systemClock.monotonicUs() / 1000 },
  };
}
