/** Gives the parsed flags meaning: validates each one and fills in defaults, naming any bad value. */
import type { ArgsOf } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { gpuList, integer, integerList, list, number, oneOf, unique } from '../core/flags.js';
import { BUILTIN_NAMES, parseSets, workloadSpec } from '../workload/registry.js';
import { releaseLeadMs } from '../workload/release.js';
import { DEFAULTS } from './defaults.js';
import { DEFAULT_THRESHOLDS, type Thresholds } from './gate/thresholds.js';
import { growable, plainKey, prestartable, processCount, switchable } from './pool/reuse.js';
import type { ProgressStyle } from './progress.js';
import { type Comparison, type Config, MODE_NAMES, measuresPlainAlone } from './record/schema.js';

/** bench's flags: the one source of their names, types, help and (through `ArgsOf`) the types `resolve` reads. */
export const BENCH_FLAGS = {
  modes: {
    type: 'string',
    describe: 'sharing modes to measure, comma-separated: streams, green, timeslice, mps, mig',
    defaultDescription: 'streams, timeslice, mps, mig',
  },
  workloads: {
    type: 'string',
    describe: 'workloads for every mode: spin, gemm, infer, pipeline, custom',
    defaultDescription: 'streams: spin,pipeline; others: spin,gemm,infer',
  },
  clients: {
    type: 'string',
    describe:
      'client processes that contend in timeslice, mps and mig, and tenants of one process in streams and green; a list (2,4,8) is a sweep, each count its own comparison',
    defaultDescription: String(DEFAULTS.clients),
  },
  rounds: {
    type: 'number',
    describe: 'interleaved rounds every comparison runs at least (ABBA order)',
    defaultDescription: String(DEFAULTS.rounds),
  },
  'max-rounds': {
    type: 'number',
    describe: 'add rounds up to this many until each headline CI is narrow enough (= --rounds: none added)',
    defaultDescription: String(DEFAULTS.maxRounds),
  },
  'ci-target': {
    type: 'number',
    describe: 'stop adding rounds once every headline ratio has this CI half-width (fraction of the ratio)',
    defaultDescription: String(DEFAULTS.ciTarget),
  },
  'graded-ci-target': {
    type: 'number',
    describe: 'the CI half-width for ratios a threshold grades',
    defaultDescription: String(DEFAULTS.gradedCiTarget),
  },
  'time-budget-s': {
    type: 'number',
    describe: 'time for rounds beyond --rounds, shared among the comparisons, s',
    defaultDescription: String(DEFAULTS.timeBudgetS),
  },
  'cpu-pin': {
    type: 'string',
    describe: 'auto: each client process on a core of its own; off: leave placement to the OS',
    defaultDescription: DEFAULTS.cpuPin,
  },
  'window-ms': {
    type: 'number',
    describe: 'fixed-duration window of each multi-process trial, ms',
    defaultDescription: String(DEFAULTS.windowMs),
  },
  streams: {
    type: 'string',
    describe: 'stream counts compared with 1 stream, e.g. 2 or 2,4,8 for a sweep',
    defaultDescription: DEFAULTS.streamCounts.join(','),
  },
  set: { type: 'string', array: true, describe: 'a workload parameter, e.g. --set gemm.size=8192 (repeatable)' },
  gpu: { type: 'number', describe: 'index of the GPU to measure', defaultDescription: '0' },
  gpus: {
    type: 'string',
    describe:
      'bench several GPUs, each in a run of its own under one parent directory, after a cross-GPU check: all, or indices such as 0,1',
  },
  out: {
    type: 'string',
    describe: 'run directory (with --gpus: the parent directory)',
    defaultDescription: 'runs/results/<date>-<gpu>-<id>',
  },
  'sm-pct': {
    type: 'number',
    describe: "green: each tenant's share of the GPU's SMs, % (its green context's size)",
    defaultDescription: 'an even split',
  },
  'mps-thread-pct': { type: 'number', describe: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for each MPS client (1-100)' },
  'mps-mem-limit': {
    type: 'string',
    describe: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for each MPS client, e.g. 4G or 512M',
  },
  'min-overlap': {
    type: 'number',
    describe: 'fraction of each window the contended windows must share',
    defaultDescription: String(DEFAULTS.minOverlap),
  },
  'sample-ms': {
    type: 'number',
    describe: 'nvidia-smi sampling interval, ms',
    defaultDescription: String(DEFAULTS.sampleIntervalMs),
  },
  'ready-timeout-s': {
    type: 'number',
    describe: 'how long a workload may take to become ready, s',
    defaultDescription: String(DEFAULTS.readyTimeoutS),
  },
  'trial-timeout-s': {
    type: 'number',
    describe: 'slack beyond its window for a trial to report, s',
    defaultDescription: String(DEFAULTS.trialTimeoutS),
  },
  'exit-timeout-s': {
    type: 'number',
    describe: 'how long a workload may take to exit, s',
    defaultDescription: String(DEFAULTS.exitTimeoutS),
  },
  python: {
    type: 'string',
    describe: 'Python interpreter with PyTorch for the built-in workloads',
    defaultDescription: DEFAULTS.python,
  },
  config: { type: 'string', describe: 'thresholds file (YAML or JSON): the ratios it grades get adaptive rounds' },
  resume: {
    type: 'string',
    describe: 'continue an interrupted or killed run in this directory, with its own settings',
  },
  'fresh-clients': {
    type: 'boolean',
    describe:
      "start each comparison's clients afresh when it begins (the old way): not while the previous comparison measures, and no switching of the previous comparison's processes to the next workload",
  },
  'allow-busy': {
    type: 'boolean',
    describe: 'measure even if another process uses the GPU (the run is marked contaminated)',
  },
  'dry-run': {
    type: 'boolean',
    describe:
      'print the plan and its estimated time, and make every check the real run makes before measuring; run nothing',
  },
  quiet: { type: 'boolean', describe: 'no progress lines' },
  json: {
    type: 'boolean',
    describe: 'progress and summary as JSON lines on stdout (with --dry-run: the plan as JSON)',
  },
} as const;

/** bench's arguments as typed: numbers stay strings so errors can quote them; `rest` is the command after `--`. */
export type BenchArgs = ArgsOf<typeof BENCH_FLAGS> & { rest: string[] };

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
const MEASUREMENT_FLAGS = [
  'modes',
  'workloads',
  'clients',
  'rounds',
  'maxRounds',
  'ciTarget',
  'gradedCiTarget',
  'timeBudgetS',
  'cpuPin',
  'windowMs',
  'streams',
  'set',
  'gpu',
  'gpus',
  'out',
  'smPct',
  'mpsThreadPct',
  'mpsMemLimit',
  'minOverlap',
  'sampleMs',
  'readyTimeoutS',
  'trialTimeoutS',
  'exitTimeoutS',
  'python',
  'config',
  'dryRun',
  'allowBusy',
  'freshClients',
] as const;

export function resolveBenchOptions(args: BenchArgs, thresholds: Thresholds = DEFAULT_THRESHOLDS): BenchOptions {
  refuseResumeClash(args);
  const python = args.python ?? DEFAULTS.python;
  const modes = list(args.modes, '--modes', DEFAULTS.modes).map((m) => oneOf(m, MODE_NAMES, '--modes', 'mode'));
  const overrides = parseSets(args.set ?? []);
  const workloads = (names: readonly string[]) =>
    names.map((name) => workloadSpec(name, python, overrides, args.rest, 'gpushare bench'));
  const explicit =
    args.workloads !== undefined ? list(args.workloads, '--workloads', []) : args.rest.length > 0 ? ['custom'] : null;
  refuseUnused(args, modes, explicit, overrides);
  const rounds = integer(args.rounds, '--rounds', DEFAULTS.rounds, 1, 1000);
  const config: Config = {
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    modes,
    ...clientCounts(args.clients),
    ...(args.clients !== undefined ? { tenancy: true } : {}),
    ...(modes.includes('green')
      ? { greenSmPct: args.smPct === undefined ? null : number(args.smPct, '--sm-pct', 0, 1, 100) }
      : {}),
    roundPolicy: roundPolicy(args, rounds),
    thresholds,
    cpuPin: oneOf(args.cpuPin ?? DEFAULTS.cpuPin, ['auto', 'off'] as const, '--cpu-pin', 'setting'),
    ...(args.freshClients ? { freshClients: true } : {}),
    windowMs: number(args.windowMs, '--window-ms', DEFAULTS.windowMs, 50, 600_000),
    releaseLeadMs: DEFAULTS.releaseLeadMs,
    minOverlap: number(args.minOverlap, '--min-overlap', DEFAULTS.minOverlap, 0, 1),
    sampleIntervalMs: integer(args.sampleMs, '--sample-ms', DEFAULTS.sampleIntervalMs, 20, 60_000),
    streamCounts:
      args.streams === undefined
        ? [...DEFAULTS.streamCounts]
        : unique(list(args.streams, '--streams', []).map((s) => integer(s, '--streams', 0, 2, 64))),
    streamsWorkloads: workloads(explicit ?? DEFAULTS.streamsWorkloads),
    contentionWorkloads: workloads(explicit ?? DEFAULTS.contentionWorkloads),
    timeouts: timeouts(args),
    mps: {
      threadPct: args.mpsThreadPct === undefined ? null : integer(args.mpsThreadPct, '--mps-thread-pct', 100, 1, 100),
      memLimit: args.mpsMemLimit === undefined ? null : memoryLimit(args.mpsMemLimit),
    },
    python,
  };
  const style: ProgressStyle = args.json ? 'json' : args.quiet ? 'quiet' : 'human';
  return {
    config,
    out: args.out ?? null,
    dryRun: args.dryRun ?? false,
    style,
    resume: args.resume ?? null,
    allowBusy: args.allowBusy ?? false,
    thresholdsFile: args.config ?? null,
    gpus: benchGpus(args),
  };
}

/** --resume continues a run with its own settings: any flag that would change them is refused. */
function refuseResumeClash(args: BenchArgs): void {
  if (args.resume === undefined) return;
  const clash = MEASUREMENT_FLAGS.find((flag) => args[flag] !== undefined) ?? (args.rest.length > 0 ? '--' : undefined);
  if (clash)
    throw new UserError(
      `--resume continues a run with its own settings: drop --${clash.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
    );
}

/** Inputs the run would drop without a word: a command after -- without "custom", --set of an unknown workload, --sm-pct without green. */
function refuseUnused(
  args: BenchArgs,
  modes: readonly string[],
  explicit: readonly string[] | null,
  overrides: Record<string, unknown>,
): void {
  if (args.rest.length > 0 && !explicit?.includes('custom')) {
    throw new UserError(
      `the command after -- is the workload "custom": add custom to --workloads (--workloads ${args.workloads},custom) or drop the command`,
    );
  }
  for (const name of Object.keys(overrides)) {
    if (!BUILTIN_NAMES.includes(name))
      throw new UserError(`--set ${name}.…: unknown workload "${name}"; choose from ${BUILTIN_NAMES.join(', ')}`);
  }
  if (args.smPct !== undefined && !modes.includes('green'))
    throw new UserError(
      `--sm-pct ${argText(args.smPct)} sets each green context's share: add green to --modes, or drop it`,
    );
}

function roundPolicy(args: BenchArgs, rounds: number): Config['roundPolicy'] {
  return {
    minRounds: rounds,
    maxRounds: Math.max(rounds, integer(args.maxRounds, '--max-rounds', DEFAULTS.maxRounds, 1, 10_000)),
    ciTarget: number(args.ciTarget, '--ci-target', DEFAULTS.ciTarget, 0.0001, 1),
    gradedCiTarget: number(args.gradedCiTarget, '--graded-ci-target', DEFAULTS.gradedCiTarget, 0.0001, 1),
    timeBudgetS: number(args.timeBudgetS, '--time-budget-s', DEFAULTS.timeBudgetS, 0.001, 7 * 24 * 3600),
  };
}

function timeouts(args: BenchArgs): Config['timeouts'] {
  return {
    readyMs: number(args.readyTimeoutS, '--ready-timeout-s', DEFAULTS.readyTimeoutS, 1, 3600) * 1000,
    trialMs: number(args.trialTimeoutS, '--trial-timeout-s', DEFAULTS.trialTimeoutS, 1, 3600) * 1000,
    exitMs: number(args.exitTimeoutS, '--exit-timeout-s', DEFAULTS.exitTimeoutS, 0.1, 600) * 1000,
  };
}

/** --gpus all or 0,1,…: never with --gpu, which names the one GPU of a single run. */
function benchGpus(args: Pick<BenchArgs, 'gpu' | 'gpus' | 'dryRun'>): BenchOptions['gpus'] {
  if (args.gpus === undefined) return null;
  if (args.gpu !== undefined)
    throw new UserError(
      `--gpu ${argText(args.gpu)} and --gpus ${argText(args.gpus)}: give one (--gpu benches one GPU, --gpus several)`,
    );
  if (args.dryRun)
    throw new UserError('--dry-run with --gpus: drop --gpus to see the plan, which is the same on every GPU');
  const gpus = gpuList(args.gpus);
  return gpus === 'all' ? gpus : gpus.sort((a, b) => a - b);
}

/** --clients: one count, or a sweep of several (sorted); 64 at most, so an MPS limit can be found. */
function clientCounts(raw: string | undefined): Pick<Config, 'clients' | 'clientCounts'> {
  const counts = integerList(raw, '--clients', [DEFAULTS.clients], 2, 64);
  return counts.length === 1
    ? { clients: counts[0] as number }
    : { clients: counts[0] as number, clientCounts: counts };
}

/** CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's size syntax: a number with a K, M or G suffix (optionally "B"). */
function memoryLimit(raw: string): string {
  const match = /^(\d+(?:\.\d+)?)([KMG])B?$/i.exec(raw);
  if (!match || Number(match[1]) <= 0)
    throw new UserError(`--mps-mem-limit ${argText(raw)}: needs a size such as 4G, 512M or 1024MB`);
  return `${match[1]}${(match[2] ?? '').toUpperCase()}`;
}

/**
 * The assumptions of --dry-run's estimate, s (an H100, 2026-11-23): a comparison's clients started cold
 * (import torch 4.3 s, CUDA, build, warm-up: 5-12 s measured), prestarted (CUDA, build, warm-up
 * only) or switched from the previous comparison's processes (build and warm-up only); and the time outside comparisons (the fingerprint's Python probe, MPS daemons, the report).
 */
export const ESTIMATE_ASSUMPTIONS_S = { coldStart: 8, prestartedStart: 3, switchedStart: 1, outside: 8 } as const;

/** Rough wall time of a plan's minimum rounds, and the part of it inside windows, s: start-up per client group plus each trial's window and overheads. */
export function estimateSeconds(
  config: Config,
  comparisons: ReadonlyArray<Pick<Comparison, 'mode' | 'arms' | 'workload' | 'tenants' | 'clientEnv'>>,
  cpus: number | null,
): { wallS: number; windowsS: number } {
  const a = ESTIMATE_ASSUMPTIONS_S;
  let wallS = a.outside;
  let windowsS = 0;
  // Each workload's plain process starts once, for the first comparison that measures it alone.
  const plains = new Set<string>();
  comparisons.forEach((c, i) => {
    if (measuresPlainAlone(c) && !plains.has(plainKey(c))) {
      plains.add(plainKey(c));
      wallS += a.coldStart;
    }
    const prev = comparisons[i - 1];
    wallS +=
      prev === undefined
        ? a.coldStart
        : switchable(config, prev, c)
          ? a.switchedStart
          : prestartable(
                config,
                prev,
                c,
                cpus,
                c.workload.builtin,
                processCount(c) - (growable(config, prev, c) ? processCount(prev) : 0),
              )
            ? a.prestartedStart
            : a.coldStart;
    for (const arm of c.arms) {
      const rounds = config.roundPolicy.minRounds;
      if (arm.work.kind === 'fixed-duration') {
        windowsS += (arm.work.durationMs / 1000) * rounds;
        wallS +=
          ((arm.work.durationMs + releaseLeadMs(config.releaseLeadMs, arm.clients.length)) / 1000 + 0.1) * rounds;
      } else wallS += 0.3 * rounds;
    }
  });
  return { wallS, windowsS };
}
