/**
 * Turns a resolved config and the machine's fingerprint into the comparisons to measure, and the
 * modes that cannot run here into `skipped` records with their exact reason.
 */

import { UserError } from '../core/errors.js';
import { abbaOrder } from '../experiment/rounds.js';
import { cpuListText, type UsableCpus, usableCpus } from '../system/cpus.js';
import { type Fingerprint, type Gpu, gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { GREEN_ENV, LOOP_CHECK_MS } from '../workload/protocol.js';
import { findBuiltin } from '../workload/registry.js';
import type { Variant, WorkloadSpec } from '../workload/spec.js';
import {
  ALONE_ARM,
  type Arm,
  type Comparison,
  type Config,
  clientCounts,
  type ModeName,
  type ModeRecord,
  SLICE_SOLO_ARM,
} from './record/schema.js';

export interface Plan {
  comparisons: Comparison[];
  /** Modes decided before anything runs: skipped ones carry their reason; MIG always carries its table. */
  modes: ModeRecord[];
}

/** `fingerprint` null (a dry run without a GPU): every mode but MIG is planned; MIG is decided at run time. */
export function buildPlan(config: Config, fingerprint: Fingerprint | null): Plan {
  const gpu = fingerprint ? gpuAt(fingerprint, config.gpuIndex) : PLACEHOLDER_GPU;
  const usable = fingerprint ? usableCpus(fingerprint.host) : null;
  const comparisons: Comparison[] = [];
  const modes: ModeRecord[] = [];
  for (const mode of config.modes) {
    const skip = planSkip(mode, config, fingerprint, gpu);
    modes.push({
      mode,
      status: skip ? 'skipped' : 'ran',
      reason: skip,
      mig: mode === 'mig' && gpu ? migRecord(gpu) : null,
      mps: null,
    });
    if (skip || !gpu) continue;
    comparisons.push(...modeComparisons(mode, config, gpu, usable));
  }
  return { comparisons, modes };
}

/** Why `mode` is skipped before anything runs; null: it is planned. */
function planSkip(
  mode: ModeName,
  config: Config,
  fingerprint: Fingerprint | null,
  gpu: Gpu | undefined,
): string | null {
  if (!gpu) return `GPU ${config.gpuIndex} not found`;
  if (fingerprint) return skipReason(mode, config, fingerprint, gpu);
  return mode === 'mig' ? 'decided at run time: runs only where MIG is enabled with a MIG device per client' : null;
}

/** A planned mode's comparisons, in run order. */
function modeComparisons(mode: ModeName, config: Config, gpu: Gpu, usable: UsableCpus | null): Comparison[] {
  const comparisons: Comparison[] = [];
  if (mode === 'streams') {
    const cpus = pinnedCpus(config, usable, 1);
    comparisons.push(...config.streamsWorkloads.map((w) => streamsComparison(w, config, cpus)));
    if (!config.tenancy) return comparisons;
  }
  if (mode === 'streams' || mode === 'green') {
    // Tenants of one process: one core for the process, pinned as client 0 would be.
    for (const count of clientCounts(config)) {
      const cpus = pinnedCpus(config, usable, 1)[0] ?? {};
      comparisons.push(
        ...config.contentionWorkloads.map((w) => tenancyComparison(mode, w, config, count, cpus, plainFits(gpu))),
      );
    }
    return comparisons;
  }
  const sweep = config.clientCounts !== undefined;
  for (const count of clientCounts(config)) {
    const cpus = pinnedCpus(config, usable, count);
    const clientEnv = contentionEnv(mode, config, gpu, count).map((env, i) => ({ ...env, ...cpus[i] }));
    comparisons.push(
      ...config.contentionWorkloads.map((w) => contentionComparison(mode, w, config, clientEnv, sweep, plainFits(gpu))),
    );
  }
  return comparisons;
}

/** Stands in for the GPU in a dry run, where nvidia-smi may be missing. */
const PLACEHOLDER_GPU: Gpu = {
  index: 0,
  uuid: 'GPU-?',
  name: null,
  busId: null,
  driverVersion: null,
  memoryTotalMiB: null,
  memoryUsedMiB: null,
  utilGpuPct: null,
  computeMode: null,
  persistenceMode: null,
  migModeCurrent: null,
  migModePending: null,
  migDevices: [],
  migProfiles: [],
  migPlacements: [],
};

function skipReason(mode: ModeName, config: Config, fingerprint: Fingerprint, gpu: Gpu): string | null {
  switch (mode) {
    case 'streams':
    case 'green':
    case 'timeslice':
      return null;
    case 'mps':
      if (!fingerprint.mps.controlPath)
        return 'nvidia-cuda-mps-control is not on PATH (it ships with the NVIDIA driver)';
      if (gpu.computeMode === 'Prohibited') return `GPU ${gpu.index} is in compute mode Prohibited`;
      return null;
    case 'mig': {
      if (gpu.migModeCurrent !== 'Enabled') {
        const profiles =
          gpu.migProfiles.length > 0 ? ` (it supports ${gpu.migProfiles.length} MIG profiles, recorded here)` : '';
        return (
          `MIG is ${gpu.migModeCurrent ?? 'not supported'} on GPU ${gpu.index}${profiles}; enabling it needs an ` +
          'administrator (nvidia-smi -i N -mig 1) and a GPU reset, which gpushare never does'
        );
      }
      const most = Math.max(...clientCounts(config));
      if (gpu.migDevices.length < most) {
        return `MIG is enabled on GPU ${gpu.index} but it has ${gpu.migDevices.length} MIG devices; ${most} clients need one each`;
      }
      return null;
    }
  }
}

function migRecord(gpu: Gpu): NonNullable<ModeRecord['mig']> {
  return {
    migModeCurrent: gpu.migModeCurrent,
    devices: gpu.migDevices,
    profiles: gpu.migProfiles,
    placements: gpu.migPlacements,
  };
}

/**
 * --cpu-pin auto: client i gets the i-th highest usable CPU as GPUSHARE_CPUS (the workload pins
 * itself), so clients never share a core and the lowest (core 0 on a whole host), where the OS and
 * most interrupts run, stays free for the harness and the sampler. Off, on an unknown host, or with
 * fewer than clients + 2 usable CPUs: no pinning.
 */
export function pinnedCpus(
  config: Pick<Config, 'cpuPin'>,
  cpus: UsableCpus | null,
  clients: number,
): Array<Record<string, string>> {
  const pin = config.cpuPin === 'auto' && cpus !== null && cpus.count >= clients + 2;
  return Array.from({ length: clients }, (_, i): Record<string, string> => {
    const id = cpus?.ids[cpus.ids.length - 1 - i];
    return pin && id !== undefined ? { GPUSHARE_CPUS: String(id) } : {};
  });
}

/** The CPUs a comparison's clients are pinned to (--cpu-pin auto's GPUSHARE_CPUS), in client order. */
export function pinnedIds(c: Pick<Comparison, 'clientEnv'>): number[] {
  return c.clientEnv.flatMap((env) => (env.GPUSHARE_CPUS ?? '').split(',').filter(Boolean).map(Number));
}

/**
 * Refuses to resume a run (in `dir`) whose clients are pinned to CPUs this process may not use now
 * (`now`: this machine's fingerprint; a pod restarted on another cpuset): they could not pin themselves.
 */
export function refuseLostPins(
  dir: string,
  now: Fingerprint,
  plan: ReadonlyArray<Pick<Comparison, 'clientEnv'>>,
): void {
  const usable = usableCpus(now.host).ids;
  const lost = [...new Set(plan.flatMap(pinnedIds))].filter((id) => !usable.includes(id)).sort((a, b) => a - b);
  if (lost.length > 0)
    throw new UserError(
      `cannot resume ${dir} here: its clients are pinned (--cpu-pin auto) to CPUs ${cpuListText(lost)}, which this process may not use (it may use ${cpuListText(usable)}); resume it where those CPUs are allowed, or start a new run`,
    );
}

/** Static per-client environment: MPS client limits, or the MIG slice each client is pinned to. */
function contentionEnv(mode: ModeName, config: Config, gpu: Gpu, count: number): Record<string, string>[] {
  return Array.from({ length: count }, (_, i) => {
    if (mode === 'mig') return { CUDA_VISIBLE_DEVICES: gpu.migDevices[i]?.uuid ?? '' };
    if (mode !== 'mps') return {};
    const env: Record<string, string> = {};
    if (config.mps.threadPct !== null) env.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = String(config.mps.threadPct);
    // Devices are renumbered from 0 inside CUDA_VISIBLE_DEVICES, which names the one GPU under test.
    if (config.mps.memLimit !== null) env.CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = `0=${config.mps.memLimit}`;
    return env;
  });
}

function streamsComparison(workload: WorkloadSpec, config: Config, cpus: Array<Record<string, string>>): Comparison {
  const ks = [1, ...config.streamCounts];
  const hostMemory = workload.builtin ? findBuiltin(workload.name)?.hostMemory?.(workload.params) : undefined;
  const memory: Array<boolean | undefined> = hostMemory ? [...hostMemory] : [undefined];
  const arms: Arm[] = memory.flatMap((pinned) =>
    ks.map((streams) => {
      const variant: Variant = pinned === undefined ? { streams } : { streams, pinned };
      return {
        id: `${pinned === undefined ? '' : pinned ? 'pinned-' : 'pageable-'}s${streams}`,
        clients: [{ client: 0, variant }],
        work: { kind: 'fixed-work' as const, iterations: null },
      };
    }),
  );
  return { id: `streams/${workload.name}`, mode: 'streams', workload, clientEnv: [cpus[0] ?? {}], arms };
}

/**
 * The plain alone (ALONE_ARM): client 0's work run by the workload's plain process, alone on the whole
 * GPU, interleaved with the comparison's other arms. Not under MIG, where no process can use the whole GPU.
 */
function aloneArm(work: Arm['work']): Arm {
  return { id: ALONE_ARM, plain: true, clients: [{ client: 0, variant: { streams: 1 } }], work };
}

/**
 * Whether a plain process may run beside a mode's clients on `gpu`: not where its compute mode allows one
 * context (Exclusive_Process, which MPS deployments often set): beside the MPS server, or a time-sliced
 * client, it could not start. There every mode divides by its own alone, as runs before 2026-12-06 did.
 */
export function plainFits(gpu: Pick<Gpu, 'computeMode'>): boolean {
  return !/^Exclusive/i.test(gpu.computeMode ?? '');
}

/**
 * Each client alone, then all at once, and the plain alone every mode divides by. Beyond 2 clients
 * outside MIG the clients are identical processes (same argv, same GPU, no slice of their own), so one
 * solo arm (client 0) stands for every client's solo throughput: each client's expected solo rate is the
 * same, and one solo trial per round keeps a 48-client point at 3 trials a round instead of 50. MIG slices
 * can differ: a solo per client. A mode's own solo arms stay beside the plain alone: what the mode costs
 * a client with nobody beside it (solo-overhead).
 */
function contentionComparison(
  mode: ModeName,
  workload: WorkloadSpec,
  config: Config,
  clientEnv: Record<string, string>[],
  sweep: boolean,
  plain = true,
): Comparison {
  const work = {
    kind: 'fixed-duration' as const,
    durationMs: Math.max(config.windowMs, WINDOW_MS_PER_CLIENT * clientEnv.length),
  };
  const variant: Variant = { streams: 1 };
  const soloClients = clientEnv.length > 2 && mode !== 'mig' ? [0] : clientEnv.map((_, client) => client);
  const solo: Arm[] = soloClients.map((client) => ({ id: `solo-c${client}`, clients: [{ client, variant }], work }));
  const contended: Arm = { id: 'contended', clients: clientEnv.map((_, client) => ({ client, variant })), work };
  return {
    id: `${mode}/${workload.name}${sweep ? `@${clientEnv.length}` : ''}`,
    mode,
    workload,
    clientEnv,
    arms: [...(mode === 'mig' || !plain ? [] : [aloneArm(work)]), ...solo, contended],
  };
}

/**
 * N tenants in one process (`<mode>/<workload>@<N>`, always with @N so it never meets the lab's
 * `streams/<workload>`): the arms of the multi-process modes, tenant k standing for client k, so the
 * same analysis reads it. The plain alone (ALONE_ARM, a separate plain process) is the baseline every
 * mode shares; solo-c0 is tenant 0 alone on the whole GPU, the other tenants loaded and idle: what one
 * process of N tenants costs a lone tenant. In the green mode solo-c0 is tenant 0's twin outside any green
 * context (variant `whole`), and `slice-solo-c0`, tenant 0 alone in its own SM slice, is the baseline for
 * what sharing costs within a slice.
 */
function tenancyComparison(
  mode: 'streams' | 'green',
  workload: WorkloadSpec,
  config: Config,
  count: number,
  cpus: Record<string, string>,
  plain: boolean,
): Comparison {
  const env: Record<string, string> = { ...cpus };
  if (mode === 'green') env[GREEN_ENV] = config.greenSmPct == null ? 'even' : String(config.greenSmPct);
  const clientEnv = Array.from({ length: count }, () => env);
  const c = contentionComparison(mode, workload, config, clientEnv, false, plain);
  const alone = c.arms.filter((a) => a.id === ALONE_ARM);
  const solo = c.arms.filter((a) => a.id === 'solo-c0');
  const contended = c.arms.filter((a) => a.id === 'contended');
  const arms =
    mode === 'green'
      ? [
          ...alone,
          ...solo.map((a) => ({
            ...a,
            clients: a.clients.map((x) => ({ ...x, variant: { ...x.variant, whole: true as const } })),
          })),
          ...solo.map((a) => ({ ...a, id: SLICE_SOLO_ARM })),
          ...contended,
        ]
      : [...alone, ...solo, ...contended];
  return { ...c, id: `${mode}/${workload.name}@${count}`, arms, tenants: count };
}

/**
 * The run command's loopCheckMs for a planned trial: in round 0, in the first arm of its comparison
 * where a client runs alone on one stream (for green, on the whole GPU), each process checks its own
 * loop after that window, with the GPU otherwise idle; null for every other trial.
 */
export function loopCheckMs(planned: Pick<PlannedTrial, 'comparison' | 'arm' | 'round'>): number | null {
  // The plain process serves every comparison of its workload: it is a plain client alone, of the kind a
  // time-sliced comparison checks, and checking it in each comparison would only repeat that.
  if (planned.round !== 0 || planned.arm.clients.length !== 1 || planned.arm.plain) return null;
  const client = planned.arm.clients[0]?.client;
  const first = planned.comparison.arms.find((a) => {
    const [only] = a.clients;
    return (
      a.plain !== true &&
      a.clients.length === 1 &&
      only !== undefined &&
      only.client === client &&
      only.variant.streams === 1 &&
      (planned.comparison.mode !== 'green' || only.variant.whole === true)
    );
  });
  return first?.id === planned.arm.id ? LOOP_CHECK_MS : null;
}

/** Time-sliced clients that load each neighbouring GPU in a cross-GPU check: enough to keep it busy. */
export const CROSS_GPU_LOADERS = 2;

/**
 * The cross-GPU check of `bench --gpus`: for each GPU in turn, one client alone, and again while
 * CROSS_GPU_LOADERS time-sliced clients of the same workload load every other GPU. Two workloads where
 * planned, for the two ways GPUs of a host meet: infer (launch-bound, it feels the host CPU first;
 * else the first contention workload) and pipeline (copy-bound, it feels PCIe and host memory).
 * Paired ABBA rounds as any comparison; the ratio is the victim's throughput idle ÷ loaded. Clients
 * carry GPUSHARE_CROSS_ROLE (victim or loader) so a reader of the record, and the fake workload, can
 * tell them apart.
 */
export function crossGpuPlan(config: Config, fingerprint: Fingerprint, gpuIndices: readonly number[]): Comparison[] {
  const launchBound = config.contentionWorkloads.find((w) => w.name === 'infer') ?? config.contentionWorkloads[0];
  const copyBound = [...config.streamsWorkloads, ...config.contentionWorkloads].find((w) => w.name === 'pipeline');
  const workloads = [launchBound, copyBound].filter(
    (w, i, all): w is WorkloadSpec => w !== undefined && all.indexOf(w) === i,
  );
  if (gpuIndices.length < 2) return [];
  return workloads.flatMap((workload) => crossGpuComparisons(workload, config, fingerprint, gpuIndices));
}

function crossGpuComparisons(
  workload: WorkloadSpec,
  config: Config,
  fingerprint: Fingerprint,
  gpuIndices: readonly number[],
): Comparison[] {
  const uuid = (index: number) => visibleDevice(fingerprint, index);
  return gpuIndices.map((victim) => {
    const loaded = gpuIndices.filter((g) => g !== victim);
    const clientEnv = [
      { CUDA_VISIBLE_DEVICES: uuid(victim), GPUSHARE_CROSS_ROLE: 'victim' },
      ...loaded.flatMap((g) =>
        Array.from({ length: CROSS_GPU_LOADERS }, () => ({
          CUDA_VISIBLE_DEVICES: uuid(g),
          GPUSHARE_CROSS_ROLE: 'loader',
        })),
      ),
    ];
    const comparison = contentionComparison('timeslice', workload, config, clientEnv, false);
    return {
      ...comparison,
      // Its ratio is the victim alone with the other GPUs idle ÷ loaded: no plain alone of its own.
      arms: comparison.arms.filter((a) => !a.plain),
      id: `cross/${workload.name}@gpu${victim}`,
      crossGpu: { victimGpu: victim, loadedGpus: loaded, loadersPerGpu: CROSS_GPU_LOADERS },
    };
  });
}

/**
 * The shortest window per client released together. Time-sliced, a client's last request of a
 * window can end a whole rotation late (one ~2-3 ms slice per co-tenant, measured by gpushare probe
 * on an H100), so its window outlasts the others' by up to N slices; 25 ms per client keeps that
 * under a tenth of the window, as the overlap check needs. 2-8 clients keep the default 250 ms.
 */
export const WINDOW_MS_PER_CLIENT = 25;

/** A trial to run: one arm of a comparison in one round. */
export interface PlannedTrial {
  id: string;
  comparison: Comparison;
  arm: Arm;
  round: number;
}

/** One round's trials in ABBA order (experiment/rounds.ts). */
export function roundTrials(comparison: Comparison, round: number): PlannedTrial[] {
  return abbaOrder(comparison.arms, round).map((arm) => ({
    id: `${comparison.id}#r${round}/${arm.id}`,
    comparison,
    arm,
    round,
  }));
}

/** The trials of the first `rounds` rounds. */
export function orderTrials(comparison: Comparison, rounds: number): PlannedTrial[] {
  return Array.from({ length: rounds }, (_, round) => roundTrials(comparison, round)).flat();
}
