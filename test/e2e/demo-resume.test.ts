/**
 * The hint an interrupted demo prints is a command that works as printed: run word for word (its
 * environment assignments and all) from a shell without GPUSHARE_SIMULATE, it finishes the run.
 */

import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, cli, runOnDisk, tempDir } from '../helpers.js';

/** This machine's PATH, without the simulator: what a user's shell has. */
const PLAIN_PATH = process.env.PATH ?? '';

describe('an interrupted demo', () => {
  it('says how to continue with a command that works as printed', async () => {
    const out = path.join(tempDir(), 'demo');
    const child = cli(['demo', '--out', out], {}, { path: PLAIN_PATH });
    const deadline = Date.now() + 120_000;
    while ((runOnDisk(out)?.trials.length ?? 0) < 2 && Date.now() < deadline) await sleep(50);
    child.kill('SIGINT');
    const interrupted = await child;
    expect(interrupted.exitCode).toBe(130);
    const hint = /\(continue with (.+)\)$/m.exec(interrupted.stderr)?.[1];
    expect(hint, interrupted.stderr).toBeDefined();
    // The words as a shell reads them (no quoting needed: the path is plain), gpushare being the built CLI.
    const words = (hint as string).split(' ');
    const env = Object.fromEntries(
      words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=') as [string, string]),
    );
    const argv = words.filter((w) => !/^[A-Z_]+=/.test(w));
    expect(argv[0]).toBe('gpushare');
    const resumed = await execa(process.execPath, [CLI, ...argv.slice(1)], {
      reject: false,
      env: { ...env, PATH: PLAIN_PATH },
      extendEnv: false,
      timeout: 150_000,
    });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(runOnDisk(out)?.status).toBe('complete');
  });

  it('continues with demo --resume too, the command a user of the demo reaches for', async () => {
    const out = path.join(tempDir(), 'demo');
    const child = cli(['demo', '--out', out], {}, { path: PLAIN_PATH });
    const deadline = Date.now() + 120_000;
    while ((runOnDisk(out)?.trials.length ?? 0) < 2 && Date.now() < deadline) await sleep(50);
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(130);
    const resumed = await cli(['demo', '--resume', out, '--quiet'], {}, { path: PLAIN_PATH });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(runOnDisk(out)?.status).toBe('complete');
    expect(runOnDisk(out)?.fingerprint.simulated).toBe(true);
  });
});
