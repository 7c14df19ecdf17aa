/**
 * Every record is read through its schema, from a regular file opened without blocking; a directory
 * is opened for a run the same way whatever kind of run it holds; and a command given a directory of
 * another kind says what it is. On the fakes, with records written by hand around a real fingerprint.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, DEFAULT_RUN, expectOneLineError, QUICK, tempDir } from '../helpers.js';

let fingerprint: Record<string, unknown>;
beforeAll(async () => {
  // doctor --json prints this machine's fingerprint (the fake's), with a few fields of its own beside it.
  fingerprint = JSON.parse((await cli(['doctor', '--json'])).stdout) as Record<string, unknown>;
});

const header = (schema: string, id: string) => ({
  schema,
  id,
  status: 'complete',
  createdAt: '2026-11-24T00:00:00.000Z',
  finishedAt: '2026-11-24T00:01:00.000Z',
});
const probeRecord = () => ({
  ...header('gpushare-probe/1', '2026-11-24-h200-probe-aaaaaa'),
  fingerprint,
  gpuIndex: 0,
  probes: [],
  cleanup: [],
  warnings: [],
});
const capacityRecord = () => ({
  ...header('gpushare-capacity/1', '2026-11-24-h200-capacity-bbbbbb'),
  fingerprint,
  gpuIndex: 0,
  settings: {
    sloP99Ms: 2,
    modes: ['timeslice'],
    clientCounts: [1],
    workload: { name: 'infer', builtin: true, argv: ['python3', 'infer.py'], params: {} },
    load: 'poisson',
    windowMs: 200,
    startQps: 1000,
    tolerance: 0.05,
    maxSteps: 2,
  },
  points: [],
  warnings: [],
});
const hostRecord = () => ({
  ...header('gpushare-host/1', '2026-11-24-h200-x1-cccccc'),
  gpus: [{ index: 0, uuid: 'GPU-7335e5d7-1513-c22d-a95a-e679698f16b8', name: 'NVIDIA H200', dir: 'gpu0', exitCode: 0 }],
  crossDir: null,
  schedule: { parallel: false, reason: 'one GPU: nothing to run beside it' },
});

/** A directory holding `file` with `record` as its JSON. */
function dirWith(file: string, record: unknown): string {
  const dir = tempDir();
  writeFileSync(path.join(dir, file), JSON.stringify(record));
  return dir;
}

describe('records are read through their schemas', () => {
  it('a valid probe, capacity and multi-GPU record is reported', async () => {
    for (const [file, record] of [
      ['probe.json', probeRecord()],
      ['capacity.json', capacityRecord()],
      ['host.json', hostRecord()],
    ] as const) {
      const result = await cli(['report', dirWith(file, record), '--out', tempDir()]);
      expect([file, result.exitCode, result.stderr]).toEqual([file, 0, '']);
    }
  });

  it.each([
    ['probe.json', () => ({ ...probeRecord(), probes: null }), 'does not match the probe run schema at probes:'],
    [
      'capacity.json',
      () => ({ ...capacityRecord(), points: null }),
      'does not match the capacity run schema at points:',
    ],
    [
      'host.json',
      () => ({ ...hostRecord(), gpus: [{ ...hostRecord().gpus[0], dir: '../r1' }] }),
      'does not match the multi-GPU run schema at gpus.0.dir: a directory name of letters, digits',
    ],
    [
      'host.json',
      () => ({ ...hostRecord(), gpus: Array.from({ length: 2000 }, () => hostRecord().gpus[0]) }),
      'does not match the multi-GPU run schema at gpus: each GPU listed once',
    ],
  ])('%s that breaks its schema: exit 2, one line, no stack', async (file, record, message) => {
    const result = await cli(['report', dirWith(file, record()), '--out', tempDir()]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
  });

  it.each(['probe.json', 'host.json'])('a FIFO %s is refused at once by report', async (file) => {
    const dir = tempDir();
    await execa('mkfifo', [path.join(dir, file)]);
    const result = await cli(['report', dir], {}, { timeoutMs: 20_000 });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, `${dir}/${file} is not a regular file`);
  });

  it('a FIFO host.json is refused at once by bench --gpus --out and bench --resume', async () => {
    const dir = tempDir();
    await execa('mkfifo', [path.join(dir, 'host.json')]);
    for (const args of [
      ['bench', '--gpus', 'all', '--out', dir, ...QUICK],
      ['bench', '--resume', dir],
    ]) {
      const result = await cli(args, {}, { timeoutMs: 20_000 });
      expect(result.timedOut).toBe(false);
      expect(result.exitCode).toBe(2);
      expectOneLineError(result.stderr, `${dir}/host.json is not a regular file`);
    }
  });
});

