/**
 * The plan's verdicts: the arithmetic a recommendation rests on (memory fit, each option's binding
 * limit, green contexts' SM groups, the latency target as a limit, MIG's smallest slice), the ranking
 * of the options that fit, and whether a GPU is the model planned for. Pure functions over the
 * request, the GPU and what a run measured; mutation testing guards this file (every verdicts.ts).
 */

import { type Measured, type MeasuredMode, modeDecision } from '../bench/analysis/which-mode.js';
import type { ModeDecision } from '../stats/mode-decision.js';
import { MAX_MPS_REPLICAS } from './k8s.js';
import type { MigGpu, MigProfileSpec } from './mig-profiles.js';
import { placeGeometry } from './mig-solver.js';
import {
  CONTEXT_OVERHEAD_GIB,
  DEFAULT_HEADROOM_PCT,
  gib,
  ISOLATION_ORDER,
  type ModeAssessment,
  type PlanGpu,
  type PlanRequest,
  type ShareMode,
} from './plan-types.js';
import { type SloReach, sloReach } from './slo-reach.js';

/** The smallest SM group a green context gets and the step of its size, SMs, with the architecture that sets them. */
export interface GreenGranule {
  minSms: number;
  stepSms: number;
  architecture: string;
}

/**
 * The granule of a GPU by its name, from the CUDA driver API's guideline for cuDevSmResourceSplitByCount
 * (compute capability 8.x: at least 4 SMs in steps of 2; 9.0 and later: at least 8 in steps of 8, as the
 * H100 runs measured): the Ampere and Ada data-centre GPUs by name; any other is taken to be as recent as Hopper.
 */
export function greenGranule(gpuName: string): GreenGranule {
  return /\b(A100|A40|A30|A10G?|L40S?|L4)\b/.test(gpuName)
    ? { minSms: 4, stepSms: 2, architecture: 'compute capability 8.x' }
    : { minSms: 8, stepSms: 8, architecture: 'compute capability 9.0 and later' };
}

/** A context's overhead besides the model, GiB, and where the figure comes from. */
export interface Overhead {
  gib: number;
  measured: boolean;
  /** How the plan names it: "0.51 GiB measured overhead", "0.5 GiB assumed overhead". */
  text: string;
}

/**
 * What one CUDA context costs besides the model: the run's measured overhead (nvidia-smi's rise per
 * process less the workload's own reservation) in this mode, else in another mode of the run, else
 * the assumed CONTEXT_OVERHEAD_GIB. Never the rise alone, which holds the probe workload's own model.
 */
export function contextOverhead(measured: Measured | null, mode: ShareMode): Overhead {
  const of = (m: MeasuredMode | null | undefined) =>
    m?.risePerProcessMiB != null && m.reservedPerProcessMiB != null && m.risePerProcessMiB > m.reservedPerProcessMiB
      ? m.risePerProcessMiB - m.reservedPerProcessMiB
      : null;
  const own = mode === 'mig' ? null : of(measured?.[mode]);
  const other = (['mps', 'timeslice', 'streams', 'green'] as const)
    .map((m) => of(measured?.[m]))
    .find((x) => x !== null);
  const mib = own ?? other ?? null;
  if (mib !== null) {
    const gibs = mib / 1024;
    return { gib: gibs, measured: true, text: `${gib(gibs)} measured overhead` };
  }
  return { gib: CONTEXT_OVERHEAD_GIB, measured: false, text: `${gib(CONTEXT_OVERHEAD_GIB)} assumed overhead` };
}

/** The memory arithmetic of one option: `contexts` CUDA contexts for `models` models, with the headroom kept free. */
export interface MemoryFit {
  fits: boolean;
  needGiB: number;
  usableGiB: number;
  /** The most models that fit with as many contexts as this option makes. */
  mostModels: number;
  line: string;
}

