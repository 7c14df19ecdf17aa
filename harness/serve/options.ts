/** The flags of bench --serve and capacity --serve, and their resolution into a run's settings. */
import type { ArgsOf } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { integer, integerList, list, number, oneOf } from '../core/flags.js';
import { MAX_LOAD_WORKERS } from '../load/pool-protocol.js';
import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { CEILING_STEP_S } from './ceiling.js';
import { DEFAULT_REPLICATES } from './fleet/fleet-search.js';
import type { ServeSettings } from './record.js';
import { MAX_STEP_S } from './steps.js';
import { WARMUP_MAX_S, WARMUP_S } from './warmup.js';

/** The sharing modes a server is copied under: plain processes, MPS, MPS with each copy's thread cap. */
export const SERVE_MODES = ['timeslice', 'mps', 'mps-threads'] as const;
export type ServeMode = (typeof SERVE_MODES)[number];
/** A fleet's in-process arm: one process serving every server's model (the file's in_process), beside the modes. */
export const IN_PROCESS = 'in-process';
/** What a group of a run is measured as: a sharing mode, the dedicated copy, or a fleet's in-process arm. */
export type GroupMode = ServeMode | 'dedicated' | typeof IN_PROCESS;
/** Whether a group's mode is a sharing mode (not the dedicated copy, not the in-process arm). */
export const isServeMode = (mode: string): mode is ServeMode => (SERVE_MODES as readonly string[]).includes(mode);

/** How servers start (--start): one at a time, each ready before the next (the default), or all at once. */
export const START_ORDERS = ['serial', 'parallel'] as const;

