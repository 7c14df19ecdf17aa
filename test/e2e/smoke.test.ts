/**
 * Each command once through the built CLI (dist/harness/main.js), as a user runs it: main's exit codes
 * and streams, and what reads this process's environment ($GITHUB_STEP_SUMMARY). Their behaviour in
 * detail is tested in process (test/cli/); bench, probe, capacity and fleet report run here in their
 * own files.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { Job } from 'kubernetes-models/batch/v1';
import type { Job as JobType } from 'kubernetes-types/batch/v1.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { VERSION } from '../../harness/core/version.js';
import { CLI, cli, DEFAULT_RUN, expectOneLineError, fakePath, ROOT, tempDir, unfolded } from '../helpers.js';

describe.concurrent('the built CLI, each command once', () => {
  it('--version and -h exit 0 and print to stdout alone', async () => {
    const version = await cli(['--version']);
    expect([version.exitCode, version.stdout, version.stderr]).toEqual([0, VERSION, '']);
    const help = await cli(['-h']);
    expect([help.exitCode, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^gpushare /);
  });

  it("a user's error: exit 2, one line on stderr, nothing written in the working directory", async () => {
    const cwd = tempDir();
    const result = await execa(process.execPath, [CLI, 'bench', '--out', '', '--rounds', '2'], {
      cwd,
      reject: false,
      env: { PATH: fakePath() },
    });
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, "--out '': needs a value, not an empty one");
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('doctor', async () => {
    const result = await cli(['doctor']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('ready to bench');
  });

  it('report and show', async () => {
    const out = tempDir();
    const report = await cli(['report', DEFAULT_RUN, '--out', out]);
    expect(report.exitCode).toBe(0);
    expect(readdirSync(out)).toContain(`${path.basename(DEFAULT_RUN)}.md`);
    const show = await cli(['show', DEFAULT_RUN]);
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toMatch(/^ {2}slowdown +2\.074×/m);
  });

  it('gate appends a markdown table to $GITHUB_STEP_SUMMARY', async () => {
    const summary = path.join(tempDir(), 'summary.md');
    writeFileSync(summary, '# earlier step\n');
    const gate = await cli(['gate', DEFAULT_RUN, '--baseline', DEFAULT_RUN], { GITHUB_STEP_SUMMARY: summary });
    expect(gate.exitCode).toBe(0);
    const text = readFileSync(summary, 'utf8');
    expect(text).toMatch(/^# earlier step\n### gpushare gate: pass\n/);
    expect(text).toMatch(
      /\| `timeslice\/gemm\/slowdown` \| 2\.\d{3} \| \[2\.\d{3}, 2\.\d{3}\] \| 1\.2–3\.5 \| pass \| [-+]0\.0% /,
    );
  });

  it('plan and artifacts', async () => {
    const plan = await cli(['plan', '--models', '3', '--mem-gib', '12', '--sm-pct', '20', '--gpu-model', 'H100-80GB']);
    expect(plan.exitCode).toBe(0);
    expect(plan.stdout).toMatch(/^use: MIG$/m);
    const out = path.join(tempDir(), 'artifacts');
    const artifacts = await cli(['artifacts', '--gpu-model', 'A100-80GB', '--out', out]);
    expect(artifacts.exitCode).toBe(0);
    expect(readdirSync(out)).toContain('gpushare-mps-start.sh');
  });

  it('fleet job writes the committed manifest for a 3-node H100 pool, which validates', async () => {
    const committed = path.join(ROOT, 'reports', 'fleet', 'job-3-node-h100-pool.yaml');
    const args = [
      'fleet',
      'job',
      '--nodes',
      'nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3',
      '--count',
      '3',
      '--image',
      'ghcr.io/gpushare/gpushare:0.1.0',
      '--modes',
      'timeslice,mps',
      '--gpus-per-node',
      '8',
    ];
    const out = path.join(tempDir(), 'job.yaml');
    const result = await cli([...args, '--out', out]);
    expect(result.exitCode).toBe(0);
    expect(unfolded(result.stdout)).toBe(
      `wrote ${out}: Indexed Job gpushare-fleet, 3 pod(s); apply it with kubectl apply -f ${out}`,
    );
    // Regenerate with: node dist/harness/main.js fleet job --nodes nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 --count 3 --image ghcr.io/gpushare/gpushare:0.1.0 --modes timeslice,mps --gpus-per-node 8 --out reports/fleet/job-3-node-h100-pool.yaml
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(committed, 'utf8'));
    const job = parse(readFileSync(committed, 'utf8')) as JobType;
    expect(() => new Job(job as ConstructorParameters<typeof Job>[0]).validate()).not.toThrow();
    expect(job.spec).toMatchObject({ completionMode: 'Indexed', completions: 3, parallelism: 3 });
    expect(readFileSync(committed, 'utf8')).toContain(`# Made by: gpushare ${args.join(' ')}\n`);
  });
});
