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
  load(): Promise<AnyCommand>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'demo',
    describe: "try gpushare without a GPU: a short bench on gpushare's simulator, marked SIMULATED everywhere",
    load: async () => (await import('./demo.js')).demoCommand,
  },
  {
    name: 'bench',
    describe: 'measure GPU sharing on this machine and write a run directory',
    load: async () => (await import('../bench/command.js')).benchCommand,
  },
  {
    name: 'check',
    describe:
      'smoke-test your own workload command (-- <cmd>) in seconds before a long run; --print-helper-path: where the Python helper is',
    load: async () => (await import('../check/command.js')).checkCommand,
  },
  {
    name: 'doctor',
    describe: 'show what the harness relies on: GPUs, driver, MIG, MPS, Python and PyTorch',
    load: async () => (await import('../doctor/command.js')).doctorCommand,
  },
  {
    name: 'probe',
    describe:
      'test what breaks when processes share the GPU (memory, SM caps, faults, client limit, time slices, streams, green contexts) and grade the claims made about it',
    load: async () => (await import('../probe/command.js')).probeCommand,
  },
  {
    name: 'capacity',
    describe:
      'the highest request rate each mode carries at N clients while p99 stays within a target (open-loop arrivals)',
    load: async () => (await import('../capacity/command.js')).capacityCommand,
  },
  {
    name: 'mix',
    describe:
      "a latency-critical victim beside batch aggressors: its p99 under each sharing mode, the aggressor's throughput kept, and the cheapest MPS cap that protects it",
    load: async () => (await import('../mix/command.js')).mixCommand,
  },
  {
    name: 'gate',
    args: '<run>',
    describe:
      'grade a run against thresholds and, with --baseline, detect regressions (exit 0 pass, 1 fail, 3 inconclusive)',
    load: async () => (await import('../bench/gate/command.js')).gateCommand,
  },
  {
    name: 'show',
    args: '<run>',
    describe: "print a run's headline ratios, verdicts and stops, as bench ends with; writes nothing",
    load: async () => (await import('../bench/show.js')).showCommand,
  },
  {
    name: 'report',
    args: '<run> [other]',
    describe:
      'a run as markdown with charts (runs/reports/<run-id>.md), CSV or JSON; with a second run, the two side by side',
    load: async () => (await import('./report.js')).reportCommand,
  },
  {
    name: 'artifacts',
    describe: 'write MPS scripts, Kubernetes device-plugin configs and MIG geometries for a measured GPU',
    load: async () => (await import('../deploy/command.js')).artifactsCommand,
  },
  {
    name: 'plan',
    describe: 'can these models share one GPU, and with which mode? (writes the matching artifacts with --out)',
    load: async () => (await import('../deploy/command.js')).planCommand,
  },
  {
    name: 'verify',
    args: '<artifacts>',
    describe:
      'check on this node that every limit the generated files declare holds (MPS caps, memory limits, pipe directory, plugin replicas, MIG); --cases: the known silent failures',
    load: async () => (await import('../verify/command.js')).verifyCommand,
  },
  {
    name: 'fleet job',
    describe:
      'write an Indexed Job that runs gpushare bench on every GPU node of a pool (kubectl apply -f), or with --slurm an sbatch --array script',
    load: async () => (await import('../fleet/job/command.js')).fleetJobCommand,
  },
  {
    name: 'fleet report',
    args: '<dir>',
    describe:
      'merge the runs under a directory into one report: each ratio across nodes, outliers, per-node verdicts, JUnit',
    load: async () => (await import('../fleet/report/command.js')).fleetReportCommand,
  },
];

/** Groups of commands (`gpushare fleet job`): their description in the root help. */
export const GROUPS: Readonly<Record<string, string>> = {
  fleet: 'many GPUs and nodes: a Kubernetes Job that benches a node pool, and one report over many runs',
};
