/** Gives the parsed flags meaning: validates each one and fills in defaults, naming any bad value. */
import type { ArtifactsOptions, PlanOptions } from './commands/artifacts.js';
import { argText } from './argv-text.js';
import type { ArtifactsArgs, BenchArgs, CapacityArgs, PlanArgs, ProbeArgs } from './cli.js';
import type { CapacitySettings } from './run/capacity-record.js';
import { UserError } from './errors.js';
import type { ProgressStyle } from './progress.js';
import { PROBES, type ProbeName } from './run/probe-record.js';
import { MODE_NAMES, type Comparison, type Config, type ModeName, type WorkloadSpec } from './run/schema.js';
import { releaseLeadMs } from './plan.js';
import { DEFAULT_THRESHOLDS, type Thresholds } from './thresholds.js';
import { BUILTIN_NAMES, builtinSpec, customSpec } from './workload/registry.js';
import { DEFAULTS } from './defaults.js';
import { DEFAULT_OPERATOR, K8S_NAME, type Operator } from './artifacts/k8s.js';

export interface BenchOptions {
  config: Config;
  out: string | null;
  dryRun: boolean;
  style: ProgressStyle;
  /** Run directory to continue; its own config is used. */
  resume: string | null;
  /** The thresholds file given with --config: its patterns must match planned metrics. */
  thresholdsFile: string | null;
  allowBusy: boolean;
  /** --gpus: every GPU of the host, or these indices, each benched in a run of its own; null: one GPU (--gpu). */
  gpus: 'all' | number[] | null;
}

/** Flags that shape what is measured: a resumed run keeps its own, so these cannot come with --resume. */
const MEASUREMENT_FLAGS = ['modes', 'workloads', 'clients', 'rounds', 'maxRounds', 'ciTarget', 'gradedCiTarget', 'timeBudgetS', 'cpuPin', 'windowMs', 'streams', 'set', 'gpu', 'gpus', 'out', 'mpsThreadPct', 'mpsMemLimit', 'minOverlap', 'sampleMs', 'readyTimeoutS', 'trialTimeoutS', 'exitTimeoutS', 'python', 'config', 'dryRun', 'allowBusy'] as const;

