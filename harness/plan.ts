/**
 * Turns a resolved config and the machine's fingerprint into the comparisons to measure, and the
 * modes that cannot run here into `skipped` records with their exact reason.
 */
import { findBuiltin } from './workload/registry.js';
import { gpuAt, type Arm, type Comparison, type Config, type Fingerprint, type Gpu, type ModeName, type ModeRecord, type Variant, type WorkloadSpec } from './run/schema.js';

export interface Plan {
  comparisons: Comparison[];
  /** Modes decided before anything runs: skipped ones carry their reason; MIG always carries its table. */
  modes: ModeRecord[];
}

/** `fingerprint` null (a dry run without a GPU): every mode but MIG is planned; MIG is decided at run time. */
export function buildPlan(config: Config, fingerprint: Fingerprint | null): Plan {
  const gpu = fingerprint ? gpuAt(fingerprint, config.gpuIndex) : PLACEHOLDER_GPU;
  const comparisons: Comparison[] = [];
  const modes: ModeRecord[] = [];
  for (const mode of config.modes) {
    const skip = !gpu
      ? `GPU ${config.gpuIndex} not found`
      : fingerprint
        ? skipReason(mode, config, fingerprint, gpu)
        : mode === 'mig'
          ? 'decided at run time: runs only where MIG is enabled with a MIG device per client'
          : null;
    modes.push({
      mode,
      status: skip ? 'skipped' : 'ran',
      reason: skip,
      mig: mode === 'mig' && gpu ? migRecord(gpu) : null,
      mps: null,
    });
    if (skip || !gpu) continue;
    const cpus = pinnedCpus(config, fingerprint?.host.cpus ?? null, mode === 'streams' ? 1 : config.clients);
    if (mode === 'streams') {
      comparisons.push(...config.streamsWorkloads.map((w) => streamsComparison(w, config, cpus)));
    } else {
      const clientEnv = contentionEnv(mode, config, gpu).map((env, i) => ({ ...env, ...cpus[i] }));
      comparisons.push(...config.contentionWorkloads.map((w) => contentionComparison(mode, w, config, clientEnv)));
    }
  }
  return { comparisons, modes };
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
    case 'timeslice':
      return null;
    case 'mps':
      if (!fingerprint.mps.controlPath) return 'nvidia-cuda-mps-control is not on PATH (it ships with the NVIDIA driver)';
      if (gpu.computeMode === 'Prohibited') return `GPU ${gpu.index} is in compute mode Prohibited`;
      return null;
    case 'mig': {
      if (gpu.migModeCurrent !== 'Enabled') {
        const profiles = gpu.migProfiles.length > 0 ? ` (it supports ${gpu.migProfiles.length} MIG profiles, recorded here)` : '';
        return (
          `MIG is ${gpu.migModeCurrent ?? 'not supported'} on GPU ${gpu.index}${profiles}; enabling it needs an ` +
          'administrator (nvidia-smi -i N -mig 1) and a GPU reset, which gpushare never does'
        );
      }
      if (gpu.migDevices.length < config.clients) {
        return `MIG is enabled on GPU ${gpu.index} but it has ${gpu.migDevices.length} MIG devices; ${config.clients} clients need one each`;
      }
      return null;
    }
  }
}

function migRecord(gpu: Gpu): NonNullable<ModeRecord['mig']> {
  return { migModeCurrent: gpu.migModeCurrent, devices: gpu.migDevices, profiles: gpu.migProfiles, placements: gpu.migPlacements };
}

/**
 * --cpu-pin auto: client i gets core (cpus − 1 − i) as GPUSHARE_CPUS (the workload pins itself), so
 * clients never share a core and core 0, where the OS and most interrupts run, stays free for the
 * harness and the sampler. Off, on an unknown host, or with fewer than clients + 2 cores: no pinning.
 */
export function pinnedCpus(config: Pick<Config, 'cpuPin'>, cpus: number | null, clients: number): Array<Record<string, string>> {
  const pin = config.cpuPin === 'auto' && cpus !== null && cpus >= clients + 2;
  return Array.from({ length: clients }, (_, i): Record<string, string> => (pin ? { GPUSHARE_CPUS: String((cpus as number) - 1 - i) } : {}));
}

/** Static per-client environment: MPS client limits, or the MIG slice each client is pinned to. */
function contentionEnv(mode: ModeName, config: Config, gpu: Gpu): Record<string, string>[] {
  return Array.from({ length: config.clients }, (_, i) => {
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

function contentionComparison(mode: ModeName, workload: WorkloadSpec, config: Config, clientEnv: Record<string, string>[]): Comparison {
  const work = { kind: 'fixed-duration' as const, durationMs: config.windowMs };
  const variant: Variant = { streams: 1 };
  const solo: Arm[] = clientEnv.map((_, client) => ({ id: `solo-c${client}`, clients: [{ client, variant }], work }));
  const contended: Arm = { id: 'contended', clients: clientEnv.map((_, client) => ({ client, variant })), work };
  return { id: `${mode}/${workload.name}`, mode, workload, clientEnv, arms: [...solo, contended] };
}

/** A trial to run: one arm of a comparison in one round. */
export interface PlannedTrial {
  id: string;
  comparison: Comparison;
  arm: Arm;
  round: number;
}

/** One round's trials in ABBA order: arms forward in even rounds, reversed in odd ones. */
export function roundTrials(comparison: Comparison, round: number): PlannedTrial[] {
  const arms = round % 2 === 0 ? comparison.arms : [...comparison.arms].reverse();
  return arms.map((arm) => ({ id: `${comparison.id}#r${round}/${arm.id}`, comparison, arm, round }));
}

/** The trials of the first `rounds` rounds. */
export function orderTrials(comparison: Comparison, rounds: number): PlannedTrial[] {
  return Array.from({ length: rounds }, (_, round) => roundTrials(comparison, round)).flat();
}
