/**
 * No file under harness/ over MAX_LINES lines (issue 47): a file that grows past it holds more than one
 * thing and is split by what each part does. biome holds the other half of the rule, no function over
 * cognitive complexity 25 (biome.json).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const MAX_LINES = 450;

/** The files over `max` lines, "path (N lines)", of a list of [path, text]. */
function overLong(files: ReadonlyArray<readonly [string, string]>, max: number): string[] {
  return files.flatMap(([file, text]) => {
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    return lines > max ? [`${file} (${lines} lines)`] : [];
  });
}

describe(`harness/ files of at most ${MAX_LINES} lines`, () => {
  it('holds for every file', () => {
    const dir = path.join(ROOT, 'harness');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [`harness/${f}`, readFileSync(path.join(dir, f), 'utf8')] as const);
    expect(files.length).toBeGreaterThan(100);
    expect(overLong(files, MAX_LINES)).toEqual([]);
  });

  it('catches a planted file one line over, and not one at the limit', () => {
    const lines = (n: number) => `${'x\n'.repeat(n)}`;
    expect(overLong([['a.ts', lines(MAX_LINES)]], MAX_LINES)).toEqual([]);
    expect(overLong([['b.ts', lines(MAX_LINES + 1)]], MAX_LINES)).toEqual([`b.ts (${MAX_LINES + 1} lines)`]);
  });
});