export const SERVE_FLAGS = {
  serve: {
    type: 'string',
    describe:
      "your server's command line, run once per copy; gpushare fills {port} (required), {index}, {gpu_uuid} and {mem_fraction}",
  },
  api: {
    type: 'string',
    choices: ['openai'],
    describe: 'what the server speaks: an OpenAI-compatible streaming API (the only one so far)',
    defaultDescription: 'openai',
  },
  endpoint: {
    type: 'string',
    choices: ['completions', 'chat'],
    describe: 'POST /v1/completions or /v1/chat/completions',
    defaultDescription: 'completions',
  },
  'ready-path': { type: 'string', describe: 'polled until it answers 200', defaultDescription: '/v1/models' },
  'ready-timeout-s': { type: 'number', describe: 'how long a copy may take to come up, s', defaultDescription: '300' },
  start: {
    type: 'string',
    choices: START_ORDERS,
    describe:
      'serial: each server ready before the next starts (engines that size their KV cache from free memory need it); parallel: all at once, each within --ready-timeout-s (light servers: a fleet of 40 up in seconds)',
    defaultDescription: 'serial',
  },
  modes: {
    type: 'string',
    describe: `comma-separated: ${SERVE_MODES.join(', ')}`,
    defaultDescription: SERVE_MODES.join(','),
  },
  copies: { type: 'string', describe: 'numbers of copies per GPU, comma-separated', defaultDescription: '1,2,4' },
  concurrency: {
    type: 'number',
    describe: 'bench: requests resident per shared copy (the dedicated copy carries copies × this)',
    defaultDescription: '8',
  },
  'input-tokens': {
    type: 'number',
    describe: "each prompt's length in words (about a token each)",
    defaultDescription: '128',
  },
  'output-tokens': { type: 'number', describe: 'max_tokens of each request', defaultDescription: '64' },
  'window-s': {
    type: 'number',
    describe: 'seconds of load per window (bench) or per step (capacity)',
    defaultDescription: '5',
  },
  rounds: {
    type: 'number',
    describe: 'bench: ABBA rounds per group (6 or more give a 95% CI)',
    defaultDescription: '6',
  },
  'thread-pct': {
    type: 'number',
    describe: "mps-threads: each copy's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    defaultDescription: '100 ÷ copies',
  },
  'mps-mem-cap': {
    type: 'boolean',
    describe:
      "mps, mps-threads: cap each copy's device memory (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) at its {mem_fraction} share of the GPU plus 1 GiB for its context; keep giving the engine {mem_fraction}",
  },
  'slo-ttft-p99-ms': { type: 'number', describe: 'the TTFT p99 target, ms', defaultDescription: '1000' },
  'slo-itl-max-ms': {
    type: 'number',
    describe: 'goodput: a request counts only if every gap between its tokens is within this too, ms',
  },
  'gpu-hour-usd': { type: 'number', describe: 'price of a GPU-hour: cost per 1M output tokens' },
  'ceiling-step-s': {
    type: 'number',
    describe: "seconds of each rate of the generator's own ceiling (a null server at doubling rates)",
    defaultDescription: String(CEILING_STEP_S),
  },
  'max-step-s': {
    type: 'number',
    describe: 'capacity: the longest a step may run to gather the 473 requests its p99 claim needs',
    defaultDescription: String(MAX_STEP_S),
  },
  'load-workers': {
    type: 'number',
    describe:
      "the load generator's worker processes: each sends a share of every load, pinned with the harness to cores the servers do not get",
    defaultDescription: 'half the cores (at most 16), at least 1',
  },
  'request-timeout-s': { type: 'number', describe: 'one request, s', defaultDescription: '60' },
  'warmup-s': {
    type: 'number',
    describe:
      'warm-up before each arm is measured: at least this long, then until no trend is found in the last windows (0: one window)',
    defaultDescription: String(WARMUP_S),
  },
  'warmup-max-s': {
    type: 'number',
    describe: 'the longest a warm-up runs before measuring anyway, with a warning',
    defaultDescription: String(WARMUP_MAX_S),
  },
  fleet: {
    type: 'string',
    describe:
      'a fleet file (YAML or JSON, examples/fleet/): its servers, each with its own command, under each mode, with its traffic (give --serve without a command); capacity: the largest fleet of its kinds at the SLO',
  },
  'max-servers': {
    type: 'number',
    describe: `capacity --fleet: the largest fleet searched (besides the GPU memory the servers share and, under MPS, its ${MPS_CLIENT_LIMIT} clients)`,
  },
  replicates: {
    type: 'number',
    describe:
      'capacity --fleet: measurements more of the highest passing and the lowest failing fleet size, once bracketed',
    defaultDescription: String(DEFAULT_REPLICATES),
  },
  gpu: { type: 'number', describe: 'index of the GPU', defaultDescription: '0' },
  out: { type: 'string', describe: 'run directory', defaultDescription: 'runs/results/<date>-<gpu>-serve-<id>' },
  resume: { type: 'string', describe: 'continue the server run in this directory with its own settings' },
  python: { type: 'string', describe: 'Python interpreter for the fingerprint', defaultDescription: DEFAULT_PYTHON },
  'allow-busy': { type: 'boolean', describe: 'measure even if another process uses the GPU' },
  json: { type: 'boolean', describe: 'print the analysis as JSON' },
  'dry-run': {
    type: 'boolean',
    describe:
      "print the groups, windows and the load time they take (servers' start-up not included), and measure nothing",
  },
} as const;

/** The flags as typed (inferred from SERVE_FLAGS): numbers stay strings so that a refusal quotes them as given. */
export type ServeArgs = ArgsOf<typeof SERVE_FLAGS>;

export interface ServeOptions {
  settings: Omit<ServeSettings, 'serverCpus' | 'generatorCpu' | 'generatorCpus'>;
  gpuIndex: number;
  out: string | null;
  python: string;
  allowBusy: boolean;
  json: boolean;
  dryRun: boolean;
}

/** --input-tokens: one length, or a range `a-b` (a ≤ b) drawn uniformly per request. */
function inputLengths(raw: string | undefined): { inputTokens: number; inputTokensMax: number | null } {
  const range = raw === undefined ? null : /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(raw);
  if (range === null) return { inputTokens: integer(raw, '--input-tokens', 128, 1, 1_000_000), inputTokensMax: null };
  const lo = integer(range[1], '--input-tokens', 0, 1, 1_000_000);
  const hi = integer(range[2], '--input-tokens', 0, 1, 1_000_000);
  if (hi < lo) throw new UserError(`--input-tokens ${argText(raw as string)}: give the range low-high, e.g. 64-256`);
  return { inputTokens: lo, inputTokensMax: hi };
}

