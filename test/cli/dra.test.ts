/** `--k8s dra` on artifacts and plan, through run(argv, deps): the DRA files beside the device-plugin ones. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { expectOneLineError, H200_RUN, runCli, tempDir } from '../helpers.js';

const sharing = (file: string) =>
  parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS())
    .filter(Boolean)[0].spec.devices.config[0].opaque.parameters.sharing;

describe('--k8s dra', () => {
  it("plan --out writes the recommendation's claims (MPS with plan's limits) and a Job requesting the claim", async () => {
    const out = path.join(tempDir(), 'plan');
    const r = await runCli([
      'plan',
      '--models',
      '4',
      '--mem-gib',
      '10',
      '--sm-pct',
      '20',
      '--gpu-model',
      'H100-80GB',
      '--out',
      out,
      '--k8s',
      'dra',
    ]);
    expect(r.exitCode).toBe(0);
    expect(readdirSync(out)).toEqual(expect.arrayContaining(['gpushare-dra-claims.yaml', 'gpushare-dra-job.yaml']));
    expect(sharing(path.join(out, 'gpushare-dra-claims.yaml'))).toEqual({
      strategy: 'MPS',
      mpsConfig: { defaultActiveThreadPercentage: 25, defaultPinnedDeviceMemoryLimit: '20377Mi' },
    });
    // The device-plugin files are still written.
    expect(readdirSync(out)).toContain('gpushare-device-plugin-configmap.yaml');
  });

  it('artifacts --run: the measured default mode, or time-slicing (with its consumable-shares form) when none', async () => {
    const out = path.join(tempDir(), 'artifacts');
    const r = await runCli(['artifacts', '--run', H200_RUN, '--out', out, '--k8s', 'dra']);
    expect(r.exitCode).toBe(0);
    expect(sharing(path.join(out, 'gpushare-dra-claims.yaml'))).toEqual({
      strategy: 'TimeSlicing',
      timeSlicingConfig: { interval: 'Default' },
    });
    expect(readdirSync(out)).toContain('gpushare-dra-consumable-shares.yaml');
  });

  it('without --k8s dra: no DRA file', async () => {
    const out = path.join(tempDir(), 'artifacts');
    await runCli(['artifacts', '--gpu-model', 'H100-80GB', '--out', out]);
    expect(readdirSync(out).filter((f) => f.includes('dra'))).toEqual([]);
  });

  it('refuses another value in one line, exit 2', async () => {
    const r = await runCli(['artifacts', '--gpu-model', 'H100-80GB', '--out', tempDir(), '--k8s', 'DRA']);
    expect(r.exitCode).toBe(2);
    expectOneLineError(r.stderr, '--k8s DRA: choose dra (DRA ResourceClaims) or device-plugin (the default)');
  });
});
