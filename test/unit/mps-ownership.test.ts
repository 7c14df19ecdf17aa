/** What proves an MPS directory and process are gpushare's own, and store write errors as user errors. */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { fsRunStore } from '../../harness/bench/record/store.js';
import { systemClock } from '../../harness/core/clock.js';
import { UserError } from '../../harness/core/errors.js';
import { stopOrphanDaemon } from '../../harness/system/mps/daemon.js';
import { findMpsLeftovers } from '../../harness/system/mps/leftovers.js';
import {
  checkMpsRootSync,
  chooseMpsDirectory,
  makeMpsDirectory,
  prepareMpsDirectory,
  removeRecordedMpsRootSync,
  whyNotOurMpsProcess,
} from '../../harness/system/mps/ownership.js';
import { salvageMpsLogsSync } from '../../harness/system/mps/salvage.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { DEFAULT_RUN, tempDir } from '../helpers.js';

describe('MPS root ownership', () => {
  it('prepares a private root with a marker of the run, and accepts it for that run only', async () => {
    const prepared = await prepareMpsDirectory('run-a');
    try {
      expect(statSync(prepared.root).mode & 0o777).toBe(0o700);
      expect(JSON.parse(readFileSync(path.join(prepared.root, '.gpushare-mps'), 'utf8'))).toMatchObject({
        runId: 'run-a',
        harnessPid: process.pid,
      });
      expect(checkMpsRootSync(prepared.pipeDirectory, 'run-a')).toMatchObject({ ok: true, root: prepared.root });
      expect(checkMpsRootSync(prepared.pipeDirectory, 'run-b')).toEqual({
        ok: false,
        reason: `${prepared.root}/.gpushare-mps belongs to run run-a, not run-b`,
      });
    } finally {
      rmSync(prepared.root, { recursive: true, force: true });
    }
  });

  it("refuses paths outside gpushare's temp root pattern, and roots without the marker", async () => {
    expect(checkMpsRootSync('/', 'r')).toMatchObject({ ok: false });
    expect(checkMpsRootSync('/home/user/pipe', 'r')).toMatchObject({ ok: false });
    expect(checkMpsRootSync(path.join(os.tmpdir(), 'pipe'), 'r')).toMatchObject({ ok: false });
    const bare = path.join(os.tmpdir(), 'gpushare-mps-zzzzzz');
    mkdirSync(path.join(bare, 'pipe'), { recursive: true });
    try {
      expect(checkMpsRootSync(path.join(bare, 'pipe'), 'r')).toEqual({
        ok: false,
        reason: `${bare} holds no .gpushare-mps marker written by gpushare`,
      });
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('does not count a process as the daemon unless it is an MPS process tied to the pipe directory', async () => {
    const prepared = await prepareMpsDirectory('run-a');
    try {
      expect(await whyNotOurMpsProcess(process.pid, prepared.pipeDirectory, prepared.marker)).toMatch(
        /^it is .*, not an MPS process$/,
      );
      expect(await whyNotOurMpsProcess(2 ** 22 + 1, prepared.pipeDirectory, prepared.marker)).toBe('not running');
    } finally {
      rmSync(prepared.root, { recursive: true, force: true });
    }
  });
});

describe('MPS roots recorded before they are made', () => {
  it('a chosen root is made only where nothing is: an existing directory is refused and left alone', async () => {
    const tmp = tempDir();
    const paths = chooseMpsDirectory(tmp);
    expect(path.dirname(paths.root)).toBe(tmp);
    expect(existsSync(paths.root)).toBe(false);
    mkdirSync(paths.root);
    writeFileSync(path.join(paths.root, 'theirs'), 'x');
    await expect(makeMpsDirectory(paths, 'run-a', null)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(readFileSync(path.join(paths.root, 'theirs'), 'utf8')).toBe('x');
  });

  it('a recorded root that was never made is missing, not foreign', async () => {
    const paths = chooseMpsDirectory();
    expect(checkMpsRootSync(paths.pipeDirectory, 'run-a')).toEqual({
      ok: false,
      reason: `${paths.root} does not exist`,
      missing: true,
    });
  });
});

describe("doctor's leftovers", () => {
  it("lists the roots with gpushare's marker, with the run directory the marker names, and no other", async () => {
    const tmp = tempDir();
    const ours = await prepareMpsDirectory('run-a', '/somewhere/run', tmp);
    mkdirSync(path.join(tmp, 'gpushare-mps-abcdef', 'pipe'), { recursive: true });
    mkdirSync(path.join(tmp, 'unrelated'));
    const found = await findMpsLeftovers(tmp);
    expect(found).toEqual([
      {
        root: ours.root,
        pipeDirectory: ours.pipeDirectory,
        marker: expect.objectContaining({ runId: 'run-a', runDir: '/somewhere/run', harnessPid: process.pid }),
        pids: [],
      },
    ]);
  });
});

describe('run store write errors', () => {
  const run = JSON.parse(readFileSync(path.join(DEFAULT_RUN, 'run.json'), 'utf8')) as Run;

  it.each(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES'])(
    '%s is a user error naming the file and how to continue',
    async (code) => {
      const dir = tempDir();
      // The disk is full.
      const store = fsRunStore(dir, async () => {
        throw Object.assign(new Error(`${code}: no`), { code });
      });
      const error = await store.saveRun(run).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as UserError).message).toBe(
        `cannot write ${dir}/run.json (${code}): the trials finished before it are kept in ${dir}; fix the disk and continue with gpushare bench --resume ${dir}`,
      );
    },
  );

  it('other errors stay bugs', async () => {
    const store = fsRunStore(tempDir(), async () => {
      throw new TypeError('a bug');
    });
    await expect(store.saveRun(run)).rejects.toBeInstanceOf(TypeError);
  });

  // Root writes anyway: there the seam tests above cover it.
  it.skipIf(process.getuid?.() === 0)('a read-only directory, for real, where permissions apply', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o500);
    await expect(fsRunStore(dir).saveRun(run)).rejects.toBeInstanceOf(UserError);
  });
});

