/**
 * Each option's assessment: whether it fits, the most models, the arithmetic as reasons (verdicts.ts)
 * and what it costs or risks (measured where the run has it). One function per option.
 */

import { measuredText, notMeasured } from './cost-text.js';
import { MAX_MPS_REPLICAS, pluginMpsLimits } from './k8s.js';
import { gib, type ModeAssessment, type PlanRequest, type ShareMode, type SharingFacts } from './plan-types.js';
import {
  contextOverhead,
  greenFits,
  limitReasons,
  limitsOf,
  type ModeLimits,
  migFit,
  missesSlo,
  mpsFits,
} from './verdicts.js';

/** How busy the models make the SMs together, as every option's reasons say it. */
function computeLine(request: PlanRequest): string {
  const { models, smPct } = request;
  const busy = models * smPct;
  return busy <= 100
    ? `all ${models} busy at once want ${busy}% of the SMs: they fit side by side`
    : `all ${models} busy at once want ${busy}% of the SMs: ${(busy / 100).toFixed(1)}× more than there is, so each gets about ${Math.floor(10000 / busy) / 100} of what it wants`;
}

/** A mode's measured cost as one line, or why it has none. */
function costLine(facts: SharingFacts, mode: ShareMode, inProcess: boolean): string {
  const { measured } = facts;
  return (
    (measured
      ? measuredText(measured[mode as Exclude<ShareMode, 'mig'>], measured.source, inProcess, facts.request.models)
      : null) ?? notMeasured(measured, mode)
  );
}

/** The fields every option but MIG takes from its limits. */
function fromLimits(limits: ModeLimits, models: number): Pick<ModeAssessment, 'geometry' | 'missesSlo' | 'slo'> {
  return { geometry: null, missesSlo: missesSlo(limits, models), slo: limits.slo };
}

export function mpsAssessment(facts: SharingFacts): ModeAssessment {
  const { request, gpu, measured } = facts;
  const { models, memGiB, smPct } = request;
  const mpsLimits = limitsOf(request, gpu, measured, 'mps');
  const limits = pluginMpsLimits(Math.max(1, models), gpu.memoryGiB * 1024);
  const perClient = memGiB + contextOverhead(measured, 'mps').gib;
  const { geometry, missesSlo, slo } = fromLimits(mpsLimits, models);
  return {
    mode: 'mps',
    fits: mpsFits(mpsLimits, models),
    mostModels: mpsLimits.most,
    reasons: [
      mpsLimits.memory.line,
      `${models} clients ${models <= MAX_MPS_REPLICAS ? '≤' : '>'} ${MAX_MPS_REPLICAS}, the MPS client limit per GPU`,
      computeLine(request),
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
      costLine(facts, 'mps', false),
      'no memory or fault isolation: one client that faults (e.g. an illegal address) can take the others down with it; a pinned-memory limit per client stops only over-allocation',
      'one daemon for every client on the GPU: if it dies, all of them lose the GPU; one trust boundary only',
    ],
    geometry,
    missesSlo,
    slo,
  };
}

export function timesliceAssessment(facts: SharingFacts): ModeAssessment {
  const { request, gpu, measured } = facts;
  const tsLimits = limitsOf(request, gpu, measured, 'timeslice');
  return {
    mode: 'timeslice',
    fits: tsLimits.memory.fits,
    mostModels: tsLimits.most,
    reasons: [
      tsLimits.memory.line,
      `the GPU runs one process at a time: ${request.models} busy models queue for it`,
      ...limitReasons(tsLimits, request.sloP99Ms),
    ],
    breaks: [
      costLine(facts, 'timeslice', false),
      'latency: each request waits while the other processes hold the GPU, and switching between them costs GPU time',
      'no memory isolation or limits: one process can take the memory the others need',
    ],
    ...fromLimits(tsLimits, request.models),
  };
}

/** What one process of every model risks, whether its models share the SMs or split them. */
const IN_PROCESS_BREAKS = [
  'one process: one fault domain and one allocator: one model that faults (an illegal address) or runs out of memory ends every model of the process (gpushare probe measures it in-process)',
  "one Python interpreter: every model's requests are launched under one GIL, so host time per request grows with the models (measured below where the run has it)",
  'one deployment: a model is added, updated or restarted with all the others',
];

export function streamsAssessment(facts: SharingFacts): ModeAssessment {
  const { request, gpu, measured } = facts;
  const streamsLimits = limitsOf(request, gpu, measured, 'streams');
  return {
    mode: 'streams',
    fits: streamsLimits.memory.fits,
    mostModels: streamsLimits.most,
    reasons: [
      streamsLimits.memory.line,
      `one process serves all ${request.models} models, each on its own CUDA stream and thread: the GPU runs their kernels side by side`,
      computeLine(request),
      ...limitReasons(streamsLimits, request.sloP99Ms),
    ],
    breaks: [
      costLine(facts, 'streams', true),
      ...IN_PROCESS_BREAKS,
      'no SM or memory limits between models: a busy one slows every other',
    ],
    ...fromLimits(streamsLimits, request.models),
  };
}

export function greenAssessment(facts: SharingFacts): ModeAssessment {
  const { request, gpu, measured } = facts;
  const { models } = request;
  const greenLimits = limitsOf(request, gpu, measured, 'green');
  return {
    mode: 'green',
    fits: greenFits(greenLimits, models),
    mostModels: greenLimits.most,
    reasons: [
      greenLimits.memory.line,
      `${greenLimits.green?.text ?? ''}: ${models} models ${(greenLimits.green?.most ?? 0) >= models ? 'get' : 'cannot all get'} a group each`,
      ...limitReasons(greenLimits, request.sloP99Ms),
    ],
    breaks: [
      costLine(facts, 'green', true),
      'SMs are isolated (each model on its own group), memory and faults are not: as in-process streams',
      ...IN_PROCESS_BREAKS,
      'an SM group a model does not use stays idle: the split is fixed when the process starts',
    ],
    ...fromLimits(greenLimits, models),
  };
}

export function migAssessment(facts: SharingFacts): ModeAssessment {
  const { request, gpu, measured } = facts;
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
  const { needGiB, profile, most } = migFit(request, gpu.mig, over);
  if (!profile)
    return {
      ...base,
      fits: false,
      mostModels: 0,
      reasons: [
        `no MIG profile of ${gpu.name} holds ${gib(needGiB)} (the model + ${over.text}) with ${request.smPct}% of the SMs`,
      ],
      geometry: null,
    };
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