describe("a multi-GPU run's directories are its own", () => {
  it('a gpu0 that is a symbolic link to a run elsewhere is refused by report and bench --resume, not shown as GPU 0', async () => {
    const dir = dirWith('host.json', hostRecord());
    symlinkSync(DEFAULT_RUN, path.join(dir, 'gpu0'));
    for (const args of [
      ['report', dir, '--out', tempDir()],
      ['bench', '--resume', dir],
    ]) {
      const result = await cli(args);
      expect([args[0], result.exitCode]).toEqual([args[0], 2]);
      expectOneLineError(result.stderr, `${dir}/gpu0 is a symbolic link`);
    }
  });
});

describe('a directory of another kind is named as such', () => {
  it.each([
    ['probe.json', probeRecord, 'a probe run (probe.json), not a bench run'],
    ['capacity.json', capacityRecord, 'a capacity run (capacity.json), not a bench run'],
    ['host.json', hostRecord, 'a multi-GPU run (host.json), not a bench run: give one of its GPU runs ('],
  ])('show, gate, artifacts and plan given %s', async (file, record, message) => {
    const dir = dirWith(file, record());
    // show shows a probe or capacity run, and gate says what it grades (below).
    const benchOnly =
      file === 'host.json'
        ? [
            ['show', dir],
            ['gate', dir],
          ]
        : [];
    for (const args of [
      ...benchOnly,
      ['artifacts', '--run', dir, '--out', path.join(tempDir(), 'a')],
      ['plan', '--run', dir, '--models', '2', '--mem-gib', '10', '--sm-pct', '40'],
    ]) {
      const result = await cli(args);
      expect([args[0], result.exitCode]).toEqual([args[0], 2]);
      expectOneLineError(result.stderr, `${dir} is ${message}`);
    }
  });

  it.each([
    ['probe.json', probeRecord, 'a probe run (probe.json)'],
    ['capacity.json', capacityRecord, 'a capacity run (capacity.json)'],
  ])('show prints %s; gate says it grades bench runs', async (file, record, what) => {
    const dir = dirWith(file, record());
    const show = await cli(['show', dir]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`^${what.split(' ')[1]} run \\S+ \\((complete|interrupted|failed)\\)\n`));
    const gate = await cli(['gate', dir]);
    expect(gate.exitCode).toBe(2);
    expectOneLineError(
      gate.stderr,
      `gate grades bench runs (ratios, their thresholds and baselines); ${dir} is ${what}, which has none: gpushare show ${dir} prints its results`,
    );
  });

  it('probe --out a probe run of another id: it holds a different run', async () => {
    const dir = dirWith('probe.json', probeRecord());
    const result = await cli(['probe', '--probes', 'default-stream', '--out', dir]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${dir} already holds a different run (2026-11-24-h200-probe-aaaaaa): choose an empty directory with --out`,
    );
  });

  it('probe --resume of a bench run names what it is', async () => {
    const dir = dirWith('capacity.json', capacityRecord());
    const result = await cli(['probe', '--resume', dir]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${dir} is a capacity run (capacity.json), not a probe run: give a directory made by gpushare probe`,
    );
  });
});

describe('bench --gpus --out is opened like any run directory', () => {
  it("refuses a directory of the user's, and leaves it as it was", async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'gpu1'));
    writeFileSync(path.join(dir, 'gpu1', 'notes.txt'), 'mine');
    const result = await cli(['bench', '--gpus', 'all', '--out', dir, ...QUICK], { FAKE_GPUS: '2' });
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${dir} is not empty and holds no gpushare run (it has gpu1): choose an empty or new directory with --out`,
    );
    expect(readdirSync(dir)).toEqual(['gpu1']);
    expect(readFileSync(path.join(dir, 'gpu1', 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('refuses a single run, whose report it would replace', async () => {
    const dir = path.join(tempDir(), 'run');
    expect((await cli(['bench', '--out', dir, '--modes', 'streams', '--workloads', 'spin', ...QUICK])).exitCode).toBe(
      0,
    );
    const before = readdirSync(dir).sort();
    const result = await cli(['bench', '--gpus', 'all', '--out', dir, ...QUICK]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(
      result.stderr,
      `${dir} holds a bench run (run.json), not a multi-GPU run: choose an empty or new directory with --out`,
    );
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});