/**
 * models × the model's memory + contexts × the overhead of one context, against the GPU's memory less
 * the headroom. In-process streams and green contexts make one context whatever the models; time-
 * slicing and MPS one per model (MIG: one per slice, in migAssessment).
 */
export function memoryFit(request: PlanRequest, gpu: PlanGpu, over: Overhead, perModelContext: boolean): MemoryFit {
  const headroom = request.headroomPct ?? DEFAULT_HEADROOM_PCT;
  const usableGiB = gpu.memoryGiB * (1 - headroom / 100);
  const contexts = perModelContext ? request.models : 1;
  const needGiB = request.models * request.memGiB + contexts * over.gib;
  const fits = needGiB <= usableGiB + 1e-9;
  const mostModels = Math.max(
    0,
    Math.floor(perModelContext ? usableGiB / (request.memGiB + over.gib) : (usableGiB - over.gib) / request.memGiB),
  );
  const contextText = perModelContext
    ? `${contexts} contexts × ${over.text}`
    : `1 context × ${over.text} (one process)`;
  const left = fits ? `${gib(usableGiB - needGiB)} left` : `${gib(needGiB - usableGiB)} short`;
  const line = `memory: ${request.models} × ${gib(request.memGiB)} + ${contextText} = ${gib(needGiB)} of ${gib(usableGiB)} usable (${gib(gpu.memoryGiB)} less ${headroom}% headroom): ${left}`;
  return { fits, needGiB, usableGiB, mostModels, line };
}

/** The smallest of the named limits, as the plan says it; `busy` names the soft throughput limit when it comes first. */
function limitText(limits: Array<[string, number]>, request: PlanRequest): { text: string; most: number } {
  const [name, most] = limits.reduce((a, b) => (b[1] < a[1] ? b : a));
  const busy = Math.floor(100 / request.smPct);
  const throughput =
    busy < most
      ? `; before it, throughput: with every model busy at once only ${busy} get their ${request.smPct}% of the SMs`
      : '';
  return {
    text: `binding limit: ${name}, at ${most} models${most < request.models ? ` (fewer than the ${request.models} asked)` : ''}${throughput}`,
    most,
  };
}

/**
 * Which hard limit binds first for a mode: each limit's most models, the smallest named. Memory (the
 * model and the overhead of each context, with the headroom kept), the MPS client limit, green
 * contexts' SM groups, and the latency target against the measured contended p99 (at the counts
 * measured). Throughput (SMs with every model busy) is a soft limit, named beside it when it comes first.
 */
export function bindingLimit(
  request: PlanRequest,
  gpu: PlanGpu,
  measured: Measured | null,
  mode: Exclude<ShareMode, 'mig'>,
): string {
  return limitsOf(request, gpu, measured, mode).text;
}

/** One option's limits: the binding one (its text and most models), and the memory, SM-group and latency arithmetic behind it. */
export interface ModeLimits {
  text: string;
  most: number;
  memory: MemoryFit;
  green: GreenSplit | null;
  slo: SloReach | null;
}

export function limitsOf(
  request: PlanRequest,
  gpu: PlanGpu,
  measured: Measured | null,
  mode: Exclude<ShareMode, 'mig'>,
): ModeLimits {
  const over = contextOverhead(measured, mode);
  const perModel = mode === 'mps' || mode === 'timeslice';
  const memory = memoryFit(request, gpu, over, perModel);
  const limits: Array<[string, number]> = [
    [
      `memory (${gib(request.memGiB)} per model + ${over.text} ${perModel ? 'per model, a context each' : 'once, one process'}, of ${gib(memory.usableGiB)} usable)`,
      memory.mostModels,
    ],
  ];
  if (mode === 'mps') limits.push([`the MPS client limit`, MAX_MPS_REPLICAS]);
  const green = mode === 'green' ? greenSplit(request, gpu) : null;
  if (green) limits.push([green.text, green.most]);
  // The target limits only where a count measured missed it; held, it says how far it was measured.
  const slo = sloReach(request.sloP99Ms, measured?.[mode], request.models, perModel ? 'clients' : 'tenants');
  if (slo?.kind === 'missed')
    limits.push([`the ${request.sloP99Ms} ms p99 target (measured contended p99: ${slo.measured})`, slo.most]);
  return { ...limitText(limits, request), memory, green, slo };
}

