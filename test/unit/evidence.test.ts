/**
 * The evidence store (harness/record/evidence.ts): a run stored is the same bytes every time, never
 * replaced, read back whole; a damaged, missing or misnamed one is one line.
 */

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isRegenerable,
  openRun,
  runEntries,
  runHolds,
  STORED_RUN_SUFFIX,
  storeRun,
} from '../../harness/record/evidence.js';
import { DEFAULT_RUN, MULTI_GPU_RUN, ROOT, tempDir } from '../helpers.js';

const ID = path.basename(DEFAULT_RUN);

/** A run directory as a command leaves it: its record, its console, its CSVs and report. */
function runDir(): string {
  const dir = path.join(tempDir(), 'any-name');
  cpSync(DEFAULT_RUN, dir, { recursive: true });
  writeFileSync(path.join(dir, 'trials.csv'), 'written again from run.json\n');
  mkdirSync(path.join(dir, 'report'));
  writeFileSync(path.join(dir, 'report', `${ID}.md`), '# a report\n');
  return dir;
}

/** Every file under `dir`, relative, with its bytes. */
function tree(dir: string): Record<string, string> {
  return Object.fromEntries(
    execFileSync('find', ['.', '-type', 'f'], { cwd: dir, encoding: 'utf8' })
      .trim()
      .split('\n')
      .sort()
      .map((f) => [f, readFileSync(path.join(dir, f), 'base64')]),
  );
}

describe('storeRun and openRun', () => {
  it('store a run under its id, leave out what gpushare writes again, and read it back byte for byte', async () => {
    const dir = runDir();
    const store = tempDir();
    const { file, added } = await storeRun(dir, store);
    expect([path.basename(file), added]).toEqual([`${ID}${STORED_RUN_SUFFIX}`, true]);
    const opened = await openRun(file);
    expect(path.basename(opened)).toBe(ID);
    const kept = tree(dir);
    for (const f of Object.keys(kept)) if (isRegenerable(f.slice(2))) delete kept[f];
    expect(Object.keys(kept)).not.toContain('./trials.csv');
    expect(tree(opened)).toEqual(kept);
  });

  it('give the same bytes for the same files, and refuse other bytes under a stored id', async () => {
    const store = tempDir();
    const first = await storeRun(runDir(), store);
    const bytes = readFileSync(first.file);
    const again = await storeRun(runDir(), store);
    expect(again.added).toBe(false);
    expect(readFileSync(again.file).equals(bytes)).toBe(true);
    const other = runDir();
    writeFileSync(path.join(other, 'console.txt'), 'something else\n');
    await expect(storeRun(other, store)).rejects.toThrow(`already holds run ${ID}, with other bytes`);
    expect(readFileSync(first.file).equals(bytes)).toBe(true);
  });

  it('reads a multi-GPU run whole, its GPUs one level down', async () => {
    const { file } = await storeRun(MULTI_GPU_RUN, tempDir());
    const opened = await openRun(file);
    expect(runHolds(file, 'host.json')).toBe(true);
    expect(runHolds(file, 'run.json')).toBe(false);
    expect(readFileSync(path.join(opened, 'gpu1', 'run.json'), 'utf8')).toBe(
      readFileSync(path.join(MULTI_GPU_RUN, 'gpu1', 'run.json'), 'utf8'),
    );
  });

  it('refuse a damaged, missing or misnamed stored run in one line', async () => {
    const { file } = await storeRun(runDir(), tempDir());
    const damaged = path.join(tempDir(), path.basename(file));
    const bytes = readFileSync(file);
    writeFileSync(damaged, bytes.subarray(0, bytes.length >> 1));
    await expect(openRun(damaged)).rejects.toThrow(/could not be unpacked .*: it is damaged; take it again from git$/);
    await expect(openRun(path.join(tempDir(), `${ID}${STORED_RUN_SUFFIX}`))).rejects.toThrow('no such stored run');
    const misnamed = path.join(tempDir(), `..${STORED_RUN_SUFFIX}`);
    writeFileSync(misnamed, bytes);
    await expect(openRun(misnamed)).rejects.toThrow('is no run id');
    const renamed = path.join(tempDir(), `2026-01-01-other-000000${STORED_RUN_SUFFIX}`);
    writeFileSync(renamed, bytes);
    await expect(openRun(renamed)).rejects.toThrow('holds no folder 2026-01-01-other-000000/');
    const fifo = path.join(tempDir(), `${ID}${STORED_RUN_SUFFIX}`);
    execFileSync('mkfifo', [fifo]);
    await expect(openRun(fifo)).rejects.toThrow('is not a regular file');
  });

  it('leave a run directory as it is', async () => {
    expect(await openRun(DEFAULT_RUN)).toBe(DEFAULT_RUN);
  });
});

describe('the committed store', () => {
  it('holds every reference run of results/ (two checked byte for byte: a bench and a capacity run)', async () => {
    const entries = await runEntries(path.join(ROOT, 'evidence'));
    expect(entries.every((e) => e.endsWith(STORED_RUN_SUFFIX))).toBe(true);
    const stored = entries.map((e) => path.basename(e, STORED_RUN_SUFFIX));
    expect(readdirSync(path.join(ROOT, 'results')).filter((id) => !stored.includes(id))).toEqual([]);
    const store = tempDir();
    for (const id of ['2026-11-27-h100-80gb-hbm3-2c8cff', '2026-11-23-h100-80gb-hbm3-capacity-7490ed']) {
      const { file } = await storeRun(path.join(ROOT, 'results', id), store);
      expect(readFileSync(file).equals(readFileSync(path.join(ROOT, 'evidence', path.basename(file))))).toBe(true);
    }
  });
});

describe('isRegenerable', () => {
  it.each([
    ['trials.csv', true],
    ['gpu0/samples.csv', true],
    ['report/2026-x.md', true],
    ['report.md', true],
    ['report.html', true],
    ['run.json', false],
    ['console.txt', false],
    ['mps/control.log', false],
    ['declared/gpushare-mps-start.sh', false],
  ])('%s: %s', (file, left) => {
    expect(isRegenerable(file)).toBe(left);
  });
});
