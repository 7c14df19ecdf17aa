import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { Measured } from '../../harness/bench/analysis/which-mode.js';
import { advise } from '../../harness/deploy/advice.js';
import { adviceText } from '../../harness/deploy/advice-text.js';
import { artifactBundle, sharingConfigs } from '../../harness/deploy/bundle.js';
import { DevicePluginConfigSchema, devicePluginConfig } from '../../harness/deploy/k8s.js';
import { MigPartedSpecSchema, standardGeometries } from '../../harness/deploy/mig-parted.js';
import { builtinMigGpu, type MigGpu, migGpuFromRun } from '../../harness/deploy/mig-profiles.js';
import { placeGeometry } from '../../harness/deploy/mig-solver.js';
import type { PlanGpu } from '../../harness/deploy/plan-types.js';
import { bindingLimit, contextOverhead, memoryFit } from '../../harness/deploy/verdicts.js';
import type { Gpu } from '../../harness/system/nvidia/schema.js';
import { parseMigPlacements, parseMigProfiles } from '../../harness/system/nvidia/smi-text.js';
import { expectShellcheckClean, fixture, tempDir } from '../helpers.js';

const h100 = builtinMigGpu('H100-80GB') as MigGpu;
const a100 = builtinMigGpu('A100-80GB') as MigGpu;

