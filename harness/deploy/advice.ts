/**
 * "Can these models share one GPU, and how?" Fit is arithmetic on memory, client limits and MIG
 * shapes; cost comes from the run's measured ratios when a run is given. Nothing is extrapolated
 * beyond what was measured: the plan quotes the ratios at the client count they were measured at.
 */

import { type Measured, type MeasuredMode, modeDecision } from '../bench/analysis/which-mode.js';
import { tieText } from '../bench/outputs/which-mode-text.js';
import { termText } from '../core/escape/terminal.js';
import { MAX_MPS_REPLICAS, pluginMpsLimits } from './k8s.js';
import type { MigGpu } from './mig-profiles.js';
import { type Geometry, placeGeometry } from './mig-solver.js';
import { type SloReach, sloReach } from './slo-reach.js';

/** Memory each CUDA context and its libraries take besides the model, GiB: assumed where no run measured it (printed with every plan). */
export const CONTEXT_OVERHEAD_GIB = 0.5;
/** Memory a fit leaves free by default, % of the GPU's (allocator fragmentation, a spike, the driver's own). */
export const DEFAULT_HEADROOM_PCT = 5;
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

export interface PlanRequest {
  models: number;
  /** Memory each model needs, GiB. */
  memGiB: number;
  /** Share of the GPU's SMs each model needs when busy, %. */
  smPct: number;
  /** p99 latency target, ms; null: none. */
  sloP99Ms: number | null;
  /** Memory a fit must leave free, % of the GPU's; default DEFAULT_HEADROOM_PCT. */
  headroomPct?: number;
}

export interface PlanGpu {
  name: string;
  memoryGiB: number;
  mig: MigGpu | null;
  /** SMs of the GPU (green contexts split them); null or absent where not known. */
  smCount?: number | null;
}

/** The five ways to put many models on one GPU that the plan weighs. */
export type ShareMode = 'streams' | 'green' | 'timeslice' | 'mps' | 'mig';
/** Each option's name in the plan's text. */
export const MODE_TEXT: Record<ShareMode, string> = {
  streams: 'in-process streams',
  green: 'green contexts',
  timeslice: 'time-slicing',
  mps: 'MPS',
  mig: 'MIG',
};
/** Where no measurement decides: the order of isolation (separate processes first; MIG is taken first whenever it fits). */
const ISOLATION_ORDER: readonly ShareMode[] = ['mig', 'mps', 'timeslice', 'green', 'streams'];

export interface ModeAssessment {
  mode: ShareMode;
  fits: boolean;
  /** The most models this option puts on one such GPU (its binding limit); 0 where none. */
  mostModels: number;
  /** Why it fits or not: the arithmetic. */
  reasons: string[];
  /** What this mode costs or risks, from measurements where there are any. */
  breaks: string[];
  /** MIG: the geometry that would be made. */
  geometry: Geometry | null;
  missesSlo: boolean;
  /** The latency target against the measured p99 (null: no target, or nothing measured); MIG has none. */
  slo?: SloReach | null;
}

export interface PlanAdvice {
  request: PlanRequest;
  gpu: PlanGpu;
  recommendation: ShareMode | null;
  why: string;
  /** The next option that fits, and why it comes second; null where no other fits. */
  runnerUp: { mode: ShareMode; why: string } | null;
  assessments: ModeAssessment[];
  assumptions: string[];
  /**
   * Per-client MPS limits: those the device plugin's MPS gives one of `models` replicas, so that its
   * config and the host scripts agree (the plugin splits SMs and memory evenly by replicas).
   */
  mpsThreadPct: number;
  mpsMemLimit: string;
}

