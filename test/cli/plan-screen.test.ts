/** `gpushare plan` answers in one 80×24 screen; the arithmetic moves under --explain. */
import { describe, expect, it } from 'vitest';
import { H100_RUN, H100_SWEEP_RUN, H200_RUN, runCli, unfolded } from '../helpers.js';

const plan = (models: number, ...more: string[]) =>
  runCli(['plan', '--models', String(models), '--mem-gib', '1.5', '--sm-pct', '10', '--run', H100_SWEEP_RUN, ...more]);

/** Lines and their widest, in characters (µ and × are one column each). */
const shape = (text: string) => {
  const lines = text.replace(/\n$/, '').split('\n');
  return { lines: lines.length, widest: Math.max(...lines.map((l) => [...l].length)) };
};

const FORTY = `plan: 40 models × 1.5 GiB, 10% of the SMs each, on one NVIDIA H100 80GB HBM3
costs: run 2026-11-27-h100-80gb-hbm3-01535a, at 8 tenants (fewer than the 40
  asked: more cost more)

use: in-process streams
why: measured the lowest per-model slowdown of the options that fit: 6.45× at 8
  tenants (95% interval [6.408, 6.528])
runner-up: none; the most models each other option fits: green contexts 8 (SM
  groups), time-slicing 33 (memory), MPS 33 (memory), MIG 7 (MIG slices)
what breaks:
  - one fault domain: a fault or out-of-memory in one model ends all 40
  - one GIL: host time per request 19.2 µs alone, 93.3 µs with 8 tenants
  - one deployment: a model is updated or restarted with all the others
  - no SM or memory limits between models: a busy one slows the others
binding limit: memory, at 49 models (40 need 60.74 GiB of 75.67 GiB usable);
  before it, throughput: with all busy, only 10 get their 10% of the SMs

the arithmetic: --explain; the files to deploy it: --out <dir>
`;

const EIGHT = `plan: 8 models × 1.5 GiB, 10% of the SMs each, on one NVIDIA H100 80GB HBM3
costs: run 2026-11-27-h100-80gb-hbm3-01535a, at 8 tenants

use: in-process streams
why: measured the lowest per-model slowdown of the options that fit, its 95%
  interval below every other's: 6.45× [6.408, 6.528] at 8 tenants
runner-up: green contexts: measured the next lowest per-model slowdown of the
  options that fit: 7.28× [7.120, 7.310] at 8 tenants
what breaks:
  - one fault domain: a fault or out-of-memory in one model ends all 8
  - one GIL: host time per request 19.2 µs alone, 93.3 µs with 8 tenants
  - one deployment: a model is updated or restarted with all the others
  - no SM or memory limits between models: a busy one slows the others
binding limit: memory, at 49 models (8 need 12.74 GiB of 75.67 GiB usable);
  before it, throughput: with all busy, only 10 get their 10% of the SMs

the arithmetic: --explain; the files to deploy it: --out <dir>
`;

