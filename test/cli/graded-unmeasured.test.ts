/**
 * A run exits 0 only when every graded ratio was measured and passed: a graded comparison skipped as
 * unsupported, a process that could not switch (or switched to another workload than asked), or a
 * run that measured nothing is exit 3 with the reason, and the gate refuses such a run or baseline.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir, unfolded } from '../helpers.js';

/** Six rounds: a graded ratio of fewer is inconclusive, whatever it measured. */
const SIX = ['--rounds', '6', '--max-rounds', '6', '--window-ms', '50', '--quiet'];
const TWO = ['--rounds', '2', '--max-rounds', '2', '--window-ms', '50', '--quiet'];
/** 17 tenants: more than the 16 green contexts the simulated H200's 132 SMs split into, so green is unsupported. */
const GREEN_UNSUPPORTED = ['--modes', 'green,streams', '--workloads', 'gemm', '--clients', '17'];

function thresholds(rules: Record<string, string>): string {
  const file = path.join(tempDir(), 'th.yaml');
  writeFileSync(
    file,
    `thresholds:\n${Object.entries(rules)
      .map(([pattern, bounds]) => `  ${pattern}: ${bounds}\n`)
      .join('')}`,
  );
  return file;
}

describe('a graded ratio that was not measured is no pass', () => {
  it('green skipped as unsupported: exit 0 while ungraded, exit 3 naming the threshold once graded; the gate agrees', async () => {
    // Nothing else is graded (the default thresholds name other ratios): two rounds are enough.
    const greenOnly = thresholds({ 'green/gemm@17/slowdown': '{max: 1000}' });
    const out = path.join(tempDir(), 'run');
    const ungraded = await runCli(['bench', '--out', out, ...GREEN_UNSUPPORTED, ...TWO]);
    expect(ungraded.exitCode, ungraded.stderr).toBe(0);
    const graded = await runCli([
      'bench',
      '--out',
      path.join(tempDir(), 'run'),
      ...GREEN_UNSUPPORTED,
      '--config',
      greenOnly,
      ...TWO,
    ]);
    expect(graded.exitCode).toBe(3);
    const line =
      'green/gemm@17/slowdown is graded (green/gemm@17/slowdown: ≤ 1000) but was not measured: green/gemm@17 was skipped: workload "gemm" (17 tenants) cannot run here';
    expect(graded.stderr).toContain(`gpushare: ${line}`);

    // The ungraded run: the gate passes it under its own thresholds, and refuses it graded on green.
    expect((await runCli(['gate', out])).exitCode).toBe(0);
    const gated = await runCli(['gate', out, '--config', greenOnly]);
    expect(gated.exitCode).toBe(3);
    expect(unfolded(gated.stdout)).toContain(line);
    // As a baseline, too: a baseline that never measured a graded ratio cannot vouch for it.
    const against = await runCli(['gate', out, '--baseline', out, '--config', greenOnly]);
    expect(against.exitCode).toBe(3);
    expect(unfolded(against.stdout)).toMatch(
      /baseline \S+: green\/gemm@17\/slowdown is graded .*gate against a baseline that measured it/,
    );
  });

  it('a run in which every comparison was skipped as unsupported measured nothing: exit 3, and the gate refuses it', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await runCli([
      'bench',
      '--out',
      out,
      '--modes',
      'green',
      '--workloads',
      'gemm',
      '--clients',
      '17',
      ...SIX,
    ]);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('gpushare: nothing was measured: green/gemm@17 was skipped: workload "gemm"');
    const gated = await runCli(['gate', out]);
    expect(gated.exitCode).toBe(3);
    expect(unfolded(gated.stdout)).toContain('nothing was measured: green/gemm@17 was skipped');
  });
});

describe('a switch the process could not make is a failure, not a skip', () => {
  const run = (env: Record<string, string>) =>
    runCli(
      ['bench', '--out', path.join(tempDir(), 'run'), '--modes', 'timeslice', '--workloads', 'gemm,infer', ...SIX],
      env,
    );

  it('switched as asked: exit 0', async () => {
    const result = await run({});
    expect(result.exitCode, result.stderr).toBe(0);
  });

  it('a process that answers a switch "unsupported": exit 3, naming it', async () => {
    const result = await run({ FAKE_WORKLOAD: 'switch-unsupported' });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(
      /^gpushare: timeslice\/infer measured nothing: no round completed \(.*could not switch to "\S+infer\.py": .*this process cannot serve infer\.py\)$/m,
    );
  });

  it('a ready line after a switch that names another workload: exit 3, its numbers not recorded as the one asked', async () => {
    const result = await run({ FAKE_WORKLOAD: 'switch-renamed' });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(
      /^gpushare: timeslice\/infer measured nothing: .*said ready as workload "my-model" after it was asked to switch to "infer"/m,
    );
  });
});
