/**
 * The evidence store from the command line: `evidence add` and `evidence extract`, and the commands that
 * read a stored run where it lies (issue 46: show and gate --baseline on a stored run of 2026-11-24).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { samplesCsv, trialsCsv } from '../../harness/bench/outputs/csv.js';
import { loadRun } from '../../harness/bench/record/store.js';
import {
  cli,
  DEFAULT_RUN,
  editedCopy,
  expectOneLineError,
  joined,
  ROOT,
  runCli,
  tempDir,
  unfolded,
} from '../helpers.js';

const STORED = (id: string) => path.join(ROOT, 'evidence', `${id}.tar.br`);
const E6A982 = STORED('2026-11-24-h100-80gb-hbm3-e6a982');

describe('gpushare evidence add and extract', () => {
  it('adds a run once, then says it is stored already; extract writes its directory with the CSVs again', async () => {
    const store = tempDir();
    const added = await runCli(['evidence', 'add', DEFAULT_RUN, '--store', store]);
    const id = path.basename(DEFAULT_RUN);
    expect([added.exitCode, joined(added.stdout)]).toEqual([0, `stored: ${path.join(store, `${id}.tar.br`)}`]);
    const again = await runCli(['evidence', 'add', DEFAULT_RUN, '--store', store]);
    expect(joined(again.stdout)).toMatch(/^already stored, the same bytes: \S+d4099d\.tar\.br$/);
    const to = tempDir();
    const extracted = await runCli(['evidence', 'extract', path.join(store, `${id}.tar.br`), '--to', to]);
    expect(extracted.exitCode).toBe(0);
    const dir = path.join(to, id);
    expect(readFileSync(path.join(dir, 'run.json'), 'utf8')).toBe(
      readFileSync(path.join(DEFAULT_RUN, 'run.json'), 'utf8'),
    );
    const run = await loadRun(dir);
    expect(readFileSync(path.join(dir, 'trials.csv'), 'utf8')).toBe(trialsCsv(run));
    expect(readFileSync(path.join(dir, 'samples.csv'), 'utf8')).toBe(samplesCsv(run));
    const twice = await runCli(['evidence', 'extract', path.join(store, `${id}.tar.br`), '--to', to]);
    expect(twice.exitCode).toBe(2);
    expectOneLineError(twice.stderr, 'exists already: remove it, or give another folder with --to');
  });

  it('refuses what is not a stored run or not a run directory, in one line', async () => {
    const notStored = await runCli(['evidence', 'extract', DEFAULT_RUN]);
    expect(notStored.exitCode).toBe(2);
    expectOneLineError(notStored.stderr, 'is not a stored run: give files named <run id>.tar.br from evidence/');
    const notDir = await runCli(['evidence', 'add', path.join(tempDir(), 'nothing'), '--store', tempDir()]);
    expect(notDir.exitCode).toBe(2);
    expectOneLineError(notDir.stderr, 'is not a run directory');
    const empty = await runCli(['evidence', 'add', tempDir(), '--store', tempDir()]);
    expect(empty.exitCode).toBe(2);
    expectOneLineError(empty.stderr, 'holds no gpushare record');
  });
});

describe('a stored run read where it lies', () => {
  it('show prints the summary of a stored run of 2026-11-24', async () => {
    const shown = await runCli(['show', E6A982]);
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toMatch(/^run 2026-11-24-h100-80gb-hbm3-e6a982 \(complete\)\n/);
    expect(shown.stdout).toContain('verdict: PASS (exit 0)');
  });

  it('gate --baseline evidence/ gates it against every stored run measured alike', async () => {
    const gated = await runCli(['gate', E6A982, '--baseline', path.join(ROOT, 'evidence')]);
    expect([gated.exitCode, gated.stderr]).toEqual([0, '']);
    // The 34 other default runs of its harness generation: protocol loop 1, release lead 10 ms, gpushare 0.1.0.
    expect(gated.stdout).toMatch(/^gate: run 2026-11-24-h100-80gb-hbm3-e6a982 against 34 baseline runs/);
    expect(gated.stdout.match(/ unchanged$/gm)).toHaveLength(8);
    const text = unfolded(gated.stdout);
    expect(text).toContain('set aside: 2026-11-27-h100-80gb-hbm3-2c8cff: protocol loop: 2 before vs 1 now\n');
    expect(text).toContain('set aside: 2026-11-24-h100-80gb-hbm3-ed828a: release lead: 30 ms before vs 10 ms now\n');
    expect(text).toContain(
      'set aside: 2026-11-24-h100-80gb-hbm3-aaa98d: release lead: 30 ms before vs 10 ms now; gpushare version: 0.0.0 before vs 0.1.0 now\n',
    );
  });

  it('fleet report names stored runs by id, and report writes under runs/reports/', async () => {
    const dir = tempDir();
    for (const id of [
      '2026-11-24-h100-80gb-hbm3-e6a982',
      '2026-11-24-h100-80gb-hbm3-a00e36',
      '2026-11-24-h100-80gb-hbm3-3d5d26',
    ])
      copyFileSync(STORED(id), path.join(dir, `${id}.tar.br`));
    const fleet = await runCli(['fleet', 'report', dir, '--json', '--out', tempDir()]);
    const json = JSON.parse(fleet.stdout) as { nodes: { name: string }[] };
    expect(json.nodes.map((n) => n.name).sort()).toEqual([
      '2026-11-24-h100-80gb-hbm3-3d5d26',
      '2026-11-24-h100-80gb-hbm3-a00e36',
      '2026-11-24-h100-80gb-hbm3-e6a982',
    ]);
    const cwd = tempDir();
    const report = await runCli(['report', E6A982], {}, { cwd });
    expect(report.exitCode).toBe(0);
    expect(existsSync(path.join(cwd, 'runs', 'reports', '2026-11-24-h100-80gb-hbm3-e6a982.md'))).toBe(true);
  });

  it('a damaged stored run is one line and exit 2 in every reader', async () => {
    const damaged = path.join(tempDir(), '2026-11-24-h100-80gb-hbm3-e6a982.tar.br');
    const bytes = readFileSync(E6A982);
    writeFileSync(damaged, bytes.subarray(0, 1000));
    for (const argv of [
      ['show', damaged],
      ['gate', damaged],
      ['report', damaged],
      ['plan', '--run', damaged, '--models', '2', '--mem-gib', '1', '--sm-pct', '10'],
    ]) {
      const result = await runCli(argv);
      expect([argv[0], result.exitCode]).toEqual([argv[0], 2]);
      expectOneLineError(result.stderr, 'it is damaged; take it again from git');
    }
  });
});

describe('a stored run that cannot be read, and a cache that cannot be used: one line each', () => {
  it('plan --run on a FIFO named as a stored run answers at once, refusing it', async () => {
    const fifo = path.join(tempDir(), '2026-11-24-h100-80gb-hbm3-e6a982.tar.br');
    execFileSync('mkfifo', [fifo]);
    const planned = await cli(
      ['plan', '--run', fifo, '--models', '2', '--mem-gib', '1', '--sm-pct', '10'],
      {},
      { timeoutMs: 20_000 },
    );
    expect(planned.timedOut).toBe(false);
    expect(planned.exitCode).toBe(2);
    expectOneLineError(planned.stderr, 'is not a regular file');
  });

  it('a cache folder that is a file, or one others may write to, names GPUSHARE_CACHE_DIR', async () => {
    const file = path.join(tempDir(), 'not-a-folder');
    writeFileSync(file, '');
    const blocked = await cli(['show', E6A982], { GPUSHARE_CACHE_DIR: file });
    expect(blocked.exitCode).toBe(2);
    expectOneLineError(blocked.stderr, 'set GPUSHARE_CACHE_DIR to a folder of yours');
    // The default cache, in a temporary directory where its folder is open to everyone.
    const tmp = tempDir();
    const uid = String(process.getuid?.() ?? '');
    mkdirSync(path.join(tmp, `gpushare-${uid}`), { mode: 0o777 });
    chmodSync(path.join(tmp, `gpushare-${uid}`), 0o777);
    const open = await cli(['show', E6A982], { TMPDIR: tmp });
    expect(open.exitCode).toBe(2);
    expectOneLineError(open.stderr, "is not a folder of this user's alone");
  });

  it('evidence add refuses a record that is not JSON and a simulated run, in one line', async () => {
    const broken = path.join(tempDir(), 'run');
    mkdirSync(broken);
    writeFileSync(path.join(broken, 'run.json'), '{"id": "2026-');
    const notJson = await runCli(['evidence', 'add', broken, '--store', tempDir()]);
    expect(notJson.exitCode).toBe(2);
    expectOneLineError(notJson.stderr, 'is not JSON');
    const simulated = editedCopy(DEFAULT_RUN, (run) => {
      run.fingerprint.simulated = true;
    });
    const refused = await runCli(['evidence', 'add', simulated, '--store', tempDir()]);
    expect(refused.exitCode).toBe(2);
    expectOneLineError(refused.stderr, "was made on gpushare's simulator: the store keeps runs measured on real GPUs");
  });

  it('gate --baseline: a damaged stored run in a directory is named unreadable; one named alone is refused', async () => {
    const dir = tempDir();
    for (const id of ['2026-11-24-h100-80gb-hbm3-a00e36', '2026-11-24-h100-80gb-hbm3-3d5d26'])
      copyFileSync(STORED(id), path.join(dir, `${id}.tar.br`));
    const damaged = path.join(dir, '2026-11-24-h100-80gb-hbm3-7d5d1d.tar.br');
    writeFileSync(damaged, readFileSync(STORED('2026-11-24-h100-80gb-hbm3-7d5d1d')).subarray(0, 500));
    const gated = await runCli(['gate', E6A982, '--baseline', dir]);
    expect(joined(gated.stdout + gated.stderr)).toMatch(/7d5d1d\.tar\.br: \S+ could not be unpacked/);
    const alone = await runCli(['gate', E6A982, '--baseline', damaged]);
    expect(alone.exitCode).toBe(2);
    expectOneLineError(alone.stderr, 'it is damaged; take it again from git');
  });

  it('gate refuses a baseline whose slowdowns divide by another alone, even with --allow-mismatch', async () => {
    const plain = STORED('2026-12-06-h100-80gb-hbm3-c1d285');
    const own = STORED('2026-12-06-h100-80gb-hbm3-bbc861');
    const one = await runCli(['gate', plain, '--baseline', own, '--allow-mismatch']);
    expect(one.exitCode).toBe(2);
    expectOneLineError(one.stderr, 'refusing to compare runs whose slowdowns divide by different alones');
    const dir = tempDir();
    copyFileSync(own, path.join(dir, path.basename(own)));
    const set = await runCli(['gate', plain, '--baseline', dir, '--allow-mismatch']);
    expect(set.exitCode).toBe(2);
    expect(joined(set.stderr)).toContain("alone: each mode's own before vs the plain process now");
  });
});
