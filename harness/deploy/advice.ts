/**
 * "Can these models share one GPU, and how?" Fit is arithmetic on memory, client limits and MIG
 * shapes; cost comes from the run's measured ratios when a run is given. Nothing is extrapolated
 * beyond what was measured: the plan quotes the ratios at the client count they were measured at.
 */

import type { Measured, MeasuredMode } from '../bench/analysis/which-mode.js';
import { termText } from '../core/escape/terminal.js';
import { MAX_MPS_REPLICAS, pluginMpsLimits } from './k8s.js';
import type { MigGpu } from './mig-profiles.js';
import { type Geometry, placeGeometry } from './mig-solver.js';

/** Memory each process's CUDA context and libraries take besides the model (an assumption, printed with every plan). */
export const CONTEXT_OVERHEAD_GIB = 0.5;

export interface PlanRequest {
  models: number;
  /** Memory each model needs, GiB. */
  memGiB: number;
  /** Share of the GPU's SMs each model needs when busy, %. */
  smPct: number;
  latencySloMs: number | null;
}

export interface PlanGpu {
  name: string;
  memoryGiB: number;
  mig: MigGpu | null;
}

export type ShareMode = 'mps' | 'timeslice' | 'mig';

export interface ModeAssessment {
  mode: ShareMode;
  fits: boolean;
  /** Why it fits or not: the arithmetic. */
  reasons: string[];
  /** What this mode costs or risks, from measurements where there are any. */
  breaks: string[];
  /** MIG: the geometry that would be made. */
  geometry: Geometry | null;
  missesSlo: boolean;
}