const gib = (x: number) => `${Number(x.toFixed(2))} GiB`;
const ratio = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(2)}×`);
const mibText = (x: number) => `${x.toFixed(0)} MiB`;

function measuredText(
  m: MeasuredMode | null | undefined,
  source: string,
  inProcess: boolean,
  models: number,
): string | null {
  if (!m) return null;
  const who = inProcess
    ? `${m.clients} ${termText(m.workload)} tenants in one process`
    : `${m.clients} ${termText(m.workload)} clients`;
  const memory =
    m.risePerProcessMiB != null && m.reservedPerProcessMiB != null
      ? `; memory per process: nvidia-smi rose ${mibText(m.risePerProcessMiB)}, the workload's allocator held ${mibText(m.reservedPerProcessMiB)}, overhead ${m.risePerProcessMiB >= m.reservedPerProcessMiB ? mibText(m.risePerProcessMiB - m.reservedPerProcessMiB) : 'not separable'}`
      : m.memoryPerClientMiB != null
        ? `, ${m.memoryPerClientMiB.toFixed(0)} MiB of GPU memory per client`
        : '';
  const host =
    m.stepHostSoloUs != null && m.stepHostContendedUs != null
      ? `; host time per request ${m.stepHostSoloUs.toFixed(1)} µs alone, ${m.stepHostContendedUs.toFixed(1)} µs with all ${m.clients} (${inProcess ? "Python's GIL" : 'each its own process'})`
      : '';
  const p99 = m.contendedP99Ms !== null ? ` (${m.contendedP99Ms.toFixed(2)} ms)` : '';
  // The run's own text (its GPU's name, driver, workload), shown escaped: the plan is printed and quoted in a README.
  return `measured on ${termText(source)} with ${who}${m.extrapolated ? ` (the most measured, fewer than the ${models} asked: more cost more)` : ''}: slowdown ${ratio(m.slowdown)}, together ${ratio(m.aggregate)} the work of one alone, p99 latency ${ratio(m.p99Ratio)}${p99}${memory}${host}`;
}

/** Why a mode has no measured cost: no run was given, or the run did not measure that mode. */
function notMeasured(measured: Measured | null, mode: ShareMode): string {
  const how =
    mode === 'streams' || mode === 'green'
      ? 'tenants of one process (bench --modes streams,green --clients N)'
      : 'a contention workload';
  return measured
    ? `${measured.source} did not measure ${MODE_TEXT[mode]} on ${how}: cost not measured`
    : 'no run given: cost not measured';
}

