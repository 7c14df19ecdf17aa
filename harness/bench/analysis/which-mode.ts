/** "Which sharing mode measured cheaper?": what a run measured per mode, and the one function that decides. */
import { median } from 'simple-statistics';
import { decideMode, type ModeCost, type ModeDecision, type RatioInterval } from '../../stats/mode-decision.js';
import { gpuAt } from '../../system/nvidia/schema.js';
import { fixedWorkStreams, type ModeName, type Run } from '../record/schema.js';
import { armResults } from './rounds.js';
import type { Analysis } from './types.js';

/**
 * The workloads whose costs answer "which mode", in order: the user's own command (bench -- <cmd>)
 * first, since it is the model to be deployed, then the small-inference probe and the others.
 */
const ANSWERING_WORKLOADS = ['custom', 'infer', 'gemm', 'spin'];

/** What a run measured for one sharing mode, on its own command or its small-inference probe. */
export interface MeasuredMode {
  workload: string;
  clients: number;
  slowdown: number | null;
  aggregate: number | null;
  /** The 95% intervals of slowdown and aggregate (absent: a measurement made without them). */
  slowdownCi?: [number, number] | null;
  aggregateCi?: [number, number] | null;
  p99Ratio: number | null;
  /** Median p99 request latency of the contended trials, ms. */
  contendedP99Ms: number | null;
  /** GPU memory each client held (context and probe workload), MiB; null where not measured. */
  memoryPerClientMiB?: number | null;
  /** Memory by cause (protocol 3 workloads): nvidia-smi's rise per process and what its allocator held, MiB. */
  risePerProcessMiB?: number | null;
  reservedPerProcessMiB?: number | null;
  /** Host time per request alone and with every client (tenant), µs: the GIL's share in one process. */
  stepHostSoloUs?: number | null;
  stepHostContendedUs?: number | null;
  /** Measured at fewer clients than the plan asks for: its costs are a floor, not a measurement at that count. */
  extrapolated?: boolean;
  /** The contended p99 at every client count the run measured (a sweep), ms. */
  p99ByClients?: Array<{ clients: number; p99Ms: number | null }>;
}

export interface Measured {
  source: string;
  timeslice: MeasuredMode | null;
  mps: MeasuredMode | null;
  /** N tenants in one process, on streams or in green contexts (absent: a run before tenancy). */
  streams?: MeasuredMode | null;
  green?: MeasuredMode | null;
  /** One client per MIG instance (absent: not read). */
  mig?: MeasuredMode | null;
}

/**
 * What the run measured for each mode on its own command, else its small-inference probe. With a
 * client sweep and `models` given: the point at the fewest measured clients ≥ models, or the most
 * measured clients when none reaches it (then `extrapolated`: the plan says it quotes fewer clients
 * than asked).
 */
export function measuredFromAnalysis(run: Run, analysis: Analysis, models: number | null = null): Measured {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const forMode = (mode: 'timeslice' | 'mps' | 'streams' | 'green' | 'mig'): MeasuredMode | null => {
    // The streams mode answers with its tenants only: its fixed-work comparisons share no GPU.
    const of = (c: (typeof analysis.comparisons)[number]) =>
      c.comparison.mode === mode && !fixedWorkStreams(c.comparison) && c.completeRounds > 0;
    const workload = ANSWERING_WORKLOADS.find((w) =>
      analysis.comparisons.some((c) => of(c) && c.comparison.workload.name === w),
    );
    const points = analysis.comparisons
      .filter((c) => of(c) && c.comparison.workload.name === workload)
      .sort((a, b) => a.comparison.clientEnv.length - b.comparison.clientEnv.length);
    const ca =
      models === null ? points[0] : (points.find((c) => c.comparison.clientEnv.length >= models) ?? points.at(-1));
    if (!ca) return null;
    const value = (name: string) => ca.metrics.find((m) => m.metric.name === name)?.stats.value ?? null;
    const ci = (name: string) => ca.metrics.find((m) => m.metric.name === name)?.stats.ci ?? null;
    const contendedP99 = (c: typeof ca) => {
      const p99s = armResults(c.rounds, 'contended').flatMap((r) =>
        r.latency ? [r.latency.p99Ms / r.chunkIterations] : [],
      );
      return p99s.length > 0 ? median(p99s) : null;
    };
    return {
      workload: ca.comparison.workload.name,
      clients: ca.comparison.clientEnv.length,
      slowdown: value('slowdown'),
      aggregate: value('aggregate-throughput'),
      slowdownCi: ci('slowdown'),
      aggregateCi: ci('aggregate-throughput'),
      p99Ratio: value('p99-latency-ratio'),
      contendedP99Ms: contendedP99(ca),
      p99ByClients: points.map((c) => ({ clients: c.comparison.clientEnv.length, p99Ms: contendedP99(c) })),
      memoryPerClientMiB: ca.memoryPerClientMiB,
      ...(ca.memory?.reservedPerProcessMiB != null
        ? { risePerProcessMiB: ca.memory.risePerProcessMiB, reservedPerProcessMiB: ca.memory.reservedPerProcessMiB }
        : {}),
      ...(ca.stepHost.contendedUs !== null
        ? { stepHostSoloUs: ca.stepHost.soloUs, stepHostContendedUs: ca.stepHost.contendedUs }
        : {}),
      extrapolated: models !== null && ca.comparison.clientEnv.length < models,
    };
  };
  return {
    source: `run ${run.id} (${gpu?.name ?? 'GPU'}, driver ${run.fingerprint.driverVersion ?? '?'})`,
    timeslice: forMode('timeslice'),
    mps: forMode('mps'),
    streams: forMode('streams'),
    green: forMode('green'),
    mig: forMode('mig'),
  };
}

