/** The real side effects: this machine's processes, clock, stdout, stderr and terminal. */
import path from 'node:path';
import { systemClock } from '../core/clock.js';
import type { AppDeps } from '../core/deps.js';
import { PACKAGE_ROOT } from '../core/paths.js';
import { execaRunner } from './proc/runner.js';

/** The fake nvidia-smi, nvidia-cuda-mps-control and python3 of the tests and of GPUSHARE_SIMULATE=1. */
export const FAKES_BIN = path.join(PACKAGE_ROOT, 'test', 'fakes', 'bin');

export function systemDeps(): AppDeps {
  // A reader that goes away (`gpushare bench | head`) must not stop a run half-way: drop the output.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  // GPUSHARE_SIMULATE=1 puts the fakes first on PATH: everything else, execa included, stays real.
  if (process.env.GPUSHARE_SIMULATE === '1')
    process.env.PATH = `${FAKES_BIN}${path.delimiter}${process.env.PATH ?? ''}`;
  return {
    runner: execaRunner,
    clock: systemClock,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    cwd: process.cwd(),
    // CI logs are not terminals even when a runner allocates a pty: plain lines there.
    terminal: {
      isTty: Boolean(process.stderr.isTTY) && !process.env.CI,
      columns: process.stderr.columns || 80,
      nowMs: () => systemClock.monotonicUs() / 1000,
    },
  };
}
