/** Every kind of run directory is opened for a run the same way: the --out refusals name what is there. */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordKindIn } from '../../harness/record/kinds.js';
import { openRunDirectory, removeStaleTempFiles } from '../../harness/record/store.js';
import { tempDir } from '../helpers.js';

/** The message of the UserError that `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  return (
    (await promise.then(
      () => new Error('expected a refusal'),
      (error: unknown) => error,
    )) as Error
  ).message;
}

describe('openRunDirectory', () => {
  it('opens a new or empty directory for any kind, and locks it', async () => {
    for (const kind of ['bench', 'probe', 'capacity', 'host'] as const) {
      const dir = path.join(tempDir(), 'new');
      const lock = await openRunDirectory(dir, 'r-1', kind);
      expect(readdirSync(dir)).toEqual(['.lock']);
      lock.release();
    }
  });

  it.each([
    [
      'probe.json',
      'bench',
      'holds a probe run (probe.json), not a bench run: choose an empty or new directory with --out',
    ],
    [
      'run.json',
      'host',
      'holds a bench run (run.json), not a multi-GPU run: choose an empty or new directory with --out',
    ],
    [
      'host.json',
      'capacity',
      'holds a multi-GPU run (host.json), not a capacity run: choose an empty or new directory with --out',
    ],
    [
      'capacity.json',
      'probe',
      'holds a capacity run (capacity.json), not a probe run: choose an empty or new directory with --out',
    ],
  ] as const)('refuses a directory holding %s for a %s run, naming what it holds', async (file, kind, message) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, file), '{"id":"other"}');
    expect(await refusal(openRunDirectory(dir, 'r-1', kind))).toBe(`${dir} ${message}`);
    expect(readdirSync(dir)).toEqual([file]);
  });

  it('refuses a run of its own kind with another id, and a directory of the user’s files', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'probe.json'), '{"id":"other"}');
    expect(await refusal(openRunDirectory(dir, 'r-1', 'probe'))).toBe(
      `${dir} already holds a different run (other): choose an empty directory with --out`,
    );
    // One cut short is continued rather than replaced: the refusal says how.
    writeFileSync(path.join(dir, 'probe.json'), '{"id":"other","status":"interrupted"}');
    expect(await refusal(openRunDirectory(dir, 'r-1', 'probe'))).toBe(
      `${dir} already holds a different run (other, interrupted): continue it with gpushare probe --resume ${dir}, or choose an empty directory with --out`,
    );
    const mine = tempDir();
    mkdirSync(path.join(mine, 'gpu1'));
    expect(await refusal(openRunDirectory(mine, 'r-1', 'host'))).toBe(
      `${mine} is not empty and holds no gpushare run (it has gpu1): choose an empty or new directory with --out`,
    );
  });

  it('knows a directory by its record file, whatever file type it is', async () => {
    const dir = tempDir();
    expect(await recordKindIn(dir)).toBeNull();
    mkdirSync(path.join(dir, 'host.json'));
    expect(await recordKindIn(dir)).toBe('host');
  });
});

describe('removeStaleTempFiles', () => {
  it("removes the temp files of every record and table a killed write left, and nothing of the user's", async () => {
    const dir = tempDir();
    const stale = ['run.json.1', 'probe.json.22', 'capacity.json.333', 'host.json.4', 'trials.csv.5', 'samples.csv.6'];
    for (const name of [...stale, 'notes.txt.1', 'probe.json', 'probe.json.x']) writeFileSync(path.join(dir, name), '');
    expect((await removeStaleTempFiles(dir)).sort()).toEqual(stale.sort());
    expect(readdirSync(dir).sort()).toEqual(['notes.txt.1', 'probe.json', 'probe.json.x']);
  });
});
