/**
 * The fleet's pre-check (#49, the 40-server question): memory (Σ mem_fraction of the GPU plus a CUDA
 * context per server), the MPS client limit and the host's cores, each at its boundary; a mode ruled
 * out is skipped with the figures, too few cores a warning.
 */
import { describe, expect, it } from 'vitest';
import {
  type FitCheck,
  fitSkipReason,
  fitWarnings,
  fleetFit,
  preCheckFleet,
} from '../../harness/serve/fleet/fleet-fit.js';
import type { ServeGroup } from '../../harness/serve/record.js';
import { CUDA_CONTEXT_MIB } from '../../harness/system/cuda-context.js';
import { MPS_CLIENT_LIMIT } from '../../harness/system/mps/client-limit.js';

const ALL = ['timeslice', 'mps', 'mps-threads'] as const;
const checksOf = (n: number, over: Partial<Parameters<typeof fleetFit>[0]> = {}) =>
  fleetFit({
    memFractions: Array.from({ length: n }, () => 0.01),
    modes: ALL,
    gpuMemoryMiB: 81920,
    cores: 128,
    loadWorkers: 8,
    ...over,
  });
const check = (checks: FitCheck[], name: FitCheck['check']) => checks.find((c) => c.check === name);

describe('fleetFit', () => {
  it('MPS clients: 48 fit, 49 do not, for the MPS modes only', () => {
    expect(MPS_CLIENT_LIMIT).toBe(48);
    expect(check(checksOf(48), 'mps-clients')).toEqual({
      check: 'mps-clients',
      modes: ['mps', 'mps-threads'],
      fits: true,
      blocks: true,
      text: 'MPS clients: 48 servers within the 48 clients an MPS server accepts per GPU',
    });
    const over = checksOf(49);
    expect(check(over, 'mps-clients')?.fits).toBe(false);
    expect(fitSkipReason(over, 'mps')).toBe(
      'the fleet does not fit: MPS clients: 49 servers over the 48 clients an MPS server accepts per GPU',
    );
    expect(fitSkipReason(over, 'mps-threads')).not.toBeNull();
    expect(fitSkipReason(over, 'timeslice')).toBeNull();
    expect(check(checksOf(49, { modes: ['timeslice'] }), 'mps-clients')).toBeUndefined();
  });

  it('memory: exactly all of the GPU fits, a MiB less does not', () => {
    // Two servers of half the GPU between them: 0.5 × G + 2 contexts = G at G = 4 contexts.
    const at = (gpuMemoryMiB: number) =>
      check(checksOf(2, { memFractions: [0.25, 0.25], gpuMemoryMiB }), 'memory') as FitCheck;
    const exactly = 4 * CUDA_CONTEXT_MIB;
    expect(CUDA_CONTEXT_MIB).toBe(768);
    expect(at(exactly)).toMatchObject({ fits: true, blocks: true, modes: [...ALL] });
    expect(at(exactly).text).toBe(
      'memory: Σ mem_fraction 0.500 × 3072 MiB = 1536 MiB, plus 2 CUDA contexts × 768 MiB = 1536 MiB: 3072 of 3072 MiB (100.0%), fits',
    );
    expect(at(exactly - 1).fits).toBe(false);
    expect(at(exactly - 1).text).toMatch(/: 3072 of 3071 MiB \(100\.0%\), over: lower mem_fraction or count$/);
    expect(fitSkipReason(checksOf(2, { memFractions: [0.25, 0.25], gpuMemoryMiB: exactly - 1 }), 'timeslice')).toMatch(
      /^the fleet does not fit: memory: /,
    );
    // Within a thousandth of a MiB over still fits (a float sum), not beyond: 1024 × f + 768 is 1024.001 exactly.
    const within = (f: number) => check(checksOf(1, { memFractions: [f], gpuMemoryMiB: 1024 }), 'memory')?.fits;
    expect(1024 * 0.2500009765624999 + 768).toBe(1024 + 1e-3);
    expect(within(0.2500009765624999)).toBe(true);
    expect(within(0.2500009765625001)).toBe(false);
    // 40 servers of 2.4% on an 80 GiB GPU: 96% in shares, and 30 GiB of contexts on top.
    expect(check(checksOf(40, { memFractions: Array.from({ length: 40 }, () => 0.024) }), 'memory')?.text).toBe(
      'memory: Σ mem_fraction 0.960 × 81920 MiB = 78643 MiB, plus 40 CUDA contexts × 768 MiB = 30720 MiB: 109363 of 81920 MiB (133.5%), over: lower mem_fraction or count',
    );
  });

  it('memory not known: not checked, and no mode ruled out by it', () => {
    const checks = checksOf(3, { gpuMemoryMiB: null });
    expect(check(checks, 'memory')?.fits).toBeNull();
    expect(check(checks, 'memory')?.text).toBe(
      'memory: Σ mem_fraction 0.030 and 3 CUDA contexts × 768 MiB = 2304 MiB, against a GPU memory not known: not checked',
    );
    expect(fitSkipReason(checks, 'timeslice')).toBeNull();
  });

  it('host CPUs: servers + workers up to the cores fit, one more is a warning, never a skip', () => {
    expect(check(checksOf(6, { cores: 8, loadWorkers: 2 }), 'host-cpus')).toEqual({
      check: 'host-cpus',
      modes: [...ALL],
      fits: true,
      blocks: false,
      text: 'host CPUs: 6 servers + 2 load generator workers = 8 processes on 8 cores: a core each',
    });
    expect(fitWarnings(checksOf(6, { cores: 8, loadWorkers: 2 }))).toEqual([]);
    const over = checksOf(6, { cores: 7, loadWorkers: 2 });
    expect(check(over, 'host-cpus')?.fits).toBe(false);
    expect(check(over, 'host-cpus')?.text).toMatch(
      /^host CPUs: 6 servers \+ 2 load generator workers = 8 processes on 7 cores: 0\.88 of a core each/,
    );
    for (const mode of ALL) expect(fitSkipReason(over, mode)).toBeNull();
    expect(fitWarnings(over)).toEqual([check(over, 'host-cpus')?.text]);
  });

  it('a mode two checks rule out is skipped with both, in order', () => {
    const both = checksOf(49, { memFractions: Array.from({ length: 49 }, () => 0.03) });
    expect(fitSkipReason(both, 'mps')).toMatch(
      /^the fleet does not fit: memory: .*, over: lower mem_fraction or count; MPS clients: 49 servers over the 48 clients/,
    );
    // A blocking check is never a warning.
    expect(fitWarnings(both)).toEqual([]);
  });
});