export function resolveServeOptions(args: ServeArgs, measure: ServeSettings['measure']): ServeOptions {
  const fleet = fleetFile(args);
  const serve = fleet === undefined ? serveCommand(args.serve) : '';
  const readyPath = args.readyPath ?? '/v1/models';
  if (!readyPath.startsWith('/'))
    throw new UserError(`--ready-path ${argText(readyPath)}: give a path starting with /, e.g. /health`);
  if (!staysOnHost(readyPath))
    throw new UserError(
      `--ready-path ${argText(readyPath)}: it names another host (a path starting with // or /\\); give a path on the copy's own server, e.g. /health`,
    );
  return {
    settings: {
      measure,
      serve,
      api: oneOf(args.endpoint ?? 'completions', ['completions', 'chat'] as const, '--endpoint', 'endpoint'),
      readyPath,
      readyTimeoutMs: number(args.readyTimeoutS, '--ready-timeout-s', 300, 1, 3600) * 1000,
      ...startOrder(args.start),
      modes: list(args.modes, '--modes', SERVE_MODES).map((m) => oneOf(m, SERVE_MODES, '--modes', 'mode')),
      copies: integerList(args.copies, '--copies', [1, 2, 4], 1, MPS_CLIENT_LIMIT),
      concurrency: integer(args.concurrency, '--concurrency', 8, 1, 4096),
      ...inputLengths(args.inputTokens),
      outputTokens: integer(args.outputTokens, '--output-tokens', 64, 1, 1_000_000),
      windowMs: number(args.windowS, '--window-s', 5, 0.05, 3600) * 1000,
      rounds: integer(args.rounds, '--rounds', 6, 1, 1000),
      threadPct: args.threadPct === undefined ? null : integer(args.threadPct, '--thread-pct', 100, 1, 100),
      mpsMemCap: args.mpsMemCap ?? false,
      sloTtftP99Ms: number(args.sloTtftP99Ms, '--slo-ttft-p99-ms', 1000, 0.001, 3_600_000),
      sloItlMaxMs:
        args.sloItlMaxMs === undefined ? null : number(args.sloItlMaxMs, '--slo-itl-max-ms', 0, 0.001, 3_600_000),
      gpuHourUsd:
        args.gpuHourUsd === undefined ? null : number(args.gpuHourUsd, '--gpu-hour-usd', 0, 0.0001, 1_000_000),
      requestTimeoutMs: number(args.requestTimeoutS, '--request-timeout-s', 60, 0.1, 3600) * 1000,
      ceilingStepMs: number(args.ceilingStepS, '--ceiling-step-s', CEILING_STEP_S, 0.05, 600) * 1000,
      maxStepMs: number(args.maxStepS, '--max-step-s', MAX_STEP_S, 0.05, 3600) * 1000,
      ...loadWorkers(args.loadWorkers),
      ...warmupLimits(args),
      ...(fleet === undefined ? {} : { fleet }),
      ...fleetSearch(args, measure, fleet),
    },
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python: args.python ?? DEFAULT_PYTHON,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
    dryRun: args.dryRun ?? false,
  };
}

/** --serve's command line, checked. */
function serveCommand(raw: string | undefined): string {
  const serve = raw?.trim() ?? '';
  if (serve === '')
    throw new UserError(
      "--serve needs your server's command line, e.g. --serve 'python3 examples/reference_server.py --port {port}'",
    );
  if (!serve.includes('{port}'))
    throw new UserError(
      `--serve ${argText(serve)}: put {port} where the server takes its port, e.g. --port {port}: gpushare gives each copy its own`,
    );
  return serve;
}

/** --fleet's file, or undefined: the fleet names each server's command and count, so --serve's and --copies are refused beside it. */
function fleetFile(args: ServeArgs): string | undefined {
  const fleet = args.fleet?.trim();
  if (fleet === undefined) return undefined;
  if (fleet === '') throw new UserError('--fleet needs a fleet file, e.g. --fleet examples/fleet/three-sizes.yaml');
  if (args.copies !== undefined)
    throw new UserError(
      `--copies ${argText(args.copies)} with --fleet ${argText(fleet)}: the fleet file sets each kind's count; drop --copies`,
    );
  if ((args.serve?.trim() ?? '') !== '')
    throw new UserError(
      `--serve ${argText(args.serve ?? '')} with --fleet ${argText(fleet)}: the fleet file gives each server's command; give --serve without one`,
    );
  return fleet;
}