/** Where the plan's costs come from: the client count they were measured at, or why there are none. */
function costAssumption(measured: Measured | null, models: number): string {
  if (!measured) return 'without --run, costs are not measured';
  const modes = [measured.mps, measured.timeslice, measured.streams, measured.green];
  const clients = modes.find((m) => m)?.clients;
  if (clients === undefined)
    return `${measured.source} measured neither time-slicing nor MPS on a contention workload: costs not measured`;
  const named: Array<[string, MeasuredMode | null | undefined]> = [
    [MODE_TEXT.mps, measured.mps],
    [MODE_TEXT.timeslice, measured.timeslice],
    [MODE_TEXT.streams, measured.streams],
    [MODE_TEXT.green, measured.green],
  ];
  const extrapolated = named.flatMap(([name, m]) => (m?.extrapolated ? [`${name} at ${m.clients}`] : []));
  if (extrapolated.length > 0)
    return `costs are those measured at the most clients the run has for each option, quoted as measured, never extrapolated; fewer than ${models} for ${extrapolated.join(', ')}: with more clients they grow`;
  return `costs are those measured at ${clients} clients${(measured.mps?.clients ?? measured.timeslice?.clients ?? 0) >= models ? `, the fewest measured at or above ${models}` : ''}`;
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

function limitsOf(
  request: PlanRequest,
  gpu: PlanGpu,
  measured: Measured | null,
  mode: Exclude<ShareMode, 'mig'>,
): { text: string; most: number; memory: MemoryFit; green: GreenSplit | null; slo: SloReach | null } {
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
interface GreenSplit {
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
function limitReasons(limits: ReturnType<typeof limitsOf>, sloMs: number | null): string[] {
  const held = limits.slo && limits.slo.kind !== 'missed' ? limits.slo : null;
  return [
    limits.text,
    ...(held ? [`the ${sloMs} ms p99 target: ${held.text} (measured contended p99: ${held.measured})`] : []),
  ];
}

/** Whether an option misses the latency target at the models asked: a count measured missed it, and fewer held it. */
const missesSlo = (limits: ReturnType<typeof limitsOf>, models: number) =>
  limits.slo?.kind === 'missed' && limits.slo.most < models;

export function advise(request: PlanRequest, gpu: PlanGpu, measured: Measured | null): PlanAdvice {
  const { models, memGiB, smPct } = request;
  const busy = models * smPct;
  const computeLine =
    busy <= 100
      ? `all ${models} busy at once want ${busy}% of the SMs: they fit side by side`
      : `all ${models} busy at once want ${busy}% of the SMs: ${(busy / 100).toFixed(1)}× more than there is, so each gets about ${Math.floor(10000 / busy) / 100} of what it wants`;
  const text = (mode: ShareMode, inProcess: boolean) =>
    (measured ? measuredText(measured[mode as Exclude<ShareMode, 'mig'>], measured.source, inProcess, models) : null) ??
    notMeasured(measured, mode);

  const mpsLimits = limitsOf(request, gpu, measured, 'mps');
  const limits = pluginMpsLimits(Math.max(1, models), gpu.memoryGiB * 1024);
  const perClient = memGiB + contextOverhead(measured, 'mps').gib;
  const mps: ModeAssessment = {
    mode: 'mps',
    fits: mpsLimits.memory.fits && models <= MAX_MPS_REPLICAS,
    mostModels: mpsLimits.most,
    reasons: [
      mpsLimits.memory.line,
      `${models} clients ${models <= MAX_MPS_REPLICAS ? '≤' : '>'} ${MAX_MPS_REPLICAS}, the MPS client limit per GPU`,
      computeLine,
      `with ${models} replicas the device plugin's MPS caps each client at ${limits.threadPct}% of the SMs and ${limits.memLimitMiB} MiB (an even split; the host scripts set the same)`,
      ...limitReasons(mpsLimits, request.sloP99Ms),
    ],
    breaks: [
      ...(limits.threadPct < smPct
        ? [
            `each client is capped at ${limits.threadPct}% of the SMs, below the ${smPct}% asked: at ${smPct}% one GPU takes at most ${Math.floor(100 / smPct)} replicas`,
          ]
        : []),
      ...(limits.memLimitMiB < perClient * 1024
        ? [`each client's ${limits.memLimitMiB} MiB is less than the ${gib(perClient)} a model needs with its context`]
        : []),
      text('mps', false),
      'no memory or fault isolation: one client that faults (e.g. an illegal address) can take the others down with it; a pinned-memory limit per client stops only over-allocation',
      'one daemon for every client on the GPU: if it dies, all of them lose the GPU; one trust boundary only',
    ],
    geometry: null,
    missesSlo: missesSlo(mpsLimits, models),
    slo: mpsLimits.slo,
  };

  const tsLimits = limitsOf(request, gpu, measured, 'timeslice');
  const timeslice: ModeAssessment = {
    mode: 'timeslice',
    fits: tsLimits.memory.fits,
    mostModels: tsLimits.most,
    reasons: [
      tsLimits.memory.line,
      `the GPU runs one process at a time: ${models} busy models queue for it`,
      ...limitReasons(tsLimits, request.sloP99Ms),
    ],
    breaks: [
      text('timeslice', false),
      'latency: each request waits while the other processes hold the GPU, and switching between them costs GPU time',
      'no memory isolation or limits: one process can take the memory the others need',
    ],
    geometry: null,
    missesSlo: missesSlo(tsLimits, models),
    slo: tsLimits.slo,
  };

  const inProcessBreaks = [
    'one process: one fault domain and one allocator: one model that faults (an illegal address) or runs out of memory ends every model of the process (gpushare probe measures it in-process)',
    "one Python interpreter: every model's requests are launched under one GIL, so host time per request grows with the models (measured below where the run has it)",
    'one deployment: a model is added, updated or restarted with all the others',
  ];
  const streamsLimits = limitsOf(request, gpu, measured, 'streams');
  const streams: ModeAssessment = {
    mode: 'streams',
    fits: streamsLimits.memory.fits,
    mostModels: streamsLimits.most,
    reasons: [
      streamsLimits.memory.line,
      `one process serves all ${models} models, each on its own CUDA stream and thread: the GPU runs their kernels side by side`,
      computeLine,
      ...limitReasons(streamsLimits, request.sloP99Ms),
    ],
    breaks: [
      text('streams', true),
      ...inProcessBreaks,
      'no SM or memory limits between models: a busy one slows every other',
    ],
    geometry: null,
    missesSlo: missesSlo(streamsLimits, models),
    slo: streamsLimits.slo,
  };

  const greenLimits = limitsOf(request, gpu, measured, 'green');
  const greenFits = greenLimits.memory.fits && (greenLimits.green?.most ?? 0) >= models;
  const green: ModeAssessment = {
    mode: 'green',
    fits: greenFits,
    mostModels: greenLimits.most,
    reasons: [
      greenLimits.memory.line,
      `${greenLimits.green?.text ?? ''}: ${models} models ${(greenLimits.green?.most ?? 0) >= models ? 'get' : 'cannot all get'} a group each`,
      ...limitReasons(greenLimits, request.sloP99Ms),
    ],
    breaks: [
      text('green', true),
      'SMs are isolated (each model on its own group), memory and faults are not: as in-process streams',
      ...inProcessBreaks,
      'an SM group a model does not use stays idle: the split is fixed when the process starts',
    ],
    geometry: null,
    missesSlo: missesSlo(greenLimits, models),
    slo: greenLimits.slo,
  };

  const mig = migAssessment(request, gpu, measured);
  const assessments = [streams, green, timeslice, mps, mig];
  const { recommendation, why, runnerUp } = recommend(assessments, measured, request, gpu);
  const over = contextOverhead(measured, 'mps');
  return {
    request,
    gpu,
    recommendation,
    why,
    runnerUp,
    assessments,
    assumptions: [
      over.measured
        ? `${gib(over.gib)} per CUDA context besides the model: measured by the run, nvidia-smi's rise per process less what the workload's own allocator held`
        : `${gib(CONTEXT_OVERHEAD_GIB)} per CUDA context besides the model, for the context and its libraries (assumed: the run reported no reservation to separate it from its workload's memory)`,
      `each fit keeps ${request.headroomPct ?? DEFAULT_HEADROOM_PCT}% of the GPU's memory free (--headroom-pct)`,
      costAssumption(measured, models),
    ],
    mpsThreadPct: Math.max(1, limits.threadPct),
    mpsMemLimit: `${limits.memLimitMiB}M`,
  };
}

/**
 * The one decision: MIG when it fits and meets the target (hardware isolation); else, of the options
 * that fit and meet the target, bench's mode decision over those measured (cheaper only where the
 * slowdown intervals separate; measured the same, isolation decides), unmeasured ones after in the
 * order of isolation. The runner-up is the next of the same order.
 */
function recommend(
  assessments: ModeAssessment[],
  measured: Measured | null,
  request: PlanRequest,
  gpu: PlanGpu,
): Pick<PlanAdvice, 'recommendation' | 'why' | 'runnerUp'> {
  const slowdown = (a: ModeAssessment) => (a.mode === 'mig' ? null : (measured?.[a.mode]?.slowdown ?? null));
  const fitting = assessments.filter((a) => a.fits && !a.missesSlo);
  const measuredModes = fitting.filter((a) => a.mode !== 'mig' && slowdown(a) !== null).map((a) => a.mode);
  const decision = measured && measuredModes.length > 1 ? modeDecision(measured, measuredModes) : null;
  // Decided first (the winner, or the tied by isolation), then the costlier by median, then the unmeasured.
  const decided: ShareMode[] =
    decision?.kind === 'cheaper'
      ? [decision.mode, ...decision.compared.map((c) => c.mode).filter((m) => m !== decision.mode)]
      : decision?.kind === 'same'
        ? [...decision.tied, ...decision.costlier]
        : [];
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
  const interval = (m: MeasuredMode) =>
    m.slowdownCi ? ` [${m.slowdownCi[0].toFixed(3)}, ${m.slowdownCi[1].toFixed(3)}]` : '';
  const reason = (a: ModeAssessment, first: boolean): string => {
    if (a.mode === 'mig')
      return `every model gets its own ${Object.keys(a.geometry ?? {})[0]} slice: hardware isolation of memory, faults and bandwidth, and the count fits MIG's instance limit`;
    const s = slowdown(a);
    const m = measured?.[a.mode];
    const at = m ? `at ${m.clients} ${a.mode === 'streams' || a.mode === 'green' ? 'tenants' : 'clients'}` : '';
    if (decision?.kind === 'same' && decision.tied.includes(a.mode))
      return a.mode === decision.mode
        ? `fits; ${termText(tieText(decision))
            .replace(/\.$/, '')
            .replace(/^[A-Z](?=[a-z])/, (x) => x.toLowerCase())}`
        : `fits, and measured the same as ${MODE_TEXT[decision.mode]} here (the 95% intervals of the slowdown overlap): ${s?.toFixed(2)}×${m ? `${interval(m)} ${at}` : ''}; isolation put ${MODE_TEXT[decision.mode]} first`;
    const skipped = decision?.skipped.find((x) => x.mode === a.mode);
    if (s !== null && decision && decision.kind !== 'none' && skipped)
      return `fits; its cost is not weighed against the others (${termText(skipped.reason)}), so it is ranked by isolation after them`;
    if (s !== null && m && decision?.kind === 'cheaper' && a.mode === decision.mode)
      return `fits, and measured the lowest per-model slowdown of the options that fit, its 95% interval below every other's: ${s.toFixed(2)}×${interval(m)} ${at}`;
    if (s !== null && decision?.kind === 'none')
      return `fits; its cost is not compared (${termText(decision.reason)}), so it is ranked by isolation (${ISOLATION_ORDER.map((x) => MODE_TEXT[x]).join(', ')})`;
    if (s !== null && m)
      return `fits, and ${first ? 'measured the lowest' : 'measured the next lowest'} per-model slowdown of the options that fit: ${s.toFixed(2)}×${decision ? interval(m) : ''} ${at}`;
    return `fits; its cost was not measured, so it is ranked by isolation (${ISOLATION_ORDER.map((x) => MODE_TEXT[x]).join(', ')})`;
  };
  const [best, second] = ok;
  if (best) {
    const better = ISOLATION_ORDER.slice(0, ISOLATION_ORDER.indexOf(best.mode))
      .map((mode) => assessments.find((a) => a.mode === mode))
      .filter((a): a is ModeAssessment => a !== undefined && !ok.includes(a));
    const group = (pick: (a: ModeAssessment) => boolean, what: string) => {
      const names = better.filter(pick).map((a) => MODE_TEXT[a.mode]);
      return names.length > 0 ? [`${names.join(', ')} ${what}`] : [];
    };
    const missed = [
      ...group((a) => !a.fits, names1(better.filter((a) => !a.fits).length, 'does not fit', 'do not fit')),
      ...group(
        (a) => a.fits,
        names1(better.filter((a) => a.fits).length, 'misses the latency target', 'miss the latency target'),
      ),
    ];
    return {
      recommendation: best.mode,
      // Ranked by isolation (no measurement decided): say why the better isolated ones were passed over.
      why: `${reason(best, true)}${missed.length > 0 && slowdown(best) === null ? `; the better isolated options cannot: ${missed.join('; ')}` : ''}`,
      runnerUp: second ? { mode: second.mode, why: reason(second, false) } : null,
    };
  }
  if (assessments.some((a) => a.fits))
    return { recommendation: null, why: 'every option that fits misses the latency target', runnerUp: null };
  // None fits one GPU: the fewest GPUs, and with which option.
  const spread = assessments
    .filter((a) => a.mostModels > 0)
    .map((a) => ({ a, gpus: Math.ceil(request.models / a.mostModels) }))
    .sort((x, y) => x.gpus - y.gpus || ISOLATION_ORDER.indexOf(x.a.mode) - ISOLATION_ORDER.indexOf(y.a.mode))[0];
  return {
    recommendation: null,
    why: spread
      ? `the ${request.models} models do not fit one ${gpu.name} in any mode: the fewest is ${spread.gpus} such GPUs, with ${MODE_TEXT[spread.a.mode]} (${spread.a.mostModels} models per GPU)`
      : `the ${request.models} models do not fit one ${gpu.name} in any mode, and no option fits even one model per GPU`,
    runnerUp: null,
  };
}

function migAssessment(request: PlanRequest, gpu: PlanGpu, measured: Measured | null): ModeAssessment {
  const breaks = [
    'fixed shapes: a slice is whole compute and memory slices, so capacity a model does not use is stranded',
    'changing the geometry needs the GPU drained and reset (minutes, not seconds)',
  ];
  const base = { mode: 'mig' as const, breaks, missesSlo: false };
  if (!gpu.mig)
    return {
      ...base,
      fits: false,
      mostModels: 0,
      reasons: [`${gpu.name} has no MIG profile table (MIG unsupported, or not recorded)`],
      geometry: null,
    };
  // One context per slice: the model and one context's overhead.
  const over = contextOverhead(measured, 'mig');
  const need = request.memGiB + over.gib;
  const slices = gpu.mig.computeSlices;
  const profile = [...gpu.mig.profiles]
    .filter((p) => !p.name.includes('+') && p.memoryGiB >= need && (p.computeSlices / slices) * 100 >= request.smPct)
    .sort((a, b) => a.computeSlices - b.computeSlices || a.memoryGiB - b.memoryGiB)[0];
  if (!profile)
    return {
      ...base,
      fits: false,
      mostModels: 0,
      reasons: [
        `no MIG profile of ${gpu.name} holds ${gib(need)} (the model + ${over.text}) with ${request.smPct}% of the SMs`,
      ],
      geometry: null,
    };
  let most = 0;
  for (let n = 1; n <= profile.maxInstances; n++) if (placeGeometry(gpu.mig, { [profile.name]: n }).ok) most = n;
  const fits = request.models <= most;
  return {
    ...base,
    fits,
    mostModels: most,
    reasons: [
      `the smallest slice for one model and its context (${gib(request.memGiB)} + ${over.text}) is ${profile.name} (${gib(profile.memoryGiB)}, ${profile.computeSlices}/${gpu.mig.computeSlices} of the compute)`,
      fits
        ? `${request.models} of them fit (the placement solver finds room for ${most})`
        : `at most ${most} fit on ${gpu.name}: ${request.models} models would need ${Math.ceil(request.models / most)} models per slice, sharing each slice by time-slicing or MPS`,
    ],
    geometry: { [profile.name]: fits ? request.models : most },
  };
}

/** The verb for one name or several. */
const names1 = (n: number, one: string, many: string) => (n === 1 ? one : many);

/** An option's verdict as one line: fit and latency target said separately, so neither reads as the other. */
function verdictText(m: ModeAssessment, sloMs: number | null): string {
  const target = `the ${sloMs} ms p99 target`;
  if (m.fits && !m.missesSlo) return m.slo?.kind === 'unmeasured' ? `fits; ${target} ${m.slo.text}` : 'fits';
  if (m.fits) return `fits, but misses ${target}: ${m.slo?.text}`;
  if (m.missesSlo) return `does not fit, and would miss ${target} too: ${m.slo?.text}`;
  return 'does not fit';
}

export function adviceText(a: PlanAdvice): string {
  const r = a.request;
  const lines = [
    `plan: ${r.models} models × ${gib(r.memGiB)}, ${r.smPct}% of the SMs each${r.sloP99Ms !== null ? `, p99 latency target ${r.sloP99Ms} ms` : ''}, on one ${a.gpu.name}`,
    '',
    a.recommendation
      ? `recommendation: ${MODE_TEXT[a.recommendation]} — ${a.why}`
      : `recommendation: none fits — ${a.why}`,
    ...(a.recommendation
      ? [
          a.runnerUp
            ? `runner-up: ${MODE_TEXT[a.runnerUp.mode]} — ${a.runnerUp.why}`
            : 'runner-up: none — no other option fits',
        ]
      : []),
  ];
  for (const m of a.assessments) {
    lines.push('', `${MODE_TEXT[m.mode]}: ${verdictText(m, r.sloP99Ms)}`);
    for (const reason of m.reasons) lines.push(`  - ${reason}`);
    for (const cost of m.breaks) lines.push(`  ! ${cost}`);
  }
  lines.push('', 'assumptions:', ...a.assumptions.map((x) => `  - ${x}`));
  return `${lines.join('\n')}\n`;
}