const DECIDING_MODES = ['streams', 'green', 'timeslice', 'mps', 'mig'] as const;

/** Each mode the run measured, as the decision reads it. */
export function modeCosts(measured: Measured): ModeCost[] {
  const interval = (value: number | null, ci: [number, number] | null | undefined): RatioInterval | null =>
    value === null ? null : { value, ci: ci ?? null };
  return DECIDING_MODES.flatMap((mode) => {
    const m = measured[mode];
    return m
      ? [
          {
            mode,
            workload: m.workload,
            clients: m.clients,
            slowdown: interval(m.slowdown, m.slowdownCi),
            aggregate: interval(m.aggregate, m.aggregateCi),
          },
        ]
      : [];
  });
}

/**
 * The workload and client count to decide at: the one most modes were measured at (the user's own
 * command before the probes, then the fewest clients, on a tie).
 */
function decidingPoint(costs: readonly ModeCost[]): { workload: string; clients: number } | null {
  const points = new Map<string, { workload: string; clients: number; n: number }>();
  for (const c of costs) {
    const key = `${c.workload}@${c.clients}`;
    const p = points.get(key) ?? { workload: c.workload, clients: c.clients, n: 0 };
    points.set(key, { ...p, n: p.n + 1 });
  }
  const rank = (w: string) => {
    const i = ANSWERING_WORKLOADS.indexOf(w);
    return i === -1 ? ANSWERING_WORKLOADS.length : i;
  };
  return (
    [...points.values()].sort((a, b) => b.n - a.n || rank(a.workload) - rank(b.workload) || a.clients - b.clients)[0] ??
    null
  );
}

/** One CUDA context's memory besides the workload, MiB: nvidia-smi's rise per process less what the allocator held, where a mode measured it. */
function contextMiB(measured: Measured): number | null {
  for (const mode of ['mps', 'timeslice', 'streams', 'green'] as const) {
    const m = measured[mode];
    if (
      m?.risePerProcessMiB != null &&
      m.reservedPerProcessMiB != null &&
      m.risePerProcessMiB > m.reservedPerProcessMiB
    )
      return m.risePerProcessMiB - m.reservedPerProcessMiB;
  }
  return null;
}

/** The one decision "which sharing mode measured cheaper", over every mode the run measured, or those of `only` (see decideMode). */
export function modeDecision(measured: Measured, only: readonly ModeName[] | null = null): ModeDecision {
  const costs = modeCosts(measured).filter((c) => only === null || only.includes(c.mode));
  // The point is where slowdowns were measured; without any (e.g. only a cross-GPU comparison) nothing is compared.
  const at = decidingPoint(costs.filter((c) => c.slowdown !== null));
  if (at === null) return { kind: 'none', reason: 'no sharing mode measured on a contention workload', skipped: [] };
  return decideMode(costs, at, contextMiB(measured));
}
