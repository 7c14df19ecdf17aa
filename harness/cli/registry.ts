/**
 * Every command, registered once: its name, usage line and one-line description, and its module,
 * imported only when that command runs (so `gpushare --version` loads no charting, no zod schemas).
 * A new product adds its line here and nothing else outside its folder.
 */
import type { AnyCommand } from '../core/command.js';

export interface CommandEntry {
  /** The words that name it: `bench`, or `fleet job` for a command of a group. */
  name: string;
  /** Its positionals as yargs writes them: `<run> [other]`. */
  args?: string;
  describe: string;
  /** Examples for its --help, as gh and kubectl show them: a command line and what it does. */
  examples?: ReadonlyArray<readonly [line: string, what: string]>;
  /** Its stdout is laid out by the command itself and not folded by cli/run.ts. */
  laysOutItself?: boolean;
  load(): Promise<AnyCommand>;
  /** The command run instead when --serve is given, or --resume names a server run (serve.json): bench and capacity of the user's own server. */
  serve?(): Promise<AnyCommand>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'demo',
    examples: [
      ['$0 demo', 'a short bench on the simulator'],
      ['$0 demo --quiet', 'the same without progress lines'],
    ],
    describe: "try gpushare without a GPU: a short bench on gpushare's simulator, marked SIMULATED everywhere",
    load: async () => (await import('./demo.js')).demoCommand,
  },
  {
    name: 'bench',
    examples: [
      ['$0 bench', 'every mode, the default workloads'],
      ['$0 bench --modes timeslice,mps --workloads infer', 'two modes, one workload'],
      ['$0 bench -- python3 my_model.py', 'your own workload'],
      [
        "$0 bench --serve 'python3 server.py --port {port}'",
        'copies of your own OpenAI-compatible server (see bench --serve x --help)',
      ],
    ],
    describe: 'measure GPU sharing on this machine and write a run directory',
    load: async () => (await import('../bench/command.js')).benchCommand,
    serve: async () => (await import('../serve/command.js')).serveBenchCommand,
  },
  {
    name: 'check',
    examples: [
      ['$0 check -- python3 my_model.py', 'does your workload speak the protocol?'],
      ['$0 check --print-helper-path', 'where gpushare_protocol.py is'],
    ],
    describe:
      'smoke-test your own workload command (-- <cmd>) in seconds before a long run; --print-helper-path: where the Python helper is',
    load: async () => (await import('../check/command.js')).checkCommand,
  },
  {
    name: 'doctor',
    examples: [
      ['$0 doctor', 'what is there and what is missing'],
      ['$0 doctor --verbose', 'with every MIG profile'],
    ],
    describe: 'show what the harness relies on: GPUs, driver, MIG, MPS, Python and PyTorch',
    load: async () => (await import('../doctor/command.js')).doctorCommand,
  },
  {
    name: 'probe',
    examples: [
      ['$0 probe', 'every probe'],
      ['$0 probe --probes memory,fault', 'two of them'],
    ],
    describe:
      'test what breaks when processes share the GPU (memory, SM caps, faults, client limit, time slices, streams, green contexts) and grade the claims made about it',
    load: async () => (await import('../probe/command.js')).probeCommand,
  },
  {
    name: 'capacity',
    examples: [
      ['$0 capacity --slo-p99-ms 10', 'req/s per mode at p99 <= 10 ms'],
      ['$0 capacity --slo-p99-ms 10 --clients 2 --modes mps', 'one mode, 2 clients'],
      [
        "$0 capacity --serve 'python3 server.py --port {port}' --slo-ttft-p99-ms 500",
        'your own server: req/s per mode and copies at TTFT p99 <= 500 ms',
      ],
    ],
    describe:
      'the highest request rate each mode carries at N clients while p99 stays within a target (open-loop arrivals)',
    load: async () => (await import('../capacity/command.js')).capacityCommand,
    serve: async () => (await import('../serve/command.js')).serveCapacityCommand,
  },
  {
    name: 'mix',
    examples: [
      ['$0 mix --slo-p99-ms 5', 'infer beside batch work, every mode'],
      ['$0 mix --slo-p99-ms 5 --dry-run', 'the arms and their time, nothing measured'],
    ],
    describe:
      "a latency-critical victim beside batch aggressors: its p99 under each sharing mode, the aggressor's throughput kept, and the cheapest MPS cap that protects it",
    load: async () => (await import('../mix/command.js')).mixCommand,
  },
  {
    name: 'gate',
    examples: [
      ['$0 gate runs/results/<run>', 'grade a run against its thresholds'],
      ["$0 gate runs/results/<run> --baseline 'runs/results/base-*'", 'and against baseline runs'],
    ],
    args: '<run>',
    describe:
      'grade a bench run against thresholds and, with --baseline, detect regressions (exit 0 pass, 1 fail, 3 inconclusive); a server run of bench --serve against a --baseline server run; probe, capacity and mix runs have no ratios to gate',
    load: async () => (await import('./gate.js')).gateCommand,
  },
  {
    name: 'show',
    examples: [
      ['$0 show runs/results/<run>', 'the summary again'],
      ['$0 show runs/results/<run> --all', 'every ratio'],
    ],
    args: '<run>',
    describe:
      "print a run's results as its command ended with (bench: headline ratios, verdicts, stops; probe: claims; capacity: its table; mix: its cells); writes nothing",
    load: async () => (await import('./show.js')).showCommand,
  },
  {
    name: 'report',
    examples: [
      ['$0 report runs/results/<run>', 'markdown with charts under runs/reports/'],
      ['$0 report runs/results/<run> --format csv', 'the metrics as CSV'],
      ['$0 report runs/results/<a> runs/results/<b>', 'two runs side by side'],
    ],
    args: '<run> [other]',
    describe:
      'a run as markdown with charts (runs/reports/<run-id>.md), CSV or JSON; with a second run, the two side by side',
    load: async () => (await import('./report.js')).reportCommand,
  },
  {
    name: 'artifacts',
    examples: [
      ['$0 artifacts --run runs/results/<run> --out deploy/', 'MPS scripts and configs for that GPU'],
      ['$0 artifacts --gpu-model H100-80GB --out deploy/', 'without a run'],
    ],
    describe: 'write MPS scripts, Kubernetes device-plugin configs and MIG geometries for a measured GPU',
    load: async () => (await import('../deploy/command.js')).artifactsCommand,
  },
  {
    name: 'plan',
    examples: [
      ['$0 plan --models 3 --mem-gib 12 --sm-pct 20 --gpu-model H100-80GB', 'can 3 models share an H100?'],
      ['$0 plan --models 40 --mem-gib 1.5 --sm-pct 10 --run runs/results/<run>', 'from a measured run'],
    ],
    describe: 'can these models share one GPU, and with which mode? (writes the matching artifacts with --out)',
    // plan lays out its one screen (and --explain's arithmetic) to the terminal's width itself.
    laysOutItself: true,
    load: async () => (await import('../deploy/command.js')).planCommand,
  },
  {
    name: 'verify',
    args: '<artifacts>',
    examples: [
      ['$0 verify deploy/', 'check the limits plan --out or artifacts wrote, on this node'],
      ['$0 verify deploy/ --cases all', 'and reproduce the known silent failures'],
    ],
    describe:
      'check on this node that every limit the generated files declare holds (MPS caps, memory limits, pipe directory, plugin replicas, MIG); --cases: the known silent failures',
    load: async () => (await import('../verify/command.js')).verifyCommand,
  },
  {
    name: 'evidence add',
    args: '<runs..>',
    examples: [['$0 evidence add runs/results/<run>', 'compress a run into the store (evidence/<run id>.tar.br)']],
    describe: 'store run directories in the evidence store, one compressed file each, never replacing one',
    load: async () => (await import('./evidence.js')).evidenceAddCommand,
  },
  {
    name: 'evidence extract',
    args: '<runs..>',
    examples: [
      ['$0 evidence extract evidence/<run id>.tar.br', 'its run directory under runs/evidence/'],
      ['$0 show evidence/<run id>.tar.br', 'every command reads a stored run without it'],
    ],
    describe: 'unpack stored runs into run directories (every command also reads a stored run where it lies)',
    load: async () => (await import('./evidence.js')).evidenceExtractCommand,
  },
  {
    name: 'fleet job',
    examples: [
      ['$0 fleet job --nodes <label>=<value> --count 3 --image <image>', 'print the Job'],
      ['$0 fleet job --nodes <label>=<value> --count 3 --image <image> --out job.yaml', 'write it'],
      ['$0 fleet job --slurm --count 4 --gpus-per-node 8 --out bench.sbatch', 'a Slurm array script instead'],
    ],
    describe:
      'write an Indexed Job that runs gpushare bench on every GPU node of a pool (kubectl apply -f), or with --slurm an sbatch --array script',
    load: async () => (await import('../fleet/job/command.js')).fleetJobCommand,
  },
  {
    name: 'fleet report',
    examples: [
      ['$0 fleet report runs/', 'one report over the runs under runs/'],
      ['$0 fleet report runs/ --junit fleet.xml', 'and a JUnit file'],
    ],
    args: '<dir>',
    describe:
      'merge the runs under a directory into one report: each ratio across nodes, outliers, per-node verdicts, JUnit',
    load: async () => (await import('../fleet/report/command.js')).fleetReportCommand,
  },
  {
    name: 'fleet history',
    examples: [
      ['$0 fleet history evidence/', 'the runs where each headline changed, over the evidence store'],
      ['$0 fleet history runs/ --json', 'the same as JSON (exit 1 when a series changed)'],
    ],
    args: '<dir>',
    describe:
      'find the runs where each headline ratio changed over a history of runs (E-divisive, Welch p, at least the noise floor): first changed run, size with its 95% CI, chart',
    load: async () => (await import('../fleet/history/command.js')).fleetHistoryCommand,
  },
];

/** Groups of commands (`gpushare fleet job`): their description in the root help. */
export const GROUPS: Readonly<Record<string, string>> = {
  evidence: "the project's store of measured runs (evidence/): add a run, extract one",
  fleet:
    'many GPUs and nodes: a Kubernetes Job that benches a node pool, one report over many runs, and the changes over a history of runs',
};