describe("the forced exit's synchronous clean-up of a root", () => {
  it("salvages the logs into the run and removes the root; a log already gone is skipped; another run's root stays", async () => {
    const tmp = tempDir();
    const runDir = tempDir();
    const ours = await prepareMpsDirectory('run-a', runDir, tmp);
    mkdirSync(ours.logDirectory, { recursive: true });
    writeFileSync(path.join(ours.logDirectory, 'control.log'), 'control\n');
    const theirs = await prepareMpsDirectory('run-b', null, tmp);
    expect(salvageMpsLogsSync(theirs.pipeDirectory, 'run-a', runDir, 'mps', tmp)).toBeNull();
    expect(existsSync(theirs.root)).toBe(true);
    // server.log was never written (or already removed by the run's own shutdown): control.log alone.
    expect(salvageMpsLogsSync(ours.pipeDirectory, 'run-a', runDir, 'mps', tmp)).toEqual(['mps/control.log']);
    expect(readFileSync(path.join(runDir, 'mps', 'control.log'), 'utf8')).toBe('control\n');
    expect(existsSync(ours.root)).toBe(false);
  });

  it("removes the root of a daemon recorded as stopped (a second Ctrl-C before its removal), only when it is provably the run's", async () => {
    const tmp = tempDir();
    const ours = await prepareMpsDirectory('run-a', null, tmp);
    const theirs = await prepareMpsDirectory('run-b', null, tmp);
    const unmarked = path.join(tmp, 'gpushare-mps-zzzzzz');
    mkdirSync(path.join(unmarked, 'pipe'), { recursive: true });
    writeFileSync(path.join(unmarked, 'pipe', 'control'), '');
    for (const pipe of [ours.pipeDirectory, theirs.pipeDirectory, path.join(unmarked, 'pipe')])
      removeRecordedMpsRootSync(pipe, 'run-a', tmp);
    expect([existsSync(ours.root), existsSync(theirs.root), existsSync(unmarked)]).toEqual([false, true, true]);
  });
});

describe('a root cut short while it was made or removed (kill -9, or a signal between two steps)', () => {
  /** What a harness leaves at each step of making a root, or of removing one, when it is killed there. */
  const REMNANTS: Array<[string, (root: string) => void]> = [
    ['the root only', () => undefined],
    ['an empty marker (killed between open and write)', (root) => writeFileSync(path.join(root, '.gpushare-mps'), '')],
    [
      'empty pipe/ and log/, the marker removed first',
      (root) => {
        mkdirSync(path.join(root, 'pipe'));
        mkdirSync(path.join(root, 'log'));
      },
    ],
  ];

  it.each(REMNANTS)('--resume removes the empty remnant: %s', async (_name, leave) => {
    const tmp = tempDir();
    const paths = chooseMpsDirectory(tmp);
    mkdirSync(paths.root, { mode: 0o700 });
    leave(paths.root);
    const orphan = { runId: 'run-a', controlPid: null, serverPids: [], pipeDirectory: paths.pipeDirectory };
    const stopped = await stopOrphanDaemon(execaRunner, systemClock, orphan, tmp);
    expect(stopped.outcome).toBe('never started (the empty directory of a start cut short is removed)');
    expect(existsSync(paths.root)).toBe(false);
  });

  it.each(REMNANTS)("the forced exit's salvage removes it too, with no logs to save: %s", (_name, leave) => {
    const tmp = tempDir();
    const paths = chooseMpsDirectory(tmp);
    mkdirSync(paths.root, { mode: 0o700 });
    leave(paths.root);
    expect(salvageMpsLogsSync(paths.pipeDirectory, 'run-a', tempDir(), 'mps', tmp)).toEqual([]);
    expect(existsSync(paths.root)).toBe(false);
  });

  it('an unmarked root holding anything (a log, a marker with text) is not a remnant and stays', async () => {
    const tmp = tempDir();
    const withLog = chooseMpsDirectory(tmp);
    mkdirSync(path.join(withLog.root, 'log'), { recursive: true });
    writeFileSync(path.join(withLog.root, 'log', 'control.log'), 'a daemon ran here\n');
    const otherMarker = chooseMpsDirectory(tmp);
    mkdirSync(otherMarker.root);
    writeFileSync(path.join(otherMarker.root, '.gpushare-mps'), 'not json');
    for (const paths of [withLog, otherMarker]) {
      expect(removeRecordedMpsRootSync(paths.pipeDirectory, 'run-a', tmp)).toBe('not ours');
      expect(salvageMpsLogsSync(paths.pipeDirectory, 'run-a', tempDir(), 'mps', tmp)).toBeNull();
      expect(existsSync(paths.root)).toBe(true);
    }
  });
});