/** Green contexts give each model SMs of its own: how many groups of the share asked the GPU's SMs make. */
export interface GreenSplit {
  most: number;
  text: string;
}

function greenSplit(request: PlanRequest, gpu: PlanGpu): GreenSplit {
  const sms = gpu.smCount ?? null;
  if (sms === null) {
    const most = Math.floor(100 / request.smPct);
    return { most, text: `SMs of its own for each model (${request.smPct}% each; this GPU's SM count is not known)` };
  }
  const granule = greenGranule(gpu.name);
  const group = Math.max(granule.minSms, Math.ceil((sms * request.smPct) / 100 / granule.stepSms) * granule.stepSms);
  const most = Math.floor(sms / group);
  return {
    most,
    text: `SMs of its own for each model (${request.smPct}% of ${sms} SMs is a group of ${group}: groups of at least ${granule.minSms} SMs come in steps of ${granule.stepSms} at ${granule.architecture}, so ${most} groups)`,
  };
}

/** An option's reasons from its limits: the binding limit, and the latency target where it limits nothing. */
export function limitReasons(limits: ModeLimits, sloMs: number | null): string[] {
  const held = limits.slo && limits.slo.kind !== 'missed' ? limits.slo : null;
  return [
    limits.text,
    ...(held ? [`the ${sloMs} ms p99 target: ${held.text} (measured contended p99: ${held.measured})`] : []),
  ];
}

/** Whether an option misses the latency target at the models asked: a count measured missed it, and fewer held it. */
export const missesSlo = (limits: ModeLimits, models: number) =>
  limits.slo?.kind === 'missed' && limits.slo.most < models;

/** What the MPS client limit and green contexts' SM groups let fit: each beside the memory fit. */
export const mpsFits = (limits: ModeLimits, models: number) => limits.memory.fits && models <= MAX_MPS_REPLICAS;
export const greenFits = (limits: ModeLimits, models: number) =>
  limits.memory.fits && (limits.green?.most ?? 0) >= models;

/** MIG for one model a slice: the smallest profile that holds the model and one context, and how many of it place. */
export interface MigFit {
  /** The model and one context's overhead, GiB. */
  needGiB: number;
  /** The smallest whole profile with the memory and the share of compute asked; null where none has. */
  profile: MigProfileSpec | null;
  /** The most instances of `profile` the placement solver finds room for. */
  most: number;
}

export function migFit(request: PlanRequest, mig: MigGpu, over: Overhead): MigFit {
  const need = request.memGiB + over.gib;
  const slices = mig.computeSlices;
  const profile = [...mig.profiles]
    .filter((p) => !p.name.includes('+') && p.memoryGiB >= need && (p.computeSlices / slices) * 100 >= request.smPct)
    .sort((a, b) => a.computeSlices - b.computeSlices || a.memoryGiB - b.memoryGiB)[0];
  if (!profile) return { needGiB: need, profile: null, most: 0 };
  let most = 0;
  for (let n = 1; n <= profile.maxInstances; n++) if (placeGeometry(mig, { [profile.name]: n }).ok) most = n;
  return { needGiB: need, profile, most };
}

/** A mode's measured slowdown, or null: MIG, or not measured. */
export const slowdownOf = (measured: Measured | null, a: ModeAssessment): number | null =>
  a.mode === 'mig' ? null : (measured?.[a.mode]?.slowdown ?? null);

/** The options that fit and meet the target, best first, and bench's mode decision that ordered them. */
export interface Ranking {
  ok: ModeAssessment[];
  decision: ModeDecision | null;
}