/** --start as given, or nothing: serial (runs before the flag have none). */
function startOrder(raw: string | undefined): { start?: (typeof START_ORDERS)[number] } {
  return raw === undefined ? {} : { start: oneOf(raw, START_ORDERS, '--start', 'start order') };
}

/** --max-servers and --replicates: capacity --serve --fleet's search, refused elsewhere. */
function fleetSearch(
  args: ServeArgs,
  measure: ServeSettings['measure'],
  fleet: string | undefined,
): { maxServers?: number; replicates?: number } {
  const given = args.maxServers !== undefined ? '--max-servers' : args.replicates !== undefined ? '--replicates' : null;
  if (measure !== 'capacity' || fleet === undefined) {
    if (given !== null)
      throw new UserError(`${given} sizes the search of capacity --serve --fleet <file>: drop it, or run that`);
    return {};
  }
  return {
    ...(args.maxServers === undefined ? {} : { maxServers: integer(args.maxServers, '--max-servers', 0, 1, 1000) }),
    replicates: integer(args.replicates, '--replicates', DEFAULT_REPLICATES, 0, 10),
  };
}

/** --load-workers as given, or nothing: the run's default is set from the host's cores (serve/command.ts). */
function loadWorkers(raw: string | undefined): { loadWorkers?: number } {
  return raw === undefined ? {} : { loadWorkers: integer(raw, '--load-workers', 1, 1, MAX_LOAD_WORKERS) };
}

/** --warmup-s and --warmup-max-s, ms: the maximum at least the minimum. */
function warmupLimits(args: ServeArgs): { warmupMs: number; warmupMaxMs: number } {
  const min = number(args.warmupS, '--warmup-s', WARMUP_S, 0, 3600);
  const max = number(args.warmupMaxS, '--warmup-max-s', Math.max(WARMUP_MAX_S, min), 0, 3600);
  if (max < min)
    throw new UserError(
      `--warmup-max-s ${argText(args.warmupMaxS ?? '')}: it is below --warmup-s ${min}; give a maximum at least the minimum`,
    );
  return { warmupMs: min * 1000, warmupMaxMs: max * 1000 };
}

/** Whether `path`, resolved against a copy's address, stays on it (`//host/…` and `/\\host/…` would leave). */
export function staysOnHost(path: string): boolean {
  const base = 'http://127.0.0.1:1';
  try {
    return new URL(path, base).origin === base;
  } catch {
    return false;
  }
}

/** The flags, as typed, that make `s`: a record's settings resolved again meet every limit the flags have. */
export function settingsArgs(s: ServeSettings): ServeArgs {
  const text = (value: number | null) => (value === null ? undefined : String(value));
  const seconds = (ms: number) => String(ms / 1000);
  return {
    serve: s.serve,
    endpoint: s.api,
    readyPath: s.readyPath,
    readyTimeoutS: seconds(s.readyTimeoutMs),
    start: s.start,
    modes: s.modes.join(','),
    copies: s.copies.join(','),
    concurrency: String(s.concurrency),
    inputTokens: s.inputTokensMax === null ? String(s.inputTokens) : `${s.inputTokens}-${s.inputTokensMax}`,
    outputTokens: String(s.outputTokens),
    windowS: seconds(s.windowMs),
    rounds: String(s.rounds),
    threadPct: text(s.threadPct),
    mpsMemCap: s.mpsMemCap,
    sloTtftP99Ms: String(s.sloTtftP99Ms),
    sloItlMaxMs: text(s.sloItlMaxMs),
    gpuHourUsd: text(s.gpuHourUsd),
    requestTimeoutS: seconds(s.requestTimeoutMs),
    ceilingStepS: seconds(s.ceilingStepMs),
    maxStepS: seconds(s.maxStepMs),
    loadWorkers: s.loadWorkers === undefined ? undefined : String(s.loadWorkers),
    warmupS: s.warmupMs === undefined ? undefined : seconds(s.warmupMs),
    warmupMaxS: s.warmupMaxMs === undefined ? undefined : seconds(s.warmupMaxMs),
    ...(s.fleet === undefined ? {} : { fleet: s.fleet, copies: undefined, serve: undefined }),
    maxServers: s.maxServers === undefined ? undefined : String(s.maxServers),
    replicates: s.replicates === undefined ? undefined : String(s.replicates),
  };
}
