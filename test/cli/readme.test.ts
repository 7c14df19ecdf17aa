/**
 * The README is the front door: short, its sample output the real summary of a committed run (not
 * typed by hand), and every link in it, CONTRIBUTING.md and docs/ pointing at a file that exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
    // The fixture is a byte copy of the committed run (test/fixtures/runs/README.md).
    expect(path.basename(shown)).toBe(path.basename(LOOP2_RUN));
    const result = await runCli(['show', LOOP2_RUN]);
    expect(result.exitCode).toBe(0);
    expect(text).toBe(result.stdout.replaceAll(LOOP2_RUN, shown));
  });

  it('links only to files that exist (README, CONTRIBUTING.md, docs/)', () => {
    const pages = [
      'README.md',
      'CONTRIBUTING.md',
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => path.join('docs', f)),
    ];
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(path.join(ROOT, page), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const file = (target as string).split('#')[0] as string;
        if (/^[a-z]+:/.test(file) || file === '') continue;
        if (!existsSync(path.join(ROOT, path.dirname(page), file))) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