describe('plan on one screen, on the committed H100 sweep', () => {
  it('40 models: in-process streams, the only option that fits, each other option with the most it fits', async () => {
    const result = await plan(40);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout.trimEnd()).toBe(FORTY.trimEnd());
    expect(shape(result.stdout).lines).toBeLessThanOrEqual(23);
    expect(shape(result.stdout).widest).toBeLessThanOrEqual(80);
  });

  it('8 models: in-process streams, green contexts the runner-up, each with its interval', async () => {
    const result = await plan(8);
    expect(result.stdout.trimEnd()).toBe(EIGHT.trimEnd());
    expect(shape(result.stdout)).toEqual({ lines: 17, widest: 77 });
  });

  it('--explain prints the arithmetic of every option, folded to 80 columns', async () => {
    const result = await plan(40, '--explain');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(shape(result.stdout).widest).toBeLessThanOrEqual(80);
    const whole = unfolded(result.stdout);
    for (const option of [
      'in-process streams: fits',
      'green contexts: does not fit',
      'MPS: does not fit',
      'MIG: does not fit',
    ])
      expect(whole).toMatch(new RegExp(`^${option}$`, 'm'));
    expect(whole).toContain(
      '  - memory: 40 × 1.5 GiB + 40 contexts × 0.74 GiB measured overhead = 89.68 GiB of 75.67 GiB usable (79.65 GiB less 5% headroom): 14.02 GiB short',
    );
  });

  it('with a latency target: one answer on the screen and under --explain, its count as far as measured', async () => {
    const screen = await plan(40, '--slo-p99-ms', '10');
    expect(screen.exitCode, screen.stderr).toBe(0);
    const shown = unfolded(screen.stdout);
    expect(shown).toContain('\nuse: in-process streams\n');
    expect(shown).toContain(
      '\nrunner-up: none; the most models each other option fits: green contexts 8 (SM groups), time-slicing 33 (memory), MPS 33 (memory), MIG 7 (MIG slices)\n',
    );
    expect(shown).toContain('\nbinding limit: memory, at 49 models (40 need 60.74 GiB of 75.67 GiB usable);');
    expect(shown).toContain(
      '\np99 ≤ 10 ms: held at every count measured, up to 8 tenants (2.2 ms at 8); not measured at 40\n',
    );
    const explain = unfolded((await plan(40, '--slo-p99-ms', '10', '--explain')).stdout);
    expect(explain).toMatch(
      /^in-process streams: fits; the 10 ms p99 target held at every count measured, up to 8 tenants \(2\.2 ms at 8\); not measured at 40$/m,
    );
    // Each option's most models, as the screen gives them, is the count of its binding limit under --explain.
    const limits = [
      ...explain.matchAll(
        /^(.+): (?:fits|does not fit).*\n(?: {2}[-!] .*\n)*? {2}- binding limit: (.+?), at (\d+) models/gm,
      ),
    ];
    const most = Object.fromEntries(limits.map((m) => [m[1], Number(m[3])]));
    expect(most).toEqual({ 'in-process streams': 49, 'green contexts': 8, 'time-slicing': 33, MPS: 33 });
    for (const m of limits) expect(m[2]).not.toMatch(/p99 target/);
  });

  it('an untied ranking by isolation is said once: the runner-up ranked after the recommendation "for the same reason"', async () => {
    const result = await runCli([
      'plan',
      '--models',
      '36',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'A100-80GB',
      '--run',
      H200_RUN,
    ]);
    expect(result.stdout).toContain('\nrunner-up: time-slicing: fits; ranked after MPS for the same reason\n');
  });

  it('none fits: the fewest GPUs, and no --out hint, since there is nothing to deploy', async () => {
    const result = await runCli([
      'plan',
      '--models',
      '200',
      '--mem-gib',
      '1.5',
      '--sm-pct',
      '10',
      '--gpu-model',
      'H100-80GB',
    ]);
    expect(unfolded(result.stdout)).toContain(
      'use: none fits: the 200 models do not fit one H100-80GB in any mode: the fewest is 4 such GPUs, with in-process streams (50 models per GPU)',
    );
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('the arithmetic: --explain');
  });

  it('every answer fits one screen: 23 lines of 80 columns, over runs, GPUs and model counts', async () => {
    const cases = [H100_SWEEP_RUN, H100_RUN, H200_RUN].flatMap((run) =>
      [1, 8, 40, 200].flatMap((models) => [
        ['--run', run, '--models', String(models)],
        ['--run', run, '--gpu-model', 'A100-80GB', '--models', String(models), '--slo-p99-ms', '2'],
      ]),
    );
    for (const args of cases) {
      const result = await runCli(['plan', '--mem-gib', '1.5', '--sm-pct', '10', ...args]);
      expect([args.join(' '), result.exitCode]).toEqual([args.join(' '), 0]);
      const { lines, widest } = shape(result.stdout);
      expect([args.join(' '), lines <= 23, widest <= 80]).toEqual([args.join(' '), true, true]);
    }
  });
});
