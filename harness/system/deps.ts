/** The real side effects: this machine's processes, clock, stdout, stderr and terminal. */
import { systemClock } from '../core/clock.js';
import type { AppDeps } from '../core/deps.js';
import { terminalColumns } from '../core/wrap.js';
import { execaRunner } from './proc/runner.js';
import { simulatedRunner, simulateRequested } from './simulator.js';

export function systemDeps(): AppDeps {
  // A reader that goes away (`gpushare bench | head`) must not stop a run half-way: drop the output.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  return {
    // GPUSHARE_SIMULATE=1: every command runs on the simulated GPU machine shipped in the package.
    runner: simulateRequested(process.env) ? simulatedRunner(execaRunner) : execaRunner,
    clock: systemClock,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    cwd: process.cwd(),
    // CI logs are not terminals even when a runner allocates a pty: plain lines there.
    terminal: {
      isTty: Boolean(process.stderr.isTTY) && !process.env.CI,
      columns: terminalColumns(process.stdout.columns || process.stderr.columns, process.env),
      nowMs: () => systemClock.monotonicUs() / 1000,
    },
  };
}
