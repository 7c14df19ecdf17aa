/** bench --gpus end to end on a fake two-GPU host: the cross-GPU check, one run per GPU, the combined report. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HostRun } from '../../harness/bench/record/host-record.js';
import { cli, expectOneLineError, QUICK, runOnDisk, tempDir, until } from '../helpers.js';

const TWO_GPUS = { FAKE_GPUS: '2' };
const UUID = ['GPU-7335e5d7-1513-c22d-a95a-e679698f16b8', 'GPU-7335e5d7-1513-c22d-a95a-e679698f16b9'];
const host = (parent: string) => JSON.parse(readFileSync(path.join(parent, 'host.json'), 'utf8')) as HostRun;

describe('gpushare bench --gpus (fake two-GPU host)', () => {
  it('checks the GPUs against each other, benches each in a run of its own side by side when they do not interfere, and combines the reports', async () => {
    const parent = path.join(tempDir(), 'host');
    const result = await cli(
      ['bench', '--gpus', 'all', '--modes', 'timeslice,mps', '--workloads', 'infer', ...QUICK, '--out', parent],
      TWO_GPUS,
    );
    expect(result.exitCode).toBe(0);
    const record = host(parent);
    expect(record.status).toBe('complete');
    expect(record.gpus.map((g) => [g.index, g.uuid, g.dir, g.exitCode])).toEqual([
      [0, UUID[0], 'gpu0', 0],
      [1, UUID[1], 'gpu1', 0],
    ]);
    expect(record.schedule?.parallel).toBe(true);
    expect(result.stderr).toContain('a loaded neighbour costs every GPU under 2%');
    // Side by side, each GPU's lines carry its name.
    expect(result.stdout).toContain('[GPU 1] ');

    // The check: one victim per GPU, two time-sliced loaders on the other, each client on its own GPU.
    const cross = runOnDisk(path.join(parent, 'cross'));
    expect(cross?.plan.map((c) => c.id)).toEqual(['cross/infer@gpu0', 'cross/infer@gpu1']);
    expect(cross?.plan[0]?.clientEnv.map((e) => `${e.GPUSHARE_CROSS_ROLE} ${e.CUDA_VISIBLE_DEVICES}`)).toEqual([
      `victim ${UUID[0]}`,
      `loader ${UUID[1]}`,
      `loader ${UUID[1]}`,
    ]);
    expect(cross?.plan[1]?.crossGpu).toEqual({ victimGpu: 1, loadedGpus: [0], loadersPerGpu: 2 });

    for (const gpu of [0, 1]) {
      const run = runOnDisk(path.join(parent, `gpu${gpu}`));
      expect(run?.status).toBe('complete');
      expect(run?.config.gpuIndex).toBe(gpu);
      // Each run samples its own GPU.
      expect(new Set(run?.samples.map((s) => s.gpuIndex))).toEqual(new Set([gpu]));
    }

    const report = readFileSync(path.join(parent, 'report', `${record.id}.md`), 'utf8');
    expect(report).toMatch(/\| 0 \| infer \| GPU 1 × 2 clients \| 1\.000 \| \[1\.000, 1\.000\] \|/);
    expect(report).toMatch(/\| 1 \| infer \| GPU 0 × 2 clients \| 1\.000 \|/);
    expect(report).toContain('the GPUs run in parallel');
    // The fake time-slices 2 clients 2 ways on either GPU: the same ratio, no spread.
    expect(report).toMatch(/\| `timeslice\/infer\/slowdown` \| 2\.000 ±0\.00% \| 2\.000 ±0\.00% \| 0\.0% \|/);
  });

  it('runs the GPUs one after another when a loaded neighbour slows a GPU, and report regenerates the combined report', async () => {
    const parent = path.join(tempDir(), 'host');
    const result = await cli(
      ['bench', '--gpus', '0,1', '--modes', 'timeslice', '--workloads', 'infer', ...QUICK, '--out', parent],
      { ...TWO_GPUS, FAKE_CROSS_GPU: '1.25' },
    );
    expect(result.exitCode).toBe(0);
    const record = host(parent);
    expect(record.schedule?.parallel).toBe(false);
    expect(record.schedule?.reason).toContain('may cost GPU 0 and GPU 1 over 2% (GPU 0 infer 1.250×');
    expect(result.stdout).not.toContain('[GPU ');
    expect(record.gpus.map((g) => g.exitCode)).toEqual([0, 0]);

    const out = tempDir();
    const again = await cli(['report', parent, '--out', out]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout.trim()).toBe(path.join(out, `${record.id}.md`));
    const report = readFileSync(path.join(out, `${record.id}.md`), 'utf8');
    expect(report).toMatch(/\| 0 \| infer \| GPU 1 × 2 clients \| 1\.250 \|/);
    expect(report).toContain('the GPUs run one after another');
    // The links to each run's own report resolve: report wrote them beside the combined one.
    for (const gpu of record.gpus)
      expect(readFileSync(path.join(out, `${runOnDisk(path.join(parent, gpu.dir))?.id}.md`), 'utf8')).toContain('# ');
  });

  it("one GPU that cannot run is that GPU's outcome: the other is benched, the combined report written, and the exit code is 2", async () => {
    const parent = path.join(tempDir(), 'host');
    const args = ['bench', '--gpus', 'all', '--modes', 'timeslice', '--workloads', 'infer', ...QUICK, '--quiet'];
    // Killed during its cross-GPU check, before any GPU's run started.
    const killed = cli([...args, '--out', parent], TWO_GPUS);
    await until(() => runOnDisk(path.join(parent, 'cross')) !== null, 60_000, 'the cross-GPU check to start');
    killed.kill('SIGKILL');
    await killed;
    // Then GPU 1's run directory is taken by somebody else's file: on --resume its run is refused, GPU 0's is not.
    mkdirSync(path.join(parent, 'gpu1'), { recursive: true });
    writeFileSync(path.join(parent, 'gpu1', 'notes.txt'), 'mine');
    const result = await cli(['bench', '--resume', parent, '--quiet'], TWO_GPUS);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^gpushare: GPU 1: .*gpu1/m);
    const record = host(parent);
    expect(record.status).toBe('failed');
    expect(record.gpus.map((g) => g.exitCode)).toEqual([0, 2]);
    expect(runOnDisk(path.join(parent, 'gpu0'))?.status).toBe('complete');
    expect(readFileSync(path.join(parent, 'gpu1', 'notes.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(path.join(parent, 'report', `${record.id}.md`), 'utf8')).toMatch(
      /\| 1 \| NVIDIA H200 \| .* \| `gpu1` \(no run\) \| missing \| 2 \|/,
    );
  });

  it('--cpu-pin auto keeps the GPUs one after another: side by side, their clients would share cores', async () => {
    const parent = path.join(tempDir(), 'host');
    const result = await cli(
      [
        'bench',
        '--gpus',
        'all',
        '--cpu-pin',
        'auto',
        '--modes',
        'timeslice',
        '--workloads',
        'infer',
        ...QUICK,
        '--out',
        parent,
        '--quiet',
      ],
      TWO_GPUS,
    );
    expect(result.exitCode).toBe(0);
    expect(host(parent).schedule).toEqual({
      parallel: false,
      reason: expect.stringMatching(
        /under 2% .*, but --cpu-pin auto would give each GPU's clients the same cores: the GPUs run one after another$/,
      ),
    });
  });

  it('with one GPU, benches it without a cross-GPU check', async () => {
    const parent = path.join(tempDir(), 'host');
    const result = await cli([
      'bench',
      '--gpus',
      'all',
      '--modes',
      'timeslice',
      '--workloads',
      'spin',
      ...QUICK,
      '--out',
      parent,
      '--quiet',
    ]);
    expect(result.exitCode).toBe(0);
    const record = host(parent);
    expect(record.gpus.map((g) => g.index)).toEqual([0]);
    expect(record.crossDir).toBeNull();
    expect(record.schedule?.reason).toContain('one GPU');
  });

  it.each([
    [['--gpus', '0,3'], 'no GPU with index 3'],
    [['--gpus', '0', '--gpu', '1'], '--gpu 1 and --gpus 0: give one'],
    [['--gpus', '0,x'], '--gpus x: needs a whole number'],
    [['--gpus', 'all', '--dry-run'], '--dry-run with --gpus'],
  ])('refuses %j in one line', async (args, message) => {
    const result = await cli(['bench', ...args, '--out', path.join(tempDir(), 'host')], TWO_GPUS);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, message);
  });
});