describe('MIG placement solver (H100-80GB)', () => {
  it.each([
    [{ '3g.40gb': 2 }, true],
    [{ '4g.40gb': 1, '3g.40gb': 1 }, true],
    [{ '4g.40gb': 2 }, false],
    [{ '1g.10gb': 7 }, true],
    [{ '1g.10gb': 8 }, false],
    [{ '2g.20gb': 3, '1g.10gb': 1 }, true],
    [{ '7g.80gb': 1 }, true],
    [{ '7g.80gb': 1, '1g.10gb': 1 }, false],
    [{ '1g.10gb+me': 2 }, false],
  ])('%j placeable: %s', (geometry, ok) => {
    expect(placeGeometry(h100, geometry).ok).toBe(ok);
  });

  it('places 2g.20gb only at slots 0, 2 and 4', () => {
    const placed = placeGeometry(h100, { '2g.20gb': 3 });
    expect(placed.ok && placed.instances.map((i) => i.start)).toEqual([0, 2, 4]);
    expect(placeGeometry(h100, { '2g.20gb': 4 })).toMatchObject({ ok: false });
    // 2g.20gb next to a 1g.20gb at 6: the 1g.20gb (2 slots) has start 6 free.
    expect(placeGeometry(h100, { '2g.20gb': 3, '1g.20gb': 1 }).ok).toBe(true);
  });

  it('says why a geometry does not fit', () => {
    expect(placeGeometry(h100, { '4g.40gb': 2 })).toEqual({
      ok: false,
      reason: '4g.40gb allows at most 1 instance(s), 2 asked',
    });
    expect(placeGeometry(h100, { '1g.10gb': 8 })).toEqual({
      ok: false,
      reason: '1g.10gb allows at most 7 instance(s), 8 asked',
    });
    expect(placeGeometry(h100, { '3g.40gb': 1, '4g.40gb': 1, '1g.10gb': 1 })).toEqual({
      ok: false,
      reason: '8 compute slices asked, H100-80GB has 7',
    });
    expect(placeGeometry(h100, { '5g.50gb': 1 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('has no MIG profile 5g.50gb'),
    });
  });

  it('uses the real H200 table a run recorded', () => {
    const gpu = {
      name: 'NVIDIA H200',
      memoryTotalMiB: 143771,
      migProfiles: parseMigProfiles(fixture('mig-lgip.txt')),
      migPlacements: parseMigPlacements(fixture('mig-lgipp.txt')),
    } as Gpu;
    const h200 = migGpuFromRun(gpu) as MigGpu;
    expect(h200.memorySlots).toBe(8);
    expect(placeGeometry(h200, { '3g.71gb': 2 }).ok).toBe(true);
    expect(placeGeometry(h200, { '4g.71gb': 1, '3g.71gb': 1 }).ok).toBe(true);
    expect(placeGeometry(h200, { '1g.18gb': 8 }).ok).toBe(false);
    expect(Object.keys(standardGeometries(h200))).toEqual(['all-1g', 'all-2g', 'all-3g', '4g-3g', 'all-7g']);
  });
});

describe('generated YAML', () => {
  const files = artifactBundle({
    source: 'a test',
    mps: {
      gpus: [0],
      threadPct: 25,
      pinnedMemLimit: '2048M',
      pipeDirectory: '/tmp/nvidia-mps',
      logDirectory: '/var/log/nvidia-mps',
    },
    sharing: sharingConfigs(4),
    defaultSharing: 'mps-4',
    mig: { gpu: a100, geometries: standardGeometries(a100) },
  });
  const text = (name: string) => files.find((f) => f.name === name)?.content ?? '';

  it('every YAML file parses', () => {
    for (const file of files.filter((f) => f.name.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(file.content)) expect([file.name, doc.errors]).toEqual([file.name, []]);
    }
  });

  it('the ConfigMap holds device-plugin configs that validate against the plugin fields', () => {
    const configMap = parse(text('gpushare-device-plugin-configmap.yaml')) as {
      kind: string;
      data: Record<string, string>;
    };
    expect(configMap.kind).toBe('ConfigMap');
    expect(Object.keys(configMap.data)).toEqual(['timeslicing-4', 'mps-4']);
    for (const value of Object.values(configMap.data))
      expect(DevicePluginConfigSchema.safeParse(parse(value)).success).toBe(true);
    expect(parse(configMap.data['mps-4'] as string)).toEqual({
      version: 'v1',
      sharing: {
        mps: {
          renameByDefault: true,
          failRequestsGreaterThanOne: true,
          resources: [{ name: 'nvidia.com/gpu', replicas: 4 }],
        },
      },
    });
  });

  it('rejects replica counts the plugin would: under 2, or over 48 for MPS', () => {
    expect(() => devicePluginConfig('mps', 49)).toThrow();
    expect(() => devicePluginConfig('timeSlicing', 1)).toThrow();
    expect(devicePluginConfig('timeSlicing', 100).sharing.timeSlicing?.resources[0]?.replicas).toBe(100);
  });

  it('the ClusterPolicy patch, node label and pod select and use the config', () => {
    expect(parse(text('gpushare-clusterpolicy-patch.yaml'))).toEqual({
      spec: { devicePlugin: { config: { name: 'gpushare-device-plugin-config', default: 'mps-4' } } },
    });
    expect(parse(text('gpushare-node-label.yaml'))).toEqual({
      metadata: { labels: { 'nvidia.com/device-plugin.config': 'mps-4' } },
    });
    const pod = parse(text('gpushare-shared-gpu-pod.yaml')) as {
      spec: { containers: Array<{ resources: { limits: Record<string, string> } }> };
    };
    expect(pod.spec.containers[0]?.resources.limits).toEqual({ 'nvidia.com/gpu.shared': '1' });
  });

  it('the mig-parted config validates and every geometry is placeable', () => {
    const spec = MigPartedSpecSchema.parse(parse(text('gpushare-mig-parted.yaml')));
    expect(Object.keys(spec['mig-configs'])).toEqual(['all-disabled', 'all-1g', 'all-2g', 'all-3g', '4g-3g', 'all-7g']);
    for (const [name, [entry]] of Object.entries(spec['mig-configs'])) {
      if (entry?.['mig-enabled'])
        expect([name, placeGeometry(a100, entry['mig-devices'] ?? {}).ok]).toEqual([name, true]);
    }
  });

  it('the MPS scripts are shellcheck-clean', async (context) => {
    const dir = tempDir();
    for (const name of ['gpushare-mps-start.sh', 'gpushare-mps-stop.sh']) {
      const file = path.join(dir, name);
      writeFileSync(file, text(name));
      await expectShellcheckClean(context, file);
    }
  });

  it('the MPS scripts and unit carry the limits', () => {
    expect(text('gpushare-mps-start.sh')).toContain('control "set_default_active_thread_percentage 25"');
    expect(text('gpushare-mps-start.sh')).toContain('control "set_default_device_pinned_mem_limit $i 2048M"');
    expect(text('gpushare-mps-start.sh')).toContain('nvidia-smi -i "$gpu" -c EXCLUSIVE_PROCESS');
    expect(text('gpushare-mps-stop.sh')).toContain('echo quit | nvidia-cuda-mps-control');
    expect(text('gpushare-mps-stop.sh')).toContain('nvidia-smi -i "$gpu" -c DEFAULT');
    expect(text('gpushare-mps.service')).toMatch(
      /ExecStart=\/usr\/local\/sbin\/gpushare-mps-start\.sh\nExecStop=\/usr\/local\/sbin\/gpushare-mps-stop\.sh/,
    );
  });
});

describe('the generated MPS scripts against the fake daemon', () => {
  it('start: up and answering; stop: quit and gone, compute mode untouched with --skip-compute-mode', async () => {
    const { execa } = await import('execa');
    const { findProcesses, readEnviron } = await import('../../harness/system/proc/process-table.js');
    const { FAKES, until } = await import('../helpers.js');
    const dir = tempDir();
    // Every GPU of the node, as the fake nvidia-smi lists them (one, index 0).
    const files = artifactBundle({
      source: 'a test',
      mps: {
        gpus: 'all',
        threadPct: 50,
        pinnedMemLimit: '1024M',
        pipeDirectory: path.join(dir, 'pipe'),
        logDirectory: path.join(dir, 'log'),
      },
      sharing: sharingConfigs(2),
      defaultSharing: 'mps-2',
      mig: null,
    });
    for (const name of ['gpushare-mps-start.sh', 'gpushare-mps-stop.sh'])
      writeFileSync(path.join(dir, name), files.find((f) => f.name === name)?.content ?? '', { mode: 0o755 });
    // The fake nvidia-smi refuses -c (exit 2), so a script that tried to set compute mode would fail here.
    const env = { PATH: `${FAKES}:/usr/local/bin:/usr/bin:/bin`, FAKE_MPS: 'ok' };
    // This test's daemon and server only (by their pipe directory): other tests, or another suite on
    // the machine, start fake daemons of their own at the same time.
    const pipe = `CUDA_MPS_PIPE_DIRECTORY=${path.join(dir, 'pipe')}`;
    const ours = async () => {
      const found = (await findProcesses('nvidia-cuda-mps')).filter((p) =>
        p.argv.join(' ').includes('nvidia-cuda-mps'),
      );
      const environs = await Promise.all(found.map((p) => readEnviron(p.pid)));
      return found.filter((_, i) => environs[i]?.includes(pipe));
    };
    const before = (await ours()).length;
    expect(before).toBe(0);
    const start = await execa(path.join(dir, 'gpushare-mps-start.sh'), ['--skip-compute-mode'], {
      env,
      reject: false,
      extendEnv: false,
    });
    expect([start.exitCode, start.stderr]).toEqual([0, '']);
    expect(readFileSync(path.join(dir, 'log', 'control.log'), 'utf8')).toContain(
      'Cmd:set_default_active_thread_percentage 50',
    );
    expect(readFileSync(path.join(dir, 'log', 'control.log'), 'utf8')).toContain(
      'Cmd:set_default_device_pinned_mem_limit 0 1024M',
    );
    expect((await ours()).length).toBeGreaterThan(before);
    const stop = await execa(path.join(dir, 'gpushare-mps-stop.sh'), ['--skip-compute-mode'], {
      env,
      reject: false,
      extendEnv: false,
    });
    expect([stop.exitCode, stop.stdout.trim()]).toEqual([0, 'MPS control daemon stopped']);
    await until(async () => (await ours()).length === 0, 10_000, 'the fake daemon and server to exit');
    const again = await execa(path.join(dir, 'gpushare-mps-stop.sh'), ['--skip-compute-mode'], {
      env,
      reject: false,
      extendEnv: false,
    });
    expect(again.stdout).toContain('no MPS control daemon running');
  });
});

const measured: Measured = {
  source: 'a run',
  timeslice: { workload: 'infer', clients: 2, slowdown: 5.4, aggregate: 0.37, p99Ratio: 4.1, contendedP99Ms: 0.31 },
  mps: { workload: 'infer', clients: 2, slowdown: 1.05, aggregate: 1.9, p99Ratio: 0.97, contendedP99Ms: 0.08 },
};
const a100gpu = { name: 'A100-80GB', memoryGiB: a100.memoryGiB, mig: a100 };

describe('plan', () => {
  it.each([
    [
      '36 small models on an A100-80GB → MPS (more than MIG has slices; the lowest measured slowdown)',
      { models: 36, memGiB: 1.5, smPct: 10 },
      'mps',
    ],
    [
      '40 small models on an A100-80GB → in-process streams (one context: 40 × 1.5 + 0.5 GiB; a context each overflows the headroom)',
      { models: 40, memGiB: 1.5, smPct: 10 },
      'streams',
    ],
    ['5 models that each fit a 1g slice → MIG', { models: 5, memGiB: 8, smPct: 10 }, 'mig'],
    ['60 models: over the MPS client limit → time-slicing', { models: 60, memGiB: 0.5, smPct: 1 }, 'timeslice'],
    [
      '3 × 30 GiB at 40%: 3g fits twice only, memory too small for the rest → none',
      { models: 3, memGiB: 30, smPct: 40 },
      null,
    ],
  ] as const)('%s', (_name, request, recommendation) => {
    const advice = advise({ ...request, sloP99Ms: null }, a100gpu, measured);
    expect(advice.recommendation).toBe(recommendation);
  });

  it('none fits: says how many such GPUs the models need, and in which mode', () => {
    expect(advise({ models: 3, memGiB: 30, smPct: 40, sloP99Ms: null }, a100gpu, measured).why).toBe(
      'the 3 models do not fit one A100-80GB in any mode: the fewest is 2 such GPUs, with MIG (2 models per GPU)',
    );
    expect(advise({ models: 200, memGiB: 1.5, smPct: 1, sloP99Ms: null }, a100gpu, measured).why).toBe(
      'the 200 models do not fit one A100-80GB in any mode: the fewest is 4 such GPUs, with green contexts (50 models per GPU)',
    );
  });

  it('adds the overhead per context: one for in-process streams and green contexts, one per model for time-slicing and MPS, one per slice for MIG', () => {
    // A run that measured memory by cause: nvidia-smi rose 600 MiB per process, 88 of it the workload's own.
    const mode = { workload: 'infer', clients: 2, slowdown: 2, aggregate: 1, p99Ratio: 2, contendedP99Ms: 1 };
    const byCause: Measured = {
      source: 'a run',
      timeslice: { ...mode, risePerProcessMiB: 600, reservedPerProcessMiB: 88 },
      mps: null,
    };
    const over = contextOverhead(byCause, 'mps');
    expect(over).toEqual({ gib: 0.5, measured: true, text: '0.5 GiB measured overhead' });
    const request = { models: 40, memGiB: 1.5, smPct: 10, sloP99Ms: null };
    // One context: 40 × 1.5 + 0.5 = 60.5 GiB of 80 × 0.95 = 76 usable.
    expect(memoryFit(request, a100gpu, over, false)).toMatchObject({
      fits: true,
      needGiB: 60.5,
      usableGiB: 76,
      mostModels: 50,
    });
    // A context per model: 40 × (1.5 + 0.5) = 80 GiB: over the 76 usable, though it equals the GPU's 80.
    expect(memoryFit(request, a100gpu, over, true)).toMatchObject({ fits: false, needGiB: 80, mostModels: 38 });
    expect(memoryFit(request, a100gpu, over, true).line).toBe(
      'memory: 40 × 1.5 GiB + 40 contexts × 0.5 GiB measured overhead = 80 GiB of 76 GiB usable (80 GiB less 5% headroom): 4 GiB short',
    );
    // No headroom: the same 80 GiB fits exactly.
    expect(memoryFit({ ...request, headroomPct: 0 }, a100gpu, over, true)).toMatchObject({ fits: true });
    // The rise alone (no reservation reported) is not taken for the overhead: it holds the workload's model.
    const riseOnly: Measured = { source: 'a run', timeslice: { ...mode, memoryPerClientMiB: 900 }, mps: null };
    expect(contextOverhead(riseOnly, 'timeslice')).toEqual({
      gib: 0.5,
      measured: false,
      text: '0.5 GiB assumed overhead',
    });
    const advice = advise(request, a100gpu, byCause);
    expect(advice.assessments.find((a) => a.mode === 'mig')?.reasons[0]).toBe(
      'the smallest slice for one model and its context (1.5 GiB + 0.5 GiB measured overhead) is 1g.10gb (10 GiB, 1/7 of the compute)',
    );
  });

  it('MIG gets one slice per model, checked by the solver', () => {
    const mig = advise({ models: 5, memGiB: 8, smPct: 10, sloP99Ms: null }, a100gpu, measured).assessments.find(
      (a) => a.mode === 'mig',
    );
    expect(mig?.geometry).toEqual({ '1g.10gb': 5 });
  });

  it('a latency target rules out a mode whose measured contended p99 misses it', () => {
    const mps = measured.mps as NonNullable<Measured['mps']>;
    const both: Measured = {
      ...measured,
      mps: { ...mps, contendedP99Ms: 0.3 },
      streams: { ...mps, contendedP99Ms: 0.5 },
      green: null,
    };
    const advice = advise({ models: 60, memGiB: 0.5, smPct: 1, sloP99Ms: 0.2 }, a100gpu, both);
    expect(advice.assessments.find((a) => a.mode === 'timeslice')?.missesSlo).toBe(true);
    // Green contexts fit (60 × 1% of the SMs) and were not measured: nothing says they miss it.
    expect(advice.recommendation).toBe('green');
    expect(adviceText(advice)).toContain(
      'in-process streams: fits, but misses the 0.2 ms p99 target: missed at 2 tenants (0.5 ms)',
    );
    expect(adviceText(advice)).toContain(
      'MPS: does not fit, and would miss the 0.2 ms p99 target too: missed at 2 clients (0.3 ms)',
    );
  });

  it('names the hard limit that binds first: measured memory per client, the MPS client limit, or the latency target over a sweep', () => {
    const sweep: Measured = {
      source: 'a sweep',
      timeslice: null,
      mps: {
        workload: 'infer',
        clients: 48,
        slowdown: 44,
        aggregate: 1.1,
        p99Ratio: 50,
        contendedP99Ms: 22,
        memoryPerClientMiB: 900,
        p99ByClients: [
          { clients: 8, p99Ms: 4 },
          { clients: 16, p99Ms: 8 },
          { clients: 48, p99Ms: 22 },
        ],
      },
    };
    // 76 GiB usable ÷ (1.5 GiB + 0.5 GiB assumed: the 900 MiB rise holds the workload's own model too) = 38 models.
    expect(bindingLimit({ models: 40, memGiB: 1.5, smPct: 1, sloP99Ms: null }, a100gpu, sweep, 'mps')).toBe(
      'binding limit: memory (1.5 GiB per model + 0.5 GiB assumed overhead per model, a context each, of 76 GiB usable), at 38 models (fewer than the 40 asked)',
    );
    expect(bindingLimit({ models: 40, memGiB: 0.1, smPct: 1, sloP99Ms: null }, a100gpu, sweep, 'mps')).toBe(
      'binding limit: the MPS client limit, at 48 models',
    );
    expect(bindingLimit({ models: 40, memGiB: 0.1, smPct: 1, sloP99Ms: 10 }, a100gpu, sweep, 'mps')).toMatch(
      /^binding limit: the 10 ms p99 target \(measured contended p99: 4\.0 ms at 8, 8\.0 ms at 16, 22\.0 ms at 48 clients\), at 16 models \(fewer than the 40 asked\)$/,
    );
    // Without a measurement, the assumed context overhead, and said so.
    expect(bindingLimit({ models: 40, memGiB: 1.5, smPct: 1, sloP99Ms: null }, a100gpu, null, 'timeslice')).toBe(
      'binding limit: memory (1.5 GiB per model + 0.5 GiB assumed overhead per model, a context each, of 76 GiB usable), at 38 models (fewer than the 40 asked)',
    );
    // One process: the overhead once.
    expect(bindingLimit({ models: 40, memGiB: 1.5, smPct: 1, sloP99Ms: null }, a100gpu, null, 'streams')).toBe(
      'binding limit: memory (1.5 GiB per model + 0.5 GiB assumed overhead once, one process, of 76 GiB usable), at 50 models',
    );
  });

  it('sizes MPS client limits as the device plugin splits a GPU between that many replicas', () => {
    expect(advise({ models: 40, memGiB: 1.5, smPct: 10, sloP99Ms: null }, a100gpu, null)).toMatchObject({
      mpsThreadPct: 2,
      mpsMemLimit: '2048M',
    });
    expect(advise({ models: 3, memGiB: 1.5, smPct: 10, sloP99Ms: null }, a100gpu, null)).toMatchObject({
      mpsThreadPct: 33,
      mpsMemLimit: '27306M',
    });
  });

  it("splits SMs for green contexts by the GPU's architecture: at least 4 in steps of 2 on an A100, 8 in steps of 8 on an H100", () => {
    const green = (gpu: PlanGpu) =>
      advise({ models: 40, memGiB: 1.5, smPct: 10, sloP99Ms: null }, gpu, null).assessments.find(
        (a) => a.mode === 'green',
      );
    // 10% of 108 SMs is 10.8: a group of 12 (a step of 2), 9 groups; of 132 SMs 13.2: a group of 16, 8 groups.
    expect(green({ ...a100gpu, smCount: 108 })?.reasons.join('\n')).toContain(
      '10% of 108 SMs is a group of 12: groups of at least 4 SMs come in steps of 2 at compute capability 8.x, so 9 groups',
    );
    expect(green({ ...a100gpu, name: 'NVIDIA H100 80GB HBM3', smCount: 132 })?.reasons.join('\n')).toContain(
      '10% of 132 SMs is a group of 16: groups of at least 8 SMs come in steps of 8 at compute capability 9.0 and later, so 8 groups',
    );
  });
});
