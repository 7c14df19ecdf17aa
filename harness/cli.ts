/** Command-line parsing only: yargs turns argv into a typed command; options.ts gives it meaning. */
import yargs, { type Argv } from 'yargs';
import { argText } from './argv-text.js';
import { UserError } from './errors.js';
import { DEFAULTS } from './defaults.js';
import { PROBES } from './run/probe-record.js';
import { VERSION } from './version.js';

/** Raw bench flags as typed on the command line; numbers stay strings so errors can quote them. */
export interface BenchArgs {
  modes?: string;
  workloads?: string;
  clients?: string;
  rounds?: string;
  maxRounds?: string;
  ciTarget?: string;
  gradedCiTarget?: string;
  timeBudgetS?: string;
  cpuPin?: string;
  windowMs?: string;
  streams?: string;
  set?: string[];
  gpu?: string;
  gpus?: string;
  out?: string;
  mpsThreadPct?: string;
  mpsMemLimit?: string;
  minOverlap?: string;
  sampleMs?: string;
  readyTimeoutS?: string;
  trialTimeoutS?: string;
  exitTimeoutS?: string;
  python?: string;
  config?: string;
  resume?: string;
  allowBusy?: boolean;
  dryRun?: boolean;
  quiet?: boolean;
  json?: boolean;
  fakeGpu?: boolean;
  /** The user's own workload command, after `--`. */
  command: string[];
}

export interface ShowArgs {
  run: string;
  all?: boolean;
  json?: boolean;
  config?: string;
}

export interface ProbeArgs {
  probes?: string;
  gpu?: string;
  out?: string;
  python?: string;
  allowBusy?: boolean;
  json?: boolean;
  fakeGpu?: boolean;
}

export interface CapacityArgs {
  sloP99Ms?: string;
  modes?: string;
  clients?: string;
  workload?: string;
  set?: string[];
  load?: string;
  windowMs?: string;
  startQps?: string;
  maxSteps?: string;
  gpu?: string;
  out?: string;
  python?: string;
  allowBusy?: boolean;
  json?: boolean;
  fakeGpu?: boolean;
}

export interface DoctorArgs {
  json?: boolean;
  python?: string;
  fakeGpu?: boolean;
}

export interface GateArgs {
  run: string;
  baseline?: string;
  config?: string;
  junit?: string;
  json?: boolean;
  allowMismatch?: boolean;
}

export interface ReportArgs {
  run: string;
  other?: string;
  format: 'md' | 'csv' | 'json';
  out?: string;
  config?: string;
}

export interface ArtifactsArgs {
  out: string;
  run?: string;
  gpuModel?: string;
  /** Refused with a pointer to --gpu-model: --gpu is bench's GPU index. */
  gpu?: string;
  replicas?: string;
  namespace?: string;
  clusterPolicy?: string;
  gpus?: string;
}

export interface PlanArgs {
  models: string;
  memGib: string;
  smPct: string;
  gpuMemGib?: string;
  json?: boolean;
  latencySloMs?: string;
  run?: string;
  gpuModel?: string;
  gpu?: string;
  out?: string;
  namespace?: string;
  clusterPolicy?: string;
  gpus?: string;
}

/** `gpushare fleet job`: an Indexed Job that benches every GPU node (or GPU) of a pool. */
export interface FleetJobArgs {
  nodes: string;
  image: string;
  modes?: string;
  out?: string;
  /** Numbers stay strings, as typed, so errors can quote them. */
  count: string;
  per?: string;
  gpusPerNode?: string;
  results?: string;
  pvc?: string;
  name?: string;
  namespace?: string;
  backoffLimit?: string;
  activeDeadlineS?: string;
  runtimeClass?: string;
  allowSharedPool?: boolean;
}

/** `gpushare fleet report`: many runs merged into one report. */
export interface FleetReportArgs {
  dir: string;
  out?: string;
  junit?: string;
  json?: boolean;
  /** The report's name: <out>/fleet-<name>.md; the directory's name without it. */
  name?: string;
}

