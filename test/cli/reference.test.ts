/** docs/cli.md is the commands' --help: a flag added, renamed or re-described without regenerating it fails here. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliReference } from '../../harness/cli/reference.js';
import { ROOT } from '../helpers.js';

describe('docs/cli.md', () => {
  it('is what the commands print for --help (run `npm run docs:cli` to regenerate it)', async () => {
    const committed = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
    expect(committed, 'docs/cli.md drifted from --help: run `npm run docs:cli`').toBe(await cliReference());
  });

  it('holds every registered command and flag', async () => {
    const text = await cliReference();
    for (const heading of ['## gpushare bench', '## gpushare fleet report', '## gpushare report'])
      expect(text).toContain(heading);
    expect(text).toContain('--dry-run');
  });
});