/**
 * The one decision: MIG when it fits and meets the target (hardware isolation); else, of the options
 * that fit and meet the target, bench's mode decision over those measured (cheaper only where the
 * slowdown intervals separate; measured the same, isolation decides), unmeasured ones after in the
 * order of isolation. The runner-up is the next of the same order.
 */
export function rankOptions(assessments: ModeAssessment[], measured: Measured | null): Ranking {
  const slowdown = (a: ModeAssessment) => slowdownOf(measured, a);
  const fitting = assessments.filter((a) => a.fits && !a.missesSlo);
  const measuredModes = fitting.filter((a) => slowdown(a) !== null).map((a) => a.mode);
  const decision = measured && measuredModes.length > 1 ? modeDecision(measured, measuredModes) : null;
  // Decided first (the winner, or the tied by isolation), then the costlier by median, then the unmeasured.
  const decided: ShareMode[] =
    decision?.kind === 'cheaper'
      ? [decision.mode, ...decision.costlier]
      : decision?.kind === 'same'
        ? [...decision.tied, ...decision.costlier]
        : // Stryker disable next-line ArrayDeclaration: a list of no mode, or of a word no mode is, decides none
          [];
  const rank = (a: ModeAssessment) =>
    a.mode === 'mig'
      ? -2
      : decided.includes(a.mode)
        ? decided.indexOf(a.mode)
        : decision !== null
          ? Number.POSITIVE_INFINITY
          : (slowdown(a) ?? Number.POSITIVE_INFINITY);
  const ok = [...fitting].sort(
    (a, b) => rank(a) - rank(b) || ISOLATION_ORDER.indexOf(a.mode) - ISOLATION_ORDER.indexOf(b.mode),
  );
  return { ok, decision };
}

/** None fits one GPU: the fewest GPUs the models spread over, and with which option; null where none fits even one. */
export function fewestGpus(
  assessments: ModeAssessment[],
  models: number,
): { a: ModeAssessment; gpus: number } | undefined {
  return assessments
    .filter((a) => a.mostModels > 0)
    .map((a) => ({ a, gpus: Math.ceil(models / a.mostModels) }))
    .sort((x, y) => x.gpus - y.gpus || ISOLATION_ORDER.indexOf(x.a.mode) - ISOLATION_ORDER.indexOf(y.a.mode))[0];
}

/** A GPU by its name and, where known, its memory. */
export interface GpuIdentity {
  name: string;
  /** GiB; null where not known (then not compared). */
  memoryGiB: number | null;
}

/**
 * The model word of a GPU's name: the family token ("H100", "A100", "L40S") of the name up to its
 * first "-" ("A100" of "A100-80GB", "H100" of "NVIDIA H100 80GB HBM3", "A100" of "NVIDIA A100-SXM4-40GB"),
 * else that part whole ("RTX4090", "T4").
 */
function familyOf(name: string): string {
  const head = name.split('-')[0] ?? name;
  return /\b([A-Z]\d{2,3}[A-Z]?)\b/i.exec(head)?.[1] ?? head;
}

/**
 * "Same GPU model?", the one answer plan (otherGpuWarning) and verify (otherGpu) both take: whether
 * `other` is the model `planned` names. `other`'s name has the planned model's family as a word (`A100`
 * is no word of "NVIDIA H100 80GB HBM3"), and, where both memories are known, they differ by at most
 * 10% of the planned one's.
 */
export function sameGpuModel(planned: GpuIdentity, other: GpuIdentity): boolean {
  const family = familyOf(planned.name);
  const named = new RegExp(
    `(^|[^A-Za-z0-9])${family.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9])`,
    'i',
  ).test(other.name);
  if (planned.memoryGiB === null || other.memoryGiB === null) return named;
  return named && Math.abs(other.memoryGiB - planned.memoryGiB) <= 0.1 * planned.memoryGiB;
}
