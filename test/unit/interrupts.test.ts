/**
 * The interrupt policy at its edge: a signal that comes after the last run wound down (it saw the first
 * signal, saved itself and stopped listening) but before the process ended is the policy's second
 * signal, and exits with 128 + the signal, not by Node's default (killed by the signal, no exit code).
 */
import path from 'node:path';
import { build } from 'esbuild';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers.js';

// The module alone, built from source for a plain Node process (dist/ holds only the CLI's bundle).
const MODULE = path.join(tempDir('gpushare-interrupts-'), 'interrupts.js');
beforeAll(async () => {
  await build({
    entryPoints: [path.join(ROOT, 'harness', 'session', 'interrupts.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: MODULE,
    logLevel: 'warning',
  });
});

describe('the interrupt policy', () => {
  it('a second Ctrl-C after the run wound down exits 130, not killed by the signal', async () => {
    // The run sees the first SIGINT, disposes its watch, and the process lingers (a report being written).
    const script = `
      const { watchInterrupts } = await import(${JSON.stringify(MODULE)});
      const watch = watchInterrupts(() => undefined);
      process.kill(process.pid, 'SIGINT');
      while (!watch.abort.aborted) await new Promise((r) => setImmediate(r));
      watch.dispose();
      process.kill(process.pid, 'SIGINT');
      setTimeout(() => process.exit(0), 20_000);
    `;
    const child = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false });
    expect([child.exitCode, child.signal ?? null]).toEqual([130, null]);
  });

  it('a Ctrl-C after a run finished, while the process is still ending, exits 130, not killed by the signal', async () => {
    // The run completed and stopped listening; the process lingers (a report, a child's exit) when Ctrl-C comes.
    const script = `
      const { watchInterrupts } = await import(${JSON.stringify(MODULE)});
      watchInterrupts(() => undefined).dispose();
      process.kill(process.pid, 'SIGINT');
      setTimeout(() => process.exit(0), 20_000);
    `;
    const child = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false });
    expect([child.exitCode, child.signal ?? null]).toEqual([130, null]);
  });
});
