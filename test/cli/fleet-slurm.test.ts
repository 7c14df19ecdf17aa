/**
 * `gpushare fleet job --slurm`: an sbatch --array script with the Kubernetes Job's per-node bench and
 * exit codes. Checked by bash -n and shellcheck, and run by bash as Slurm would run one task, with
 * Slurm's variables set and a fake gpushare that records what it was asked and exits as told.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { podScript } from '../../harness/fleet/job/manifest.js';
import { resolveFleetJobOptions } from '../../harness/fleet/job/options.js';
import { expectOneLineError, expectShellcheckClean, runCli, tempDir } from '../helpers.js';

async function script(args: string[]): Promise<{ file: string; text: string }> {
  const file = path.join(tempDir(), 'gpushare.sbatch');
  const result = await runCli(['fleet', 'job', '--slurm', ...args, '--out', file]);
  expect(result.exitCode, result.stderr).toBe(0);
  return { file, text: readFileSync(file, 'utf8') };
}

/** A gpushare that writes its argv into its --out directory and exits with $FAKE_EXIT. */
function fakeGpushare(): string {
  const file = path.join(tempDir(), 'gpushare');
  writeFileSync(
    file,
    '#!/bin/bash\nout=""; prev=""; for a in "$@"; do [ "$prev" = --out ] && out=$a; prev=$a; done\nmkdir -p "$out" && printf "%s\\n" "$*" > "$out/argv"\nexit "$FAKE_EXIT"\n',
  );
  chmodSync(file, 0o755);
  return file;
}

/** One array task as Slurm runs it: the script under bash, in the submit directory, with Slurm's variables. */
async function runTask(file: string, env: Record<string, string>) {
  const submit = tempDir();
  const result = await execa('bash', [file], {
    cwd: submit,
    reject: false,
    env: {
      SLURM_SUBMIT_DIR: submit,
      SLURMD_NODENAME: 'gpu07',
      SLURM_ARRAY_TASK_ID: '5',
      FAKE_EXIT: '0',
      GPUSHARE: fakeGpushare(),
      ...env,
    },
  });
  return { ...result, submit };
}

describe('fleet job --slurm', () => {
  it('one exclusive task per node, all its GPUs benched with --gpus all; bash -n and shellcheck pass', async (context) => {
    const { file, text } = await script([
      '--count',
      '4',
      '--gpus-per-node',
      '8',
      '--partition',
      'gpu',
      '--constraint',
      'h100',
    ]);
    expect(text.split('\n').filter((l) => l.startsWith('#SBATCH'))).toEqual([
      '#SBATCH --job-name=gpushare-fleet',
      '#SBATCH --array=0-3',
      '#SBATCH --nodes=1',
      '#SBATCH --ntasks=1',
      '#SBATCH --gres=gpu:8',
      '#SBATCH --exclusive',
      '#SBATCH --time=2:30:00',
      '#SBATCH --output=gpushare-fleet-%A_%a.out',
      '#SBATCH --partition=gpu',
      '#SBATCH --constraint=h100',
    ]);
    // sbatch reads directives only until the first command.
    const lines = text.split('\n');
    const firstCommand = lines.findIndex((l) => l !== '' && !l.startsWith('#'));
    expect(lines.slice(firstCommand).some((l) => l.startsWith('#SBATCH'))).toBe(false);
    expect((await execa('bash', ['-n', file], { reject: false })).exitCode).toBe(0);
    await expectShellcheckClean(context, file);
  });

  it("benches and handles exit codes as the Kubernetes Job's pods do", async () => {
    const { text } = await script(['--count', '2', '--gpus-per-node', '4']);
    const options = resolveFleetJobOptions({
      nodes: 'pool=a',
      image: 'x/y:1',
      count: '2',
      gpusPerNode: '4',
    } as unknown as Parameters<typeof resolveFleetJobOptions>[0]);
    const pod = podScript(options.spec).split('\n');
    const bench = (lines: string[]) =>
      lines.find((l) => !l.startsWith('#') && l.includes(' bench '))?.replace(/^.*gpushare\S* bench /, 'bench ');
    expect(bench(text.split('\n'))).toBe(bench(pod)?.replace('"/results/$run"', '"$run"'));
    for (const line of [
      'trap \'kill -TERM "$pid" 2>/dev/null\' TERM INT',
      'echo "gpushare-bench-exit $run $code"',
      'case "$code" in 0|1|3) ;; *) status=$code ;; esac',
      'exit "$status"',
    ]) {
      expect(pod).toContain(line);
      expect(text.split('\n')).toContain(line);
    }
  });

  it('a task run as Slurm runs it: the run under the submit directory by node; 0, 1 and 3 succeed, 2 fails', async () => {
    const { file } = await script(['--count', '2', '--gpus-per-node', '4', '--modes', 'mps']);
    for (const [code, exit] of [
      ['3', 0],
      ['2', 2],
    ] as const) {
      const task = await runTask(file, { FAKE_EXIT: code });
      expect([task.exitCode, task.stdout]).toEqual([
        exit,
        `gpushare-bench-exit ${task.submit}/gpushare-fleet-results/gpu07 ${code}`,
      ]);
      expect(readFileSync(path.join(task.submit, 'gpushare-fleet-results', 'gpu07', 'argv'), 'utf8')).toBe(
        `bench --modes mps --gpus all --out ${task.submit}/gpushare-fleet-results/gpu07\n`,
      );
    }
  });

  it('--per gpu: one task per GPU, one GPU each, not exclusive, runs named by node and task', async () => {
    const { file, text } = await script([
      '--count',
      '3',
      '--per',
      'gpu',
      '--gpus-per-node',
      '4',
      '--results-dir',
      'runs/h100',
    ]);
    expect(text).toContain('#SBATCH --array=0-11\n');
    expect(text).toContain('#SBATCH --gres=gpu:1\n');
    expect(text).not.toContain('#SBATCH --exclusive');
    const task = await runTask(file, {});
    expect(task.exitCode).toBe(0);
    expect(existsSync(path.join(task.submit, 'runs', 'h100', 'gpu07', 'task5', 'argv'))).toBe(true);
  });

  it.each<[string[], string]>([
    [
      ['--slurm', '--count', '2', '--image', 'x/y:1'],
      '--image: a Kubernetes Job setting; --slurm writes an sbatch script, so drop --image',
    ],
    [['--slurm', '--count', '2', '--partition', 'gpu;rm'], "--partition 'gpu;rm': needs a Slurm partition name"],
    [['--slurm', '--count', '2', '--results-dir', '../x'], '--results-dir ../x: needs a path'],
    [
      ['--count', '2', '--nodes', 'a=b', '--image', 'x/y:1', '--partition', 'gpu'],
      '--partition: a Slurm setting; add --slurm',
    ],
    [['--count', '2', '--image', 'x/y:1'], 'fleet job needs --nodes (see gpushare fleet job --help), or --slurm'],
  ])('refuses %j: one line, exit 2', async (args, message) => {
    const result = await runCli(['fleet', 'job', ...args]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, `gpushare: ${message}`);
  });
});
