/** `gpushare doctor` in process, with the fake nvidia-smi, MPS control and python3 on PATH, or without NVIDIA's tools. */
import { describe, expect, it } from 'vitest';
import { FingerprintSchema } from '../../harness/system/nvidia/schema.js';
import { atShortPath, joined, pathWithoutNvidia, runCli } from '../helpers.js';

const cli = runCli;

describe('gpushare doctor', () => {
  it('shows the GPU, MIG profiles, MPS and Python, and is ready', async () => {
    const result = await cli(['doctor']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(
      'GPU 0        NVIDIA H200  GPU-7335e5d7-1513-c22d-a95a-e679698f16b8  143771 MiB\n             compute mode Default, persistence Enabled\n',
    );
    expect(result.stdout).toMatch(/^ {13}MIG profiles: 1g\.18gb, 1g\.18gb\+me, 1g\.35gb, 2g\.35gb, 3g\.71gb,$/m);
    expect(result.stdout).toContain('ready to bench');
    // On the simulator, and saying so first.
    expect(result.stdout).toMatch(/^SIMULATED: made on gpushare's simulator, not on a GPU/);
    // Every line fits the 80 columns runCli's terminal has; a folded line goes on under its text.
    // Measured as from a checkout at a short path: the fake's path is one word no fold can shorten.
    expect(
      result.stdout
        .split('\n')
        .map(atShortPath)
        .filter((l) => [...l].length > 80),
    ).toEqual([]);
    // Where the line folds depends on the checkout's path (the fake's), so read the folded words whole.
    expect(result.stdout).toMatch(/^MPS {10}control/m);
    expect(joined(result.stdout)).toContain('nvidia-cuda-mps-control, server not on PATH');
  });

  it('--verbose lists each MIG profile with its SMs, memory and slots', async () => {
    const result = await cli(['doctor', '--verbose']);
    expect(result.stdout).toContain('MIG profile 3g.71gb (id 9): 60 SMs, 69.75 GiB, 2/2 free, slots 0,4\n');
    expect((await cli(['doctor'])).stdout).not.toContain('60 SMs');
  });

  it('--json prints a fingerprint that matches the run schema', async () => {
    const result = await cli(['doctor', '--json']);
    const parsed = JSON.parse(result.stdout) as { ready: boolean };
    expect(parsed.ready).toBe(true);
    expect(FingerprintSchema.safeParse(parsed).success).toBe(true);
  });

  it('without nvidia-smi says what is missing and exits 2', async () => {
    const result = await cli(['doctor'], {}, { path: pathWithoutNvidia() });
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toContain('nvidia-smi not found on PATH: install the NVIDIA driver');
  });
});
