import { describe, expect, it } from 'vitest';
import { buildPlan, orderTrials, plainFits } from '../../harness/bench/comparisons.js';
import {
  type BenchArgs,
  ESTIMATE_ASSUMPTIONS_S,
  estimateSeconds,
  resolveBenchOptions,
} from '../../harness/bench/options.js';
import type { Fingerprint, Gpu } from '../../harness/system/nvidia/schema.js';
import { parseGpuList, parseMigPlacements, parseMigProfiles } from '../../harness/system/nvidia/smi-text.js';
import { builtinSpec } from '../../harness/workload/registry.js';
import { fixture, userErrorOf } from '../helpers.js';
import { testConfig } from './config-fixture.js';

function resolve(args: Partial<BenchArgs>) {
  return resolveBenchOptions({ rest: [], ...args });
}

const userError = (args: Partial<BenchArgs>) => userErrorOf(() => resolve(args));

describe('bench options', () => {
  it('fills in the documented defaults', () => {
    const { config } = resolve({});
    expect(config).toMatchObject({
      modes: ['streams', 'timeslice', 'mps', 'mig'],
      clients: 2,
      roundPolicy: { minRounds: 6, maxRounds: 40, ciTarget: 0.02, gradedCiTarget: 0.01, timeBudgetS: 45 },
      cpuPin: 'off',
      windowMs: 250,
      releaseLeadMs: 10,
      streamCounts: [2],
      minOverlap: 0.9,
    });
    expect(config.streamsWorkloads.map((w) => w.name)).toEqual(['spin', 'pipeline']);
    expect(config.contentionWorkloads.map((w) => w.name)).toEqual(['spin', 'gemm', 'infer']);
    expect(config.contentionWorkloads[1]?.argv.slice(2)).toEqual([
      '--size',
      '4096',
      '--dtype',
      'fp16',
      '--graph',
      'false',
      '--iterations',
      '400',
      '--sync-every',
      '8',
    ]);
  });

  it('applies --set to a workload and a stream sweep', () => {
    const { config } = resolve({ set: ['gemm.size=8192', 'gemm.graph=true'], streams: '2,4,8', workloads: 'gemm' });
    expect(config.contentionWorkloads[0]?.params).toMatchObject({ size: 8192, graph: true });
    expect(config.streamCounts).toEqual([2, 4, 8]);
  });

  it('takes the user command after -- as argv, untouched', () => {
    const { config } = resolve({ rest: ['./my workload', '--x', '$(rm -rf /)'] });
    expect(config.contentionWorkloads).toEqual([
      { name: 'custom', builtin: false, argv: ['./my workload', '--x', '$(rm -rf /)'], params: {} },
    ]);
  });

  it.each([
    [{ modes: 'streams,warp' }, 'unknown mode "warp" in --modes: choose from streams, green, timeslice, mps, mig'],
    [
      { workloads: 'gemm,resnet' },
      'unknown workload "resnet": choose from spin, gemm, infer, infer-eager, bandwidth, train, pipeline, or give your own command after --',
    ],
    [
      { workloads: 'custom' },
      'workload "custom" needs your command after --, e.g. gpushare bench -- ./my-workload --size 8',
    ],
    [{ rounds: '-1' }, '--rounds -1: needs a number from 1 to 1000'],
    [{ rounds: '2.5' }, '--rounds 2.5: needs a whole number from 1 to 1000'],
    [{ clients: '1' }, '--clients 1: needs a number from 2 to 64'],
    [{ clients: '2,65' }, '--clients 65: needs a number from 2 to 64'],
    [{ windowMs: 'abc' }, '--window-ms abc: needs a number from 50 to 600000'],
    [{ mpsThreadPct: '0' }, '--mps-thread-pct 0: needs a number from 1 to 100'],
    [{ mpsThreadPct: '101' }, '--mps-thread-pct 101: needs a number from 1 to 100'],
    [{ mpsMemLimit: '4X' }, '--mps-mem-limit 4X: needs a size such as 4G, 512M or 1024MB'],
    [{ set: ['gemm.size=abc'] }, '--set gemm.size=abc: needs a positive whole number'],
    [
      { set: ['gemm.colour=red'] },
      '--set gemm.colour: "colour" is not a parameter of gemm; it takes size, dtype, graph, iterations, sync-every',
    ],
    [{ set: ['size=3'] }, '--set size=3: expected workload.param=value, e.g. --set gemm.size=8192'],
    [{ streams: '1' }, '--streams 1: needs a number from 2 to 64'],
    [{ minOverlap: '1.5' }, '--min-overlap 1.5: needs a number from 0 to 1'],
  ])('rejects %j with one clear message', (args, message) => {
    expect(userError(args)).toBe(message);
  });

  it('normalizes a valid MPS memory limit', () => {
    expect(resolve({ mpsMemLimit: '512mb' }).config.mps.memLimit).toBe('512M');
  });
});

