/** `gpushare show` of a mix run: its cells under their header, as mix ended with; gate says what it grades. */
import { describe, expect, it } from 'vitest';
import { expectOneLineError, H100_MIX_RUN, runCli } from '../helpers.js';

describe.concurrent('show and gate given a mix run', () => {
  it('show prints its id, status and cells', async () => {
    const result = await runCli(['show', H100_MIX_RUN]);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^mix run 2026-11-24-h100-80gb-hbm3-mix-35ef80 \(complete\)\nload aggressor +mode/);
    expect(result.stdout).toMatch(/^ +\d+% \S+ +mps/m);
  });

  it('show --json points to report --json', async () => {
    const result = await runCli(['show', H100_MIX_RUN, '--json']);
    expectOneLineError(result.stderr, `use gpushare report ${H100_MIX_RUN} --json`);
  });

  it('gate names the runs it grades', async () => {
    const result = await runCli(['gate', H100_MIX_RUN]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'gate grades bench runs (ratios, their thresholds and baselines)');
  });
});