export type CliCommand =
  | { name: 'bench'; args: BenchArgs }
  | { name: 'doctor'; args: DoctorArgs }
  | { name: 'gate'; args: GateArgs }
  | { name: 'report'; args: ReportArgs }
  | { name: 'show'; args: ShowArgs }
  | { name: 'probe'; args: ProbeArgs }
  | { name: 'capacity'; args: CapacityArgs }
  | { name: 'artifacts'; args: ArtifactsArgs }
  | { name: 'plan'; args: PlanArgs }
  | { name: 'fleet job'; args: FleetJobArgs }
  | { name: 'fleet report'; args: FleetReportArgs };

function benchFlags(y: Argv) {
  return y
    .usage('$0 bench [options] [-- <your workload command>]')
    .option('modes', { type: 'string', describe: 'sharing modes to measure, comma-separated: streams, timeslice, mps, mig', defaultDescription: 'all four' })
    .option('workloads', { type: 'string', describe: 'workloads for every mode: spin, gemm, infer, pipeline, custom', defaultDescription: 'streams: spin,pipeline; others: spin,gemm,infer' })
    .option('clients', { type: 'string', describe: 'client processes that contend in timeslice, mps and mig; a list (2,4,8) is a sweep, each count its own comparison', defaultDescription: String(DEFAULTS.clients) })
    .option('rounds', { type: 'string', describe: 'interleaved rounds every comparison runs at least (ABBA order)', defaultDescription: String(DEFAULTS.rounds) })
    .option('max-rounds', { type: 'string', describe: 'add rounds up to this many until each headline CI is narrow enough (= --rounds: none added)', defaultDescription: String(DEFAULTS.maxRounds) })
    .option('ci-target', { type: 'string', describe: 'stop adding rounds once every headline ratio has this CI half-width (fraction of the ratio)', defaultDescription: String(DEFAULTS.ciTarget) })
    .option('graded-ci-target', { type: 'string', describe: 'the CI half-width for ratios a threshold grades', defaultDescription: String(DEFAULTS.gradedCiTarget) })
    .option('time-budget-s', { type: 'string', describe: 'time for rounds beyond --rounds, shared among the comparisons, s', defaultDescription: String(DEFAULTS.timeBudgetS) })
    .option('cpu-pin', { type: 'string', describe: 'auto: each client process on a core of its own; off: leave placement to the OS', defaultDescription: DEFAULTS.cpuPin })
    .option('window-ms', { type: 'string', describe: 'fixed-duration window of each multi-process trial, ms', defaultDescription: String(DEFAULTS.windowMs) })
    .option('streams', { type: 'string', describe: 'stream counts compared with 1 stream, e.g. 2 or 2,4,8 for a sweep', defaultDescription: DEFAULTS.streamCounts.join(',') })
    .option('set', { type: 'string', array: true, describe: 'a workload parameter, e.g. --set gemm.size=8192 (repeatable)' })
    .option('gpu', { type: 'string', describe: 'index of the GPU to measure', defaultDescription: '0' })
    .option('gpus', { type: 'string', describe: 'bench several GPUs, each in a run of its own under one parent directory, after a cross-GPU check: all, or indices such as 0,1' })
    .option('out', { type: 'string', describe: 'run directory (with --gpus: the parent directory)', defaultDescription: 'results/<date>-<gpu>-<id>' })
    .option('mps-thread-pct', { type: 'string', describe: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for each MPS client (1-100)' })
    .option('mps-mem-limit', { type: 'string', describe: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for each MPS client, e.g. 4G or 512M' })
    .option('min-overlap', { type: 'string', describe: 'fraction of each window the contended windows must share', defaultDescription: String(DEFAULTS.minOverlap) })
    .option('sample-ms', { type: 'string', describe: 'nvidia-smi sampling interval, ms', defaultDescription: String(DEFAULTS.sampleIntervalMs) })
    .option('ready-timeout-s', { type: 'string', describe: 'how long a workload may take to become ready, s', defaultDescription: String(DEFAULTS.readyTimeoutS) })
    .option('trial-timeout-s', { type: 'string', describe: 'slack beyond its window for a trial to report, s', defaultDescription: String(DEFAULTS.trialTimeoutS) })
    .option('exit-timeout-s', { type: 'string', describe: 'how long a workload may take to exit, s', defaultDescription: String(DEFAULTS.exitTimeoutS) })
    .option('python', { type: 'string', describe: 'Python interpreter with PyTorch for the built-in workloads', defaultDescription: DEFAULTS.python })
    .option('config', { type: 'string', describe: 'thresholds file (YAML or JSON): the ratios it grades get adaptive rounds' })
    .option('resume', { type: 'string', describe: 'continue an interrupted or killed run in this directory, with its own settings' })
    .option('allow-busy', { type: 'boolean', describe: 'measure even if another process uses the GPU (the run is marked contaminated)' })
    .option('dry-run', { type: 'boolean', describe: 'print the plan and its estimated time; run nothing' })
    .option('quiet', { type: 'boolean', describe: 'no progress lines' })
    .option('json', { type: 'boolean', describe: 'progress and summary as JSON lines on stdout' })
    .option('fake-gpu', { type: 'boolean', hidden: true, describe: 'run against the fake nvidia-smi, MPS daemon and workloads of test/fakes' });
}

/** The flags probe and capacity share: where they run, where they write, and how they print. */
function runFlags(kind: string, printed: string) {
  return {
    gpu: { type: 'string', describe: 'index of the GPU', defaultDescription: '0' },
    out: { type: 'string', describe: 'run directory', defaultDescription: `results/<date>-<gpu>-${kind}-<id>` },
    python: { type: 'string', describe: 'Python interpreter with PyTorch', defaultDescription: DEFAULTS.python },
    'allow-busy': { type: 'boolean', describe: 'measure even if another process uses the GPU' },
    json: { type: 'boolean', describe: `print ${printed} as JSON` },
    'fake-gpu': { type: 'boolean', hidden: true },
  } as const;
}

/** Keys yargs gives as arrays on purpose: --set is repeatable; `_` and `--` are the leftover words. */
const REPEATABLE = new Set(['set', '_', '--']);
/** The positional arguments of each command, named <run> rather than --run in messages. */
const POSITIONALS: Record<string, readonly string[]> = { gate: ['run'], report: ['run', 'other'], fleet: ['dir'] };

/**
 * Refuses, for every command, the two flag shapes the options downstream would misread: a repeated
 * flag, which yargs gives as an array where a string is expected (a crash, or one of the values taken
 * without a word), and an empty value (`--out ''`, or `--out` with none), which as a path would mean
 * the current directory.
 */
function refuseRepeatedOrEmpty(argv: Record<string, unknown>): void {
  const command = String((argv._ as unknown[] | undefined)?.[0] ?? '');
  for (const [key, value] of Object.entries(argv)) {
    // camelCase keys are yargs' copies of the dashed ones; $0 is the script.
    if (REPEATABLE.has(key) || key === '$0' || /[A-Z]/.test(key)) continue;
    const name = POSITIONALS[command]?.includes(key) ? `<${key}>` : `--${key}`;
    if (Array.isArray(value)) {
      const times = value.length === 2 ? 'twice' : `${value.length} times`;
      throw new UserError(`${name} given ${times} (${value.map((v) => argText(String(v))).join(', ')}): give it once`);
    }
    if (value === '') throw new UserError(`${name} '': needs a value, not an empty one`);
  }
}

/** Parses argv; yargs itself answers --help and --version. Usage errors become one-line UserErrors. */
export async function parseCli(argv: readonly string[]): Promise<CliCommand | null> {
  let command: CliCommand | null = null;
  await yargs([...argv])
    .scriptName('gpushare')
    .command('bench', 'measure GPU sharing on this machine and write a run directory', benchFlags, (args) => {
      const { set, ...rest } = args as unknown as Omit<BenchArgs, 'command'> & { '--'?: string[] };
      command = { name: 'bench', args: { ...rest, ...(set ? { set: set.map(String) } : {}), command: (rest['--'] ?? []).map(String) } };
    })
    .command(
      'doctor',
      'show what the harness relies on: GPUs, driver, MIG, MPS, Python and PyTorch',
      (y) =>
        y
          .option('json', { type: 'boolean', describe: 'print the fingerprint as JSON' })
          .option('python', { type: 'string', describe: 'Python interpreter to probe', defaultDescription: 'python3' })
          .option('fake-gpu', { type: 'boolean', hidden: true }),
      (args) => {
        command = { name: 'doctor', args: args as DoctorArgs };
      },
    )
    .command(
      'probe',
      'test what breaks when processes share the GPU (memory, SM caps, faults, client limit, time slices, streams, green contexts) and grade the claims made about it',
      (y) =>
        y
          .option('probes', { type: 'string', describe: `probes to run, comma-separated: ${PROBES.join(', ')}`, defaultDescription: 'all' })
          .options(runFlags('probe', 'the claims ledger')),
      (args) => {
        command = { name: 'probe', args: args as unknown as ProbeArgs };
      },
    )
    .command(
      'capacity',
      'the highest request rate each mode carries at N clients while p99 stays within a target (open-loop arrivals)',
      (y) =>
        y
          .option('slo-p99-ms', { type: 'string', describe: 'the p99 latency target, ms (required)' })
          .option('modes', { type: 'string', describe: 'timeslice, mps or both', defaultDescription: 'timeslice,mps' })
          .option('clients', { type: 'string', describe: 'client counts, comma-separated', defaultDescription: '1,2,4' })
          .option('workload', { type: 'string', describe: 'a built-in workload', defaultDescription: 'infer' })
          .option('set', { type: 'string', array: true, describe: 'a workload parameter, e.g. --set infer.batch=4 (repeatable)' })
          .option('load', { type: 'string', describe: 'arrivals: poisson or constant', defaultDescription: 'poisson' })
          .option('window-ms', { type: 'string', describe: 'length of each rate step, ms', defaultDescription: '2000' })
          .option('start-qps', { type: 'string', describe: 'first rate per client, req/s (doubled while it passes)', defaultDescription: '100' })
          .option('max-steps', { type: 'string', describe: 'rates tried at most per mode and client count', defaultDescription: '12' })
          .options(runFlags('capacity', 'the capacity table')),
      (args) => {
        const { set, ...rest } = args as unknown as CapacityArgs;
        command = { name: 'capacity', args: { ...rest, ...(set ? { set: set.map(String) } : {}) } };
      },
    )
    .command(
      'gate <run>',
      'grade a run against thresholds and, with --baseline, detect regressions (exit 0 pass, 1 fail, 3 inconclusive)',
      (y) =>
        y
          .positional('run', { type: 'string', demandOption: true, describe: 'run directory' })
          .option('baseline', { type: 'string', describe: 'run directory to compare against' })
          .option('config', { type: 'string', describe: 'thresholds file (YAML or JSON)' })
          .option('junit', { type: 'string', describe: 'write a JUnit XML report here' })
          .option('json', { type: 'boolean', describe: 'print the result as JSON' })
          .option('allow-mismatch', { type: 'boolean', describe: 'compare runs from different GPUs, drivers, MIG or compute modes' }),
      (args) => {
        command = { name: 'gate', args: args as unknown as GateArgs };
      },
    )
    .command(
      'show <run>',
      'print a run\'s headline ratios, verdicts and stops, as bench ends with; writes nothing',
      (y) =>
        y
          .positional('run', { type: 'string', demandOption: true, describe: 'run directory' })
          .option('all', { type: 'boolean', describe: 'every ratio of the run, not only the headline and graded ones' })
          .option('json', { type: 'boolean', describe: 'the run\'s verdicts, every ratio and its stops as JSON (as report --format json)' })
          .option('config', { type: 'string', describe: 'thresholds file (YAML or JSON)' }),
      (args) => {
        command = { name: 'show', args: args as unknown as ShowArgs };
      },
    )
    .command(
      'report <run> [other]',
      'a run as markdown with charts (reports/<run-id>.md), CSV or JSON; with a second run, the two side by side',
      (y) =>
        y
          .positional('run', { type: 'string', demandOption: true, describe: 'run directory' })
          .positional('other', { type: 'string', describe: 'a second run directory to compare with the first' })
          .option('format', { choices: ['md', 'csv', 'json'] as const, default: 'md' as const, describe: 'output format (md is written to --out; csv and json are printed)' })
          .option('out', { type: 'string', describe: 'directory for markdown reports', defaultDescription: 'reports/' })
          .option('config', { type: 'string', describe: 'thresholds file (YAML or JSON)' }),
      (args) => {
        command = { name: 'report', args: args as unknown as ReportArgs };
      },
    )
    .command(
      'artifacts',
      'write MPS scripts, Kubernetes device-plugin configs and MIG geometries for a measured GPU',
      (y) =>
        y
          .option('out', { type: 'string', demandOption: true, describe: 'directory for the files' })
          .option('run', { type: 'string', describe: 'run directory: the GPU it measured and its costs' })
          .option('gpu-model', { type: 'string', describe: 'a GPU model without a run: A100-40GB, A100-80GB, H100-80GB, H200-141GB' })
          .option('gpu', { type: 'string', hidden: true })
          .option('replicas', { type: 'string', describe: 'shares per GPU in the device-plugin configs', defaultDescription: '4' })
          .option('namespace', { type: 'string', describe: 'the GPU Operator\'s namespace (OpenShift: nvidia-gpu-operator)', defaultDescription: 'gpu-operator' })
          .option('cluster-policy', { type: 'string', describe: 'the ClusterPolicy\'s name (OpenShift: gpu-cluster-policy)', defaultDescription: 'cluster-policy' })
          .option('gpus', { type: 'string', describe: 'GPUs of the node the MPS scripts serve: all, or indices such as 0,1', defaultDescription: 'all' }),
      (args) => {
        command = { name: 'artifacts', args: args as unknown as ArtifactsArgs };
      },
    )
    .command(
      'plan',
      'can these models share one GPU, and with which mode? (writes the matching artifacts with --out)',
      (y) =>
        y
          .option('models', { type: 'string', demandOption: true, describe: 'how many models (processes)' })
          .option('mem-gib', { type: 'string', demandOption: true, describe: 'GPU memory each model needs, GiB' })
          .option('sm-pct', { type: 'string', demandOption: true, describe: 'share of the SMs each model needs when busy, %' })
          .option('latency-slo-ms', { type: 'string', describe: 'p99 latency target, ms (checked against the run measured contended p99)' })
          .option('run', { type: 'string', describe: 'run directory: its GPU, MIG table and measured costs' })
          .option('gpu-model', { type: 'string', describe: 'GPU model: A100-40GB, A100-80GB, H100-80GB, H200-141GB, or any with --gpu-mem-gib' })
          .option('gpu', { type: 'string', hidden: true })
          .option('json', { type: 'boolean', describe: 'the answer as JSON: the request, each mode\'s fit, what breaks, the recommendation and the MPS limits' })
          .option('gpu-mem-gib', { type: 'string', describe: 'memory of a GPU model without a built-in table, GiB (time-slicing and MPS fits need no MIG table)' })
          .option('out', { type: 'string', describe: 'write the artifacts for the recommendation here' })
          .option('namespace', { type: 'string', describe: 'the GPU Operator\'s namespace (OpenShift: nvidia-gpu-operator)', defaultDescription: 'gpu-operator' })
          .option('cluster-policy', { type: 'string', describe: 'the ClusterPolicy\'s name (OpenShift: gpu-cluster-policy)', defaultDescription: 'cluster-policy' })
          .option('gpus', { type: 'string', describe: 'GPUs of the node the MPS scripts serve: all, or indices such as 0,1', defaultDescription: 'all' }),
      (args) => {
        command = { name: 'plan', args: args as unknown as PlanArgs };
      },
    )
    .command('fleet', 'many GPUs and nodes: a Kubernetes Job that benches a node pool, and one report over many runs', (y) =>
      y
        .command(
          'job',
          'write an Indexed Job that runs gpushare bench on every GPU node of a pool (kubectl apply -f)',
          (j) =>
            j
              .option('nodes', { type: 'string', demandOption: true, describe: 'node selector of the pool, e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3' })
              .option('image', { type: 'string', demandOption: true, describe: 'container image with gpushare (see the Dockerfile)' })
              .option('modes', { type: 'string', describe: 'modes each pod benches', defaultDescription: 'timeslice,mps' })
              .option('out', { type: 'string', describe: 'write the manifest here', defaultDescription: 'stdout' })
              .option('count', { type: 'string', demandOption: true, describe: 'GPU nodes in the pool: the Job runs one pod on each (--per node) or one per GPU of each (--per gpu)' })
              .option('per', { type: 'string', describe: 'node: one pod holds all --gpus-per-node GPUs of a node and benches them with bench --gpus all; gpu: one pod per GPU, benches on a node in parallel', defaultDescription: 'node' })
              .option('gpus-per-node', { type: 'string', describe: 'GPUs of each node: per node, the pod requests them all (give the real count to hold the node); needed with --per gpu', defaultDescription: '1' })
              .option('results', { type: 'string', describe: 'logs: each pod prints its runs as base64 tar.gz in its log, read back with kubectl logs (no storage needed, hence the default); pvc: written to --pvc', defaultDescription: 'logs' })
              .option('pvc', { type: 'string', describe: 'PersistentVolumeClaim for --results pvc, mounted at /results; must be ReadWriteMany (pods on many nodes write at once)' })
              .option('name', { type: 'string', describe: 'the Job\'s name (pods are <name>-<index>-…)', defaultDescription: 'gpushare-fleet' })
              .option('namespace', { type: 'string', describe: 'the Job\'s namespace', defaultDescription: 'kubectl\'s current namespace' })
              .option('backoff-limit', { type: 'string', describe: 'failed pods the Job retries in all before it fails (evictions not counted)', defaultDescription: 'one per pod' })
              .option('active-deadline-s', { type: 'string', describe: 'seconds the whole Job may take, pods waiting for a node included', defaultDescription: '1800 + 900 per GPU a pod benches' })
              .option('runtime-class', { type: 'string', describe: 'RuntimeClass of the pods, e.g. nvidia where the NVIDIA runtime is not the default' })
              .option('allow-shared-pool', { type: 'boolean', describe: 'also schedule onto nodes whose device plugin shares GPUs (nvidia.com/gpu.sharing-strategy mps or time-slicing): a pod there gets a share, not a whole GPU' }),
          (args) => {
            command = { name: 'fleet job', args: args as unknown as FleetJobArgs };
          },
        )
        .command(
          'report <dir>',
          'merge the runs under a directory into one report: each ratio across nodes, outliers, per-node verdicts, JUnit',
          (r) =>
            r
              .positional('dir', { type: 'string', demandOption: true, describe: 'directory holding run directories (searched recursively)' })
              .option('out', { type: 'string', describe: 'directory for the markdown report', defaultDescription: 'reports/' })
              .option('junit', { type: 'string', describe: 'write a JUnit XML report here: one testcase per node and ratio' })
              .option('json', { type: 'boolean', describe: 'print the fleet analysis as JSON (the markdown is then written only with --out)' })
              .option('name', { type: 'string', describe: 'name of the report: <out>/fleet-<name>.md', defaultDescription: 'the directory\'s name' })
              .epilogue('exit 0: no outlier and no failing node; 1: a node is an outlier, or fails (contaminated, throttled, incomplete, different software or settings, a failing or invalid verdict), or a run.json is unreadable; 2: no bench run under <dir>, or a usage error'),
          (args) => {
            command = { name: 'fleet report', args: args as unknown as FleetReportArgs };
          },
        )
        .demandCommand(1, 'name a fleet command: job or report'),
    )
    // Runs after yargs' own checks (an unknown flag given twice still reads "Unknown argument") and before the command's handler.
    .middleware(refuseRepeatedOrEmpty)
    .demandCommand(1, 'name a command: bench, probe, capacity, doctor, gate, show, report, artifacts, plan or fleet')
    .parserConfiguration({ 'populate--': true, 'camel-case-expansion': true })
    .strict()
    .version(VERSION)
    .help()
    .alias('h', 'help')
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((message, error) => {
      throw error instanceof UserError ? error : new UserError(`${message ?? error?.message} (see gpushare --help)`);
    })
    .parseAsync();
  return command;
}
