/**
 * The README is the front door: short, and its sample output the real summary of a committed run (not
 * typed by hand). Its links and citations resolve: test/e2e/citations.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOOP2_RUN, ROOT, runCli } from '../helpers.js';

const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README.md', () => {
  it('stays a front door: at most 15 KB', () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(15 * 1024);
  });

  it("shows the committed H100 run's summary exactly as gpushare show prints it", async () => {
    const sample = /<!-- sample: show (results\/[^ ]+) [^\n]*-->\n```text\n([\s\S]*?)\n```/.exec(readme);
    expect(sample, 'the README has no sample block').not.toBeNull();
    const [, shown, text] = sample as unknown as [string, string, string];
    expect(path.basename(shown)).toBe(path.basename(LOOP2_RUN));
    const result = await runCli(['show', LOOP2_RUN]);
    expect(result.exitCode).toBe(0);
    expect(text).toBe(result.stdout.replaceAll(LOOP2_RUN, shown));
  });
});
