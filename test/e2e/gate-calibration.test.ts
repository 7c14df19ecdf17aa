/**
 * docs/gate-calibration.md is the calibration's output: its command, run exactly as the page prints it
 * over the evidence store, prints the page's Output section byte for byte (issue 46). The script's own
 * refusals are one line and exit 2, wherever the directory stands among the flags.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { expectOneLineError, ROOT, tempDir } from '../helpers.js';

const SCRIPT = path.join(ROOT, 'dist', 'harness', 'cli', 'calibrate-gate.js');
const page = readFileSync(path.join(ROOT, 'docs', 'gate-calibration.md'), 'utf8');

/** The script as `npm run calibrate:gate -- <args>` runs it once built, from the repository's root. */
const calibrate = (args: string[]) =>
  execa(process.execPath, [SCRIPT, ...args], { cwd: ROOT, reject: false, stripFinalNewline: false });

describe('npm run calibrate:gate', () => {
  it("run as docs/gate-calibration.md prints it, reproduces the page's output from the store", async () => {
    const command = /```sh\nnpm run calibrate:gate -- ([^\n]+)\n```/.exec(page)?.[1];
    expect(command, 'the page names its command').toBe('evidence --measured 2026-11-24');
    const result = await calibrate((command as string).split(' '));
    expect([result.exitCode, result.stderr]).toEqual([
      0,
      expect.stringMatching(/^calibrate-gate: 58 runs in [\d.]+ s\n$/),
    ]);
    const output = page.slice(page.indexOf('## Output\n\n') + '## Output\n\n'.length);
    expect(result.stdout).toBe(output);
  }, 120_000);

  it('refuses a directory that is not there in one line, exit 2, given first or after the flags', async () => {
    const missing = path.join(tempDir(), 'nowhere');
    for (const args of [[missing], [missing, '--measured', '2026-11-24'], ['--measured', '2026-11-24', missing]]) {
      const result = await calibrate(args);
      expect([args.join(' '), result.exitCode]).toEqual([args.join(' '), 2]);
      expectOneLineError(result.stderr, `${missing}: no such directory of runs`);
    }
  });

  it('refuses too few runs, an unknown flag and a bad date in one line, exit 2', async () => {
    const empty = await calibrate([tempDir()]);
    expect(empty.exitCode).toBe(2);
    expectOneLineError(empty.stderr, 'need at least 4 default-suite runs measured alike');
    const flag = await calibrate(['evidence', '--mesured', '2026-11-24']);
    expect(flag.exitCode).toBe(2);
    expectOneLineError(flag.stderr, '--mesured: no such option');
    const date = await calibrate(['evidence', '--measured', 'yesterday']);
    expect(date.exitCode).toBe(2);
    expectOneLineError(date.stderr, '--measured yesterday: give a date as YYYY-MM-DD');
  });
});