describe('preCheckFleet', () => {
  const group = (mode: ServeGroup['mode'], status: ServeGroup['status'] = 'pending'): ServeGroup => ({
    mode,
    copies: 49,
    status,
    reason: null,
    rounds: [],
    steps: [],
    env: {},
  });

  it('skips the modes ruled out with the figures, keeps the checks, warns of the cores, leaves finished groups', () => {
    const run = {
      groups: [group('timeslice'), group('mps'), group('mps-threads', 'measured')],
      host: { cpus: 16 },
      settings: { loadWorkers: 8 },
      warnings: [] as string[],
      fleet: {} as { fit?: FitCheck[] },
    };
    preCheckFleet(
      run,
      Array.from({ length: 49 }, () => 0.01),
      81920,
    );
    expect(run.groups.map((g) => `${g.mode} ${g.status}`)).toEqual([
      'timeslice pending',
      'mps skipped',
      'mps-threads measured',
    ]);
    expect(run.groups[1]?.reason).toContain('49 servers over the 48 clients');
    expect(run.fleet.fit?.map((c) => `${c.check} ${c.fits}`)).toEqual([
      'memory true',
      'mps-clients false',
      'host-cpus false',
    ]);
    expect(run.warnings).toEqual([expect.stringMatching(/^host CPUs: 49 servers \+ 8 load generator workers/)]);
    // Run again (a resume): the same warning is not added twice.
    preCheckFleet(
      run,
      Array.from({ length: 49 }, () => 0.01),
      81920,
    );
    expect(run.warnings).toHaveLength(1);
  });

  it('leaves the dedicated group out of the checks and never skips it; a run without fleet keeps no checks', () => {
    const run = {
      groups: [group('dedicated'), group('timeslice')],
      host: { cpus: 128 },
      settings: {},
      warnings: [] as string[],
      fleet: {} as { fit?: FitCheck[] },
    };
    preCheckFleet(run, [0.6, 0.6], 81920);
    expect(run.fleet.fit?.map((c) => [c.check, c.modes])).toEqual([
      ['memory', ['timeslice']],
      ['host-cpus', ['timeslice']],
    ]);
    expect(run.groups.map((g) => `${g.mode} ${g.status}`)).toEqual(['dedicated pending', 'timeslice skipped']);
    const bare = { groups: [group('timeslice')], host: { cpus: 128 }, settings: {}, warnings: [] as string[] };
    preCheckFleet(bare, [0.6, 0.6], 81920);
    expect(bare.groups[0]?.status).toBe('skipped');
  });
});