function fingerprint(gpu: Partial<Gpu>, mpsControl: string | null = '/usr/bin/nvidia-cuda-mps-control'): Fingerprint {
  const base: Gpu = {
    index: 0,
    uuid: 'GPU-7335e5d7-1513-c22d-a95a-e679698f16b8',
    name: 'NVIDIA H200',
    busId: null,
    driverVersion: '580.159.04',
    memoryTotalMiB: 143771,
    memoryUsedMiB: 0,
    utilGpuPct: 0,
    computeMode: 'Default',
    persistenceMode: 'Enabled',
    migModeCurrent: 'Disabled',
    migModePending: 'Disabled',
    migDevices: [],
    migProfiles: parseMigProfiles(fixture('mig-lgip.txt')),
    migPlacements: parseMigPlacements(fixture('mig-lgipp.txt')),
  };
  return {
    collectedAt: '',
    host: { platform: 'linux', kernel: '', arch: 'x64', cpus: 16, nodeVersion: 'v20' },
    nvidiaSmi: { path: '/usr/bin/nvidia-smi', error: null },
    driverVersion: '580.159.04',
    cudaVersion: '13.0',
    gpus: [{ ...base, ...gpu }],
    computeApps: [],
    mps: {
      controlPath: mpsControl,
      serverPath: null,
      defaultPipeDirectory: '/tmp/nvidia-mps',
      defaultDaemonSocket: false,
      runningPids: [],
    },
    python: { status: 'error', executable: 'python3', error: 'n/a' },
  };
}

describe("--dry-run's estimate", () => {
  it('counts a cold start for the first comparison, a switched start for the rest of a mode, a prestarted one for the first of the next (MPS too); all cold with --fresh-clients', () => {
    const config = resolveBenchOptions({ rest: [] } as unknown as BenchArgs).config;
    const comparisons = buildPlan(config, null).comparisons;
    expect(comparisons.map((c) => c.mode)).toEqual([
      'streams',
      'streams',
      'timeslice',
      'timeslice',
      'timeslice',
      'mps',
      'mps',
      'mps',
    ]);
    const warm = estimateSeconds(config, comparisons, 16);
    const fresh = estimateSeconds({ ...config, freshClients: true }, comparisons, 16);
    const { coldStart, prestartedStart, switchedStart } = ESTIMATE_ASSUMPTIONS_S;
    // Switched: streams/pipeline, timeslice/gemm and infer, mps/gemm and infer; prestarted: timeslice/spin and mps/spin.
    expect(fresh.wallS - warm.wallS).toBeCloseTo(
      2 * (coldStart - prestartedStart) + 5 * (coldStart - switchedStart),
      9,
    );
    expect(warm.windowsS).toBe(fresh.windowsS);
    // On 2 cores no measuring process and importer fit beside the harness's core together: no prestart,
    // but switching needs no core.
    expect(fresh.wallS - estimateSeconds(config, comparisons, 2).wallS).toBeCloseTo(5 * (coldStart - switchedStart), 9);
  });
});