export function resolveBenchOptions(args: BenchArgs, thresholds: Thresholds = DEFAULT_THRESHOLDS): BenchOptions {
  if (args.resume !== undefined) {
    const clash = MEASUREMENT_FLAGS.find((flag) => args[flag] !== undefined) ?? (args.command.length > 0 ? '--' : undefined);
    if (clash) throw new UserError(`--resume continues a run with its own settings: drop --${clash.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  }
  const python = args.python ?? DEFAULTS.python;
  const modes = list(args.modes, '--modes', DEFAULTS.modes).map((m) => oneOf(m, MODE_NAMES, '--modes', 'mode'));
  const overrides = parseSets(args.set ?? []);
  const workloads = (names: readonly string[]) => names.map((name) => workloadSpec(name, python, overrides, args.command));
  const explicit = args.workloads !== undefined ? list(args.workloads, '--workloads', []) : args.command.length > 0 ? ['custom'] : null;
  // Without "custom" in --workloads the command after -- would be dropped without a word.
  if (args.command.length > 0 && !explicit?.includes('custom')) {
    throw new UserError(`the command after -- is the workload "custom": add custom to --workloads (--workloads ${args.workloads},custom) or drop the command`);
  }
  for (const name of Object.keys(overrides)) {
    if (!BUILTIN_NAMES.includes(name)) throw new UserError(`--set ${name}.…: unknown workload "${name}"; choose from ${BUILTIN_NAMES.join(', ')}`);
  }
  const rounds = integer(args.rounds, '--rounds', DEFAULTS.rounds, 1, 1000);
  const config: Config = {
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    modes,
    ...clientCounts(args.clients),
    roundPolicy: {
      minRounds: rounds,
      maxRounds: Math.max(rounds, integer(args.maxRounds, '--max-rounds', DEFAULTS.maxRounds, 1, 10_000)),
      ciTarget: number(args.ciTarget, '--ci-target', DEFAULTS.ciTarget, 0.0001, 1),
      gradedCiTarget: number(args.gradedCiTarget, '--graded-ci-target', DEFAULTS.gradedCiTarget, 0.0001, 1),
      timeBudgetS: number(args.timeBudgetS, '--time-budget-s', DEFAULTS.timeBudgetS, 0.001, 7 * 24 * 3600),
    },
    thresholds,
    cpuPin: oneOf(args.cpuPin ?? DEFAULTS.cpuPin, ['auto', 'off'] as const, '--cpu-pin', 'setting'),
    windowMs: number(args.windowMs, '--window-ms', DEFAULTS.windowMs, 50, 600_000),
    releaseLeadMs: DEFAULTS.releaseLeadMs,
    minOverlap: number(args.minOverlap, '--min-overlap', DEFAULTS.minOverlap, 0, 1),
    sampleIntervalMs: integer(args.sampleMs, '--sample-ms', DEFAULTS.sampleIntervalMs, 20, 60_000),
    streamCounts: args.streams === undefined ? [...DEFAULTS.streamCounts] : unique(list(args.streams, '--streams', []).map((s) => integer(s, '--streams', 0, 2, 64))),
    streamsWorkloads: workloads(explicit ?? DEFAULTS.streamsWorkloads),
    contentionWorkloads: workloads(explicit ?? DEFAULTS.contentionWorkloads),
    timeouts: {
      readyMs: number(args.readyTimeoutS, '--ready-timeout-s', DEFAULTS.readyTimeoutS, 1, 3600) * 1000,
      trialMs: number(args.trialTimeoutS, '--trial-timeout-s', DEFAULTS.trialTimeoutS, 1, 3600) * 1000,
      exitMs: number(args.exitTimeoutS, '--exit-timeout-s', DEFAULTS.exitTimeoutS, 0.1, 600) * 1000,
    },
    mps: {
      threadPct: args.mpsThreadPct === undefined ? null : integer(args.mpsThreadPct, '--mps-thread-pct', 100, 1, 100),
      memLimit: args.mpsMemLimit === undefined ? null : memoryLimit(args.mpsMemLimit),
    },
    python,
  };
  const style: ProgressStyle = args.json ? 'json' : args.quiet ? 'quiet' : 'human';
  return { config, out: args.out ?? null, dryRun: args.dryRun ?? false, style, resume: args.resume ?? null, allowBusy: args.allowBusy ?? false, thresholdsFile: args.config ?? null, gpus: benchGpus(args) };
}

/** --gpus all or 0,1,…: never with --gpu, which names the one GPU of a single run. */
function benchGpus(args: Pick<BenchArgs, 'gpu' | 'gpus' | 'dryRun'>): BenchOptions['gpus'] {
  if (args.gpus === undefined) return null;
  if (args.gpu !== undefined) throw new UserError(`--gpu ${argText(args.gpu)} and --gpus ${argText(args.gpus)}: give one (--gpu benches one GPU, --gpus several)`);
  if (args.dryRun) throw new UserError('--dry-run with --gpus: drop --gpus to see the plan, which is the same on every GPU');
  const gpus = gpuList(args.gpus);
  return gpus === 'all' ? gpus : gpus.sort((a, b) => a - b);
}

function workloadSpec(name: string, python: string, overrides: Record<string, Record<string, string>>, command: string[]): WorkloadSpec {
  if (name === 'custom') {
    if (command.length === 0) throw new UserError('workload "custom" needs your command after --, e.g. gpushare bench -- ./my-workload --size 8');
    return customSpec(command);
  }
  return builtinSpec(name, python, overrides[name] ?? {});
}

function parseSets(sets: readonly string[]): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const item of sets) {
    const match = /^([a-z][a-z-]*)\.([a-z-]+)=(.+)$/.exec(item);
    if (!match) throw new UserError(`--set ${item}: expected workload.param=value, e.g. --set gemm.size=8192`);
    const [, workload = '', param = '', value = ''] = match;
    (out[workload] ??= {})[param] = value;
  }
  return out;
}

function list(raw: string | undefined, flag: string, fallback: readonly string[]): string[] {
  if (raw === undefined) return [...fallback];
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new UserError(`${flag} "${raw}": give at least one value, comma-separated`);
  return unique(items);
}

/** --clients: one count, or a sweep of several (sorted); 64 at most, so an MPS limit can be found. */
function clientCounts(raw: string | undefined): Pick<Config, 'clients' | 'clientCounts'> {
  // Each count as typed (not trimmed): " 4" or "4\n" is refused like any other malformed number.
  const counts = unique((raw ?? String(DEFAULTS.clients)).split(',').map((c) => integer(c, '--clients', DEFAULTS.clients, 2, 64))).sort((a, b) => a - b);
  return counts.length === 1 ? { clients: counts[0] as number } : { clients: counts[0] as number, clientCounts: counts };
}

function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string, what: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UserError(`unknown ${what} "${value}" in ${flag}: choose from ${allowed.join(', ')}`);
}

/** Plain decimal only: Number() alone would also take 0x10, 1e1, " 5", "+5", ".5" or "5.". */
const DECIMAL = /^-?\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;

function number(raw: string | undefined, flag: string, fallback: number, lo: number, hi: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!DECIMAL.test(raw) || value < lo || value > hi) {
    throw new UserError(`${flag} ${argText(raw)}: needs a number from ${lo} to ${hi}`); // argText: " 5" shows its space, a newline stays on the one line
  }
  return value;
}

function integer(raw: string | undefined, flag: string, fallback: number, lo: number, hi: number): number {
  const whole = () => new UserError(`${flag} ${argText(raw ?? '')}: needs a whole number from ${lo} to ${hi}`);
  // Not decimal at all (0x10, 1e1): a whole number is what it needs; out of range: number()'s message.
  if (raw !== undefined && !DECIMAL.test(raw)) throw whole();
  const value = number(raw, flag, fallback, lo, hi);
  if (raw !== undefined && !WHOLE.test(raw)) throw whole();
  return value;
}

/** CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's size syntax: a number with a K, M or G suffix (optionally "B"). */
function memoryLimit(raw: string): string {
  const match = /^(\d+(?:\.\d+)?)([KMG])B?$/i.exec(raw);
  if (!match || Number(match[1]) <= 0) throw new UserError(`--mps-mem-limit ${argText(raw)}: needs a size such as 4G, 512M or 1024MB`);
  return `${match[1]}${(match[2] ?? '').toUpperCase()}`;
}

/** Rough wall time of a plan's minimum rounds: start-up per client group plus each trial's window and overheads. */
export function estimateSeconds(config: Config, comparisons: ReadonlyArray<Pick<Comparison, 'mode' | 'arms'>>): number {
  return comparisons.reduce((total, c) => {
    const perRound = c.arms.reduce((sum, arm) => sum + (arm.work.kind === 'fixed-duration' ? (arm.work.durationMs + releaseLeadMs(config.releaseLeadMs, arm.clients.length)) / 1000 + 0.1 : 0.3), 0);
    return total + 8 + perRound * config.roundPolicy.minRounds;
  }, 0);
}

export function resolveArtifactsOptions(args: ArtifactsArgs): ArtifactsOptions {
  return { out: args.out, run: args.run, gpu: gpuModel(args), replicas: integer(args.replicas, '--replicas', 4, 2, 48), operator: operator(args), gpus: gpuList(args.gpus) };
}

/** --gpu-model; --gpu, which names a GPU index in bench, is refused here rather than read as a model. */
function gpuModel(args: { gpuModel?: string; gpu?: string }): string | undefined {
  if (args.gpu !== undefined) throw new UserError(`--gpu ${argText(args.gpu)}: --gpu is a GPU index (bench); name a GPU model with --gpu-model, e.g. --gpu-model H100-80GB`);
  return args.gpuModel;
}

/** --gpus for the MPS scripts: all (the default: every GPU of the node) or a list of indices. */
function gpuList(text: string | undefined): number[] | 'all' {
  if (text === undefined || text === 'all') return 'all';
  return unique(list(text, '--gpus', []).map((g) => integer(g, '--gpus', 0, 0, 1023)));
}

/** The GPU Operator's namespace and ClusterPolicy name, each a Kubernetes object name. */
function operator(args: { namespace?: string; clusterPolicy?: string }): Operator {
  const name = (value: string | undefined, flag: string, fallback: string) => {
    if (value === undefined) return fallback;
    if (!K8S_NAME.test(value)) throw new UserError(`${flag} ${argText(value)}: needs a Kubernetes name (lower-case letters, digits and "-", at most 63), e.g. nvidia-gpu-operator`);
    return value;
  };
  return { namespace: name(args.namespace, '--namespace', DEFAULT_OPERATOR.namespace), clusterPolicy: name(args.clusterPolicy, '--cluster-policy', DEFAULT_OPERATOR.clusterPolicy) };
}

export function resolvePlanOptions(args: PlanArgs): PlanOptions {
  return {
    models: integer(args.models, '--models', 1, 1, 100_000),
    memGiB: number(args.memGib, '--mem-gib', 1, 0.001, 10_000),
    smPct: number(args.smPct, '--sm-pct', 10, 0.01, 100),
    latencySloMs: args.latencySloMs === undefined ? null : number(args.latencySloMs, '--latency-slo-ms', 0, 0.001, 1e7),
    run: args.run,
    gpu: gpuModel(args),
    gpuMemGiB: args.gpuMemGib === undefined ? null : number(args.gpuMemGib, '--gpu-mem-gib', 0, 0.001, 100_000),
    json: args.json ?? false,
    out: args.out,
    operator: operator(args),
    gpus: gpuList(args.gpus),
  };
}

/** What `gpushare probe` runs, where, and how it prints. */
export interface ProbeOptions {
  probes: ProbeName[];
  gpuIndex: number;
  out: string | null;
  python: string;
  allowBusy: boolean;
  json: boolean;
}

export function resolveProbeOptions(args: ProbeArgs): ProbeOptions {
  const chosen = list(args.probes, '--probes', PROBES).map((p) => oneOf(p, PROBES, '--probes', 'probe'));
  return {
    // In the documented order whatever order they were given in: cheap, independent probes first.
    probes: PROBES.filter((p) => chosen.includes(p)),
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python: args.python ?? DEFAULTS.python,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
  };
}

/** What `gpushare capacity` measures, where, and how it prints. */
export interface CapacityOptions {
  settings: CapacitySettings;
  gpuIndex: number;
  out: string | null;
  python: string;
  readyTimeoutMs: number;
  allowBusy: boolean;
  json: boolean;
}

export function resolveCapacityOptions(args: CapacityArgs): CapacityOptions {
  if (args.sloP99Ms === undefined) throw new UserError('--slo-p99-ms is required: the p99 latency target in ms, e.g. --slo-p99-ms 10');
  const python = args.python ?? DEFAULTS.python;
  const name = args.workload ?? 'infer';
  if (name === 'custom') throw new UserError('capacity runs a built-in workload (--workload infer, gemm, spin…); a custom command must speak protocol 2 and is not supported here yet');
  const counts = unique(list(args.clients, '--clients', ['1', '2', '4']).map((c) => integer(c, '--clients', 1, 1, 64))).sort((a, b) => a - b);
  return {
    settings: {
      sloP99Ms: number(args.sloP99Ms, '--slo-p99-ms', 10, 0.01, 600_000),
      modes: list(args.modes, '--modes', ['timeslice', 'mps']).map((m) => oneOf(m, ['timeslice', 'mps'] as const, '--modes', 'mode (capacity measures timeslice and mps)')),
      clientCounts: counts,
      workload: builtinSpec(name, python, parseSets(args.set ?? [])[name] ?? {}),
      load: oneOf(args.load ?? 'poisson', ['poisson', 'constant'] as const, '--load', 'arrival process'),
      windowMs: number(args.windowMs, '--window-ms', 2000, 100, 600_000),
      startQps: number(args.startQps, '--start-qps', 100, 0.1, 1e7),
      tolerance: 0.05,
      maxSteps: integer(args.maxSteps, '--max-steps', 12, 2, 100),
    },
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python,
    readyTimeoutMs: DEFAULTS.readyTimeoutS * 1000,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
  };
}