export interface PlanAdvice {
  request: PlanRequest;
  gpu: PlanGpu;
  recommendation: ShareMode | null;
  why: string;
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

function measuredText(m: MeasuredMode | null, source: string): string | null {
  if (!m) return null;
  const memory =
    m.memoryPerClientMiB !== null && m.memoryPerClientMiB !== undefined
      ? `, ${m.memoryPerClientMiB.toFixed(0)} MiB of GPU memory per client`
      : '';
  const p99 = m.contendedP99Ms !== null ? ` (${m.contendedP99Ms.toFixed(2)} ms)` : '';
  // The run's own text (its GPU's name, driver, workload), shown escaped: the plan is printed and quoted in a README.
  return `measured on ${termText(source)} with ${m.clients} ${termText(m.workload)} clients${m.extrapolated ? ' (EXTRAPOLATED: the most clients measured; more cost more)' : ''}: slowdown ${ratio(m.slowdown)}, together ${ratio(m.aggregate)} the work of one alone, p99 latency ${ratio(m.p99Ratio)}${p99}${memory}`;
}

/** Why a mode has no measured cost: no run was given, or the run did not measure that mode. */
function notMeasured(measured: Measured | null, mode: string): string {
  return measured
    ? `${measured.source} did not measure ${mode} on a contention workload: cost not measured`
    : 'no run given: cost not measured';
}

/** Where the plan's costs come from: the client count they were measured at, or why there are none. */
function costAssumption(measured: Measured | null, models: number): string {
  if (!measured) return 'without --run, costs are not measured';
  const clients = measured.mps?.clients ?? measured.timeslice?.clients;
  if (clients === undefined)
    return `${measured.source} measured neither time-slicing nor MPS on a contention workload: costs not measured`;
  if ([measured.mps, measured.timeslice].some((m) => m?.extrapolated))
    return `costs are those measured at the most clients the run has (${clients}), fewer than ${models}: marked EXTRAPOLATED; with more clients they grow`;
  return `costs are those measured at ${clients} clients${(measured.mps?.clients ?? 0) >= models ? `, the fewest measured at or above ${models}` : ''}`;
}

/** Per-process overhead besides the model: measured per-client memory where the run has it, else the assumed constant. */
function overheadGiB(measured: Measured | null, mode: 'mps' | 'timeslice'): { gib: number; measured: boolean } {
  const mib = measured?.[mode]?.memoryPerClientMiB;
  return mib !== null && mib !== undefined && mib > 0
    ? { gib: mib / 1024, measured: true }
    : { gib: CONTEXT_OVERHEAD_GIB, measured: false };
}

/**
 * Which hard limit binds first for a mode: each limit's most models, the smallest named. Memory from
 * the per-client memory (measured or assumed), the MPS client limit, and the latency target against
 * the measured contended p99 (at the client count quoted). Throughput (SMs with every model busy) is
 * a soft limit, named beside it when it comes first.
 */
export function bindingLimit(
  request: PlanRequest,
  gpu: PlanGpu,
  measured: Measured | null,
  mode: 'mps' | 'timeslice',
): string {
  const over = overheadGiB(measured, mode);
  const limits: Array<[string, number]> = [
    [
      `memory (${gib(request.memGiB)} + ${gib(over.gib)} ${over.measured ? 'measured' : 'assumed'} per client of ${gib(gpu.memoryGiB)})`,
      Math.floor(gpu.memoryGiB / (request.memGiB + over.gib)),
    ],
  ];
  if (mode === 'mps') limits.push([`the MPS client limit`, MAX_MPS_REPLICAS]);
  const m = measured?.[mode];
  const slo = request.latencySloMs;
  if (slo !== null && m) {
    // The most clients measured within the target (a sweep gives several counts; one run, one).
    const points = (m.p99ByClients ?? [{ clients: m.clients, p99Ms: m.contendedP99Ms }]).filter(
      (p) => p.p99Ms !== null,
    );
    const within = points.filter((p) => (p.p99Ms as number) <= slo).map((p) => p.clients);
    const most = within.length > 0 ? Math.max(...within) : 0;
    const text = points.map((p) => `${(p.p99Ms as number).toFixed(1)} ms at ${p.clients}`).join(', ');
    if (points.length > 0) limits.push([`the ${slo} ms p99 target (measured contended p99: ${text} clients)`, most]);
  }
  const [name, most] = limits.reduce((a, b) => (b[1] < a[1] ? b : a));
  const busy = Math.floor(100 / request.smPct);
  const throughput =
    busy < most
      ? `; before it, throughput: with every model busy at once only ${busy} get their ${request.smPct}% of the SMs`
      : '';
  return `binding limit: ${name}, at ${most} models${most < request.models ? ` (fewer than the ${request.models} asked)` : ''}${throughput}`;
}

function sloCheck(m: MeasuredMode | null, slo: number | null): boolean {
  return slo !== null && m?.contendedP99Ms !== null && m?.contendedP99Ms !== undefined && m.contendedP99Ms > slo;
}

export function advise(request: PlanRequest, gpu: PlanGpu, measured: Measured | null): PlanAdvice {
  const { models, memGiB, smPct } = request;
  const over = overheadGiB(measured, 'mps').measured
    ? overheadGiB(measured, 'mps')
    : overheadGiB(measured, 'timeslice');
  const memoryNeed = models * (memGiB + over.gib);
  const memoryFits = memoryNeed <= gpu.memoryGiB;
  const memoryLine = `${models} × (${gib(memGiB)} + ${gib(over.gib)} ${over.measured ? 'measured per client' : 'context'}) = ${gib(memoryNeed)} of ${gib(gpu.memoryGiB)}`;
  const busy = models * smPct;
  const computeLine =
    busy <= 100
      ? `all ${models} busy at once want ${busy}% of the SMs: they fit side by side`
      : `all ${models} busy at once want ${busy}% of the SMs: ${(busy / 100).toFixed(1)}× more than there is, so each gets about ${Math.floor(10000 / busy) / 100} of what it wants`;

  const mpsMeasured = measured ? measuredText(measured.mps, measured.source) : null;
  const limits = pluginMpsLimits(Math.max(1, models), gpu.memoryGiB * 1024);
  const perClient = memGiB + over.gib;
  const mps: ModeAssessment = {
    mode: 'mps',
    fits: memoryFits && models <= MAX_MPS_REPLICAS,
    reasons: [
      memoryLine,
      `${models} clients ${models <= MAX_MPS_REPLICAS ? '≤' : '>'} ${MAX_MPS_REPLICAS}, the MPS client limit per GPU`,
      computeLine,
      `with ${models} replicas the device plugin's MPS caps each client at ${limits.threadPct}% of the SMs and ${limits.memLimitMiB} MiB (an even split; the host scripts set the same)`,
      bindingLimit(request, gpu, measured, 'mps'),
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
      mpsMeasured ?? notMeasured(measured, 'MPS'),
      'no memory or fault isolation: one client that faults (e.g. an illegal address) can take the others down with it; a pinned-memory limit per client stops only over-allocation',
      'one daemon for every client on the GPU: if it dies, all of them lose the GPU; one trust boundary only',
    ],
    geometry: null,
    missesSlo: sloCheck(measured?.mps ?? null, request.latencySloMs),
  };

  const tsMeasured = measured ? measuredText(measured.timeslice, measured.source) : null;
  const timeslice: ModeAssessment = {
    mode: 'timeslice',
    fits: memoryFits,
    reasons: [
      memoryLine,
      `the GPU runs one process at a time: ${models} busy models queue for it`,
      bindingLimit(request, gpu, measured, 'timeslice'),
    ],
    breaks: [
      tsMeasured ?? notMeasured(measured, 'time-slicing'),
      'latency: each request waits while the other processes hold the GPU, and switching between them costs GPU time',
      'no memory isolation or limits: one process can take the memory the others need',
    ],
    geometry: null,
    missesSlo: sloCheck(measured?.timeslice ?? null, request.latencySloMs),
  };

  const mig = migAssessment(request, gpu);
  const assessments = [mps, timeslice, mig];
  const sloOk = (a: ModeAssessment) => a.fits && !a.missesSlo;
  let recommendation: ShareMode | null = null;
  let why: string;
  if (sloOk(mig)) {
    recommendation = 'mig';
    why = `every model gets its own ${Object.keys(mig.geometry ?? {})[0]} slice: hardware isolation of memory, faults and bandwidth, and the count fits MIG's instance limit`;
  } else if (sloOk(mps)) {
    recommendation = 'mps';
    const migWhy = mig.fits
      ? 'MIG fits but misses the latency target'
      : gpu.mig
        ? `MIG cannot give ${models} models a slice each`
        : `${gpu.name} has no MIG table here`;
    why = `${migWhy}; MPS runs them side by side in one context${measured?.mps ? `, at the measured cost below` : ''}`;
  } else if (sloOk(timeslice)) {
    recommendation = 'timeslice';
    why = 'neither MIG nor MPS fits; time-slicing shares the GPU with no client limit, at the latency cost below';
  } else {
    const gpus = Math.ceil(memoryNeed / gpu.memoryGiB);
    why = memoryFits
      ? 'every mode misses the latency target'
      : `the models do not fit in ${gpu.name}'s memory: they need about ${gpus} such GPUs`;
  }
  return {
    request,
    gpu,
    recommendation,
    why,
    assessments,
    assumptions: [
      over.measured
        ? `${gib(over.gib)} per process besides the model: GPU memory per client measured by the run (context and its probe workload)`
        : `${gib(CONTEXT_OVERHEAD_GIB)} per process for the CUDA context and libraries (not measured)`,
      costAssumption(measured, models),
    ],
    mpsThreadPct: Math.max(1, limits.threadPct),
    mpsMemLimit: `${limits.memLimitMiB}M`,
  };
}

function migAssessment(request: PlanRequest, gpu: PlanGpu): ModeAssessment {
  const breaks = [
    'fixed shapes: a slice is whole compute and memory slices, so capacity a model does not use is stranded',
    'changing the geometry needs the GPU drained and reset (minutes, not seconds)',
  ];
  const base = { mode: 'mig' as const, breaks, missesSlo: false };
  if (!gpu.mig)
    return {
      ...base,
      fits: false,
      reasons: [`${gpu.name} has no MIG profile table (MIG unsupported, or not recorded)`],
      geometry: null,
    };
  const need = request.memGiB + CONTEXT_OVERHEAD_GIB;
  const slices = gpu.mig.computeSlices;
  const profile = [...gpu.mig.profiles]
    .filter((p) => !p.name.includes('+') && p.memoryGiB >= need && (p.computeSlices / slices) * 100 >= request.smPct)
    .sort((a, b) => a.computeSlices - b.computeSlices || a.memoryGiB - b.memoryGiB)[0];
  if (!profile)
    return {
      ...base,
      fits: false,
      reasons: [`no MIG profile of ${gpu.name} holds ${gib(need)} with ${request.smPct}% of the SMs`],
      geometry: null,
    };
  let most = 0;
  for (let n = 1; n <= profile.maxInstances; n++) if (placeGeometry(gpu.mig, { [profile.name]: n }).ok) most = n;
  const fits = request.models <= most;
  return {
    ...base,
    fits,
    reasons: [
      `the smallest slice for one model is ${profile.name} (${gib(profile.memoryGiB)}, ${profile.computeSlices}/${gpu.mig.computeSlices} of the compute)`,
      fits
        ? `${request.models} of them fit (the placement solver finds room for ${most})`
        : `at most ${most} fit on ${gpu.name}: ${request.models} models would need ${Math.ceil(request.models / most)} models per slice, sharing each slice by time-slicing or MPS`,
    ],
    geometry: { [profile.name]: fits ? request.models : most },
  };
}

export function adviceText(a: PlanAdvice): string {
  const r = a.request;
  const lines = [
    `plan: ${r.models} models × ${gib(r.memGiB)}, ${r.smPct}% of the SMs each${r.latencySloMs !== null ? `, p99 latency target ${r.latencySloMs} ms` : ''}, on one ${a.gpu.name}`,
    '',
    a.recommendation
      ? `recommendation: ${a.recommendation === 'timeslice' ? 'time-slicing' : a.recommendation.toUpperCase()} — ${a.why}`
      : `recommendation: none fits — ${a.why}`,
  ];
  for (const m of a.assessments) {
    lines.push(
      '',
      `${m.mode === 'timeslice' ? 'time-slicing' : m.mode.toUpperCase()}: ${m.fits ? 'fits' : 'does not fit'}${m.missesSlo ? ' but its measured contended p99 misses the latency target' : ''}`,
    );
    for (const reason of m.reasons) lines.push(`  - ${reason}`);
    for (const cost of m.breaks) lines.push(`  ! ${cost}`);
  }
  lines.push('', 'assumptions:', ...a.assumptions.map((x) => `  - ${x}`));
  return `${lines.join('\n')}\n`;
}