describe('plan', () => {
  it('orders trials ABBA: arms forward in even rounds, reversed in odd ones', () => {
    const plan = buildPlan(testConfig({ modes: ['timeslice'] }), fingerprint({}));
    const first = plan.comparisons[0];
    if (!first) throw new Error('no comparison');
    expect(orderTrials(first, 3).map((t) => `${t.round}:${t.arm.id}`)).toEqual([
      '0:alone',
      '0:solo-c0',
      '0:solo-c1',
      '0:contended',
      '1:contended',
      '1:solo-c1',
      '1:solo-c0',
      '1:alone',
      '2:alone',
      '2:solo-c0',
      '2:solo-c1',
      '2:contended',
    ]);
  });

  it('runs pipeline with pinned host memory, and adds pageable arms with pipeline.pageable=true', () => {
    const plan = buildPlan(testConfig({ modes: ['streams'], streamCounts: [4] }), fingerprint({}));
    expect(plan.comparisons.map((c) => [c.id, c.arms.map((a) => a.id)])).toEqual([
      ['streams/spin', ['s1', 's4']],
      ['streams/pipeline', ['pinned-s1', 'pinned-s4']],
    ]);
    const both = buildPlan(
      testConfig({
        modes: ['streams'],
        streamCounts: [4],
        streamsWorkloads: [builtinSpec('pipeline', 'python3', { pageable: 'true' })],
      }),
      fingerprint({}),
    );
    expect(both.comparisons.map((c) => [c.id, c.arms.map((a) => a.id)])).toEqual([
      ['streams/pipeline', ['pinned-s1', 'pinned-s4', 'pageable-s1', 'pageable-s4']],
    ]);
    expect(both.comparisons[0]?.workload.argv).toContain('--pageable');
  });

  it('skips MIG with the exact reason and records the real profile table', () => {
    const plan = buildPlan(testConfig({ modes: ['mig'] }), fingerprint({}));
    expect(plan.comparisons).toEqual([]);
    const [mig] = plan.modes;
    expect(mig?.status).toBe('skipped');
    expect(mig?.reason).toBe(
      'MIG is Disabled on GPU 0 (it supports 7 MIG profiles, recorded here); enabling it needs an administrator (nvidia-smi -i N -mig 1) and a GPU reset, which gpushare never does',
    );
    expect(mig?.mig?.profiles.map((p) => p.name)).toContain('3g.71gb');
    expect(mig?.mig?.placements).toHaveLength(7);
  });

  it('pins each MIG client to its own MIG device when MIG is enabled (constructed -L fixture)', () => {
    const devices = parseGpuList(fixture('nvidia-smi-L-mig.txt'))[0]?.migDevices ?? [];
    const plan = buildPlan(
      testConfig({ modes: ['mig'] }),
      fingerprint({ migModeCurrent: 'Enabled', migDevices: devices }),
    );
    expect(plan.modes[0]?.status).toBe('ran');
    expect(plan.comparisons[0]?.clientEnv).toEqual([
      { CUDA_VISIBLE_DEVICES: 'MIG-1c6e8e3a-5b7e-5f0a-9a77-3f0b1e0c2d11' },
      { CUDA_VISIBLE_DEVICES: 'MIG-9d2f4b61-7a3c-5e29-8c14-62d0a5f3b7e2' },
    ]);
    expect(plan.modes[0]?.mig?.devices.map((d) => d.profile)).toEqual(['3g.71gb', '3g.71gb']);
  });

  it('measures the plain alone in every contention comparison but MIG, except where the GPU allows one context', () => {
    const { config } = resolve({ modes: 'streams,timeslice,mps', workloads: 'infer', clients: '2' });
    const plainArms = (computeMode: string) =>
      buildPlan({ ...config, tenancy: true }, fingerprint({ computeMode })).comparisons.map(
        (c) => `${c.id}: ${c.arms.some((a) => a.plain) ? 'plain' : 'own'}`,
      );
    expect(plainArms('Default')).toEqual([
      'streams/infer: own',
      'streams/infer@2: plain',
      'timeslice/infer: plain',
      'mps/infer: plain',
    ]);
    // Exclusive_Process: a plain process beside the MPS server or a time-sliced client could not start.
    expect(plainArms('Exclusive_Process').every((row) => row.endsWith(': own'))).toBe(true);
    expect([plainFits({ computeMode: 'Default' }), plainFits({ computeMode: null })]).toEqual([true, true]);
    expect([plainFits({ computeMode: 'Exclusive_Process' }), plainFits({ computeMode: 'Exclusive_Thread' })]).toEqual([
      false,
      false,
    ]);
  });

  it('a client sweep: one comparison per count, sorted, with one shared solo arm beyond 2 clients', () => {
    const { config } = resolve({ modes: 'timeslice,mps', workloads: 'infer', clients: '8,2,48,8' });
    expect([config.clients, config.clientCounts]).toEqual([2, [2, 8, 48]]);
    const plan = buildPlan(config, fingerprint({}));
    expect(
      plan.comparisons.map((c) => `${c.id}: ${c.clientEnv.length} clients, ${c.arms.map((a) => a.id).join(' ')}`),
    ).toEqual([
      'timeslice/infer@2: 2 clients, alone solo-c0 solo-c1 contended',
      'timeslice/infer@8: 8 clients, alone solo-c0 contended',
      'timeslice/infer@48: 48 clients, alone solo-c0 contended',
      'mps/infer@2: 2 clients, alone solo-c0 solo-c1 contended',
      'mps/infer@8: 8 clients, alone solo-c0 contended',
      'mps/infer@48: 48 clients, alone solo-c0 contended',
    ]);
    // One count is not a sweep: the ids stay as they were.
    expect(
      buildPlan(
        resolve({ modes: 'timeslice', workloads: 'infer', clients: '4' }).config,
        fingerprint({}),
      ).comparisons.map((c) => c.id),
    ).toEqual(['timeslice/infer']);
  });

  it('with --clients, streams and green run N tenants in one process: ids @N, green alone on the whole GPU and in its slice', () => {
    const { config } = resolve({ modes: 'streams,green,timeslice', workloads: 'infer', clients: '2,8', smPct: '10' });
    const plan = buildPlan(config, fingerprint({}));
    expect(
      plan.comparisons.map(
        (c) =>
          `${c.id}: ${c.tenants ?? '-'} tenants, ${c.clientEnv.length} clients, ${c.arms.map((a) => a.id).join(' ')}`,
      ),
    ).toEqual([
      'streams/infer: - tenants, 1 clients, s1 s2',
      'streams/infer@2: 2 tenants, 2 clients, alone solo-c0 contended',
      'streams/infer@8: 8 tenants, 8 clients, alone solo-c0 contended',
      'green/infer@2: 2 tenants, 2 clients, alone solo-c0 slice-solo-c0 contended',
      'green/infer@8: 8 tenants, 8 clients, alone solo-c0 slice-solo-c0 contended',
      'timeslice/infer@2: - tenants, 2 clients, alone solo-c0 solo-c1 contended',
      'timeslice/infer@8: - tenants, 8 clients, alone solo-c0 contended',
    ]);
    expect(plan.comparisons.find((c) => c.id === 'green/infer@2')?.clientEnv[0]).toEqual({
      GPUSHARE_GREEN_SM_PCT: '10',
    });
    expect(plan.comparisons.find((c) => c.id === 'streams/infer@2')?.clientEnv[0]).toEqual({});
    // Every mode divides by the plain process alone; each mode's solo-c0 is one tenant alone on the whole GPU:
    // green's runs tenant 0's twin outside any green context (whole); its slice-solo-c0 is tenant 0 alone in
    // its slice; streams needs no twin.
    const variants = (id: string) =>
      plan.comparisons.find((c) => c.id === id)?.arms.map((a) => `${a.id} ${JSON.stringify(a.clients[0]?.variant)}`);
    expect(variants('green/infer@2')).toEqual([
      'alone {"streams":1}',
      'solo-c0 {"streams":1,"whole":true}',
      'slice-solo-c0 {"streams":1}',
      'contended {"streams":1}',
    ]);
    expect(variants('streams/infer@2')).toEqual([
      'alone {"streams":1}',
      'solo-c0 {"streams":1}',
      'contended {"streams":1}',
    ]);
    // Without --clients the streams mode is the lab's fixed work alone, and green is not a default mode.
    const plain = resolve({ workloads: 'infer' }).config;
    expect(plain.modes).toEqual(['streams', 'timeslice', 'mps', 'mig']);
    expect(buildPlan({ ...plain, modes: ['streams'] }, fingerprint({})).comparisons.map((c) => c.id)).toEqual([
      'streams/infer',
    ]);
    expect(buildPlan({ ...plain, modes: ['green'] }, fingerprint({})).comparisons[0]?.clientEnv[0]).toEqual({
      GPUSHARE_GREEN_SM_PCT: 'even',
    });
    expect(userError({ modes: 'streams', smPct: '10' })).toBe(
      "--sm-pct 10 sets each green context's share: add green to --modes, or drop it",
    );
  });

  it('skips MIG when there are fewer MIG devices than clients', () => {
    const devices = parseGpuList(fixture('nvidia-smi-L-mig.txt'))[0]?.migDevices ?? [];
    const plan = buildPlan(
      testConfig({ modes: ['mig'], clients: 3 }),
      fingerprint({ migModeCurrent: 'Enabled', migDevices: devices }),
    );
    expect(plan.modes[0]?.reason).toBe('MIG is enabled on GPU 0 but it has 2 MIG devices; 3 clients need one each');
  });

  it('passes MPS client limits through the environment and skips MPS without its binary', () => {
    const config = testConfig({ modes: ['mps'], mps: { threadPct: 50, memLimit: '4G' } });
    const plan = buildPlan(config, fingerprint({}));
    expect(plan.comparisons[0]?.clientEnv[1]).toEqual({
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '50',
      CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=4G',
    });
    expect(buildPlan(config, fingerprint({}, null)).modes[0]?.reason).toBe(
      'nvidia-cuda-mps-control is not on PATH (it ships with the NVIDIA driver)',
    );
  });
});
