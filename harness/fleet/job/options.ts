/** `gpushare fleet job`'s flags given meaning: each checked, each bad value named with its fix, defaults filled in. */

import { MODE_NAMES } from '../../bench/record/schema.js';
import type { ArgsOf } from '../../core/command.js';
import { UserError } from '../../core/errors.js';
import { argText, argvText } from '../../core/escape/terminal.js';
import { K8S_NAME } from '../../core/k8s-name.js';
import {
  defaultDeadlineS,
  type FleetJobSpec,
  jobPods,
  PRODUCT_LABEL,
  REPLICAS_LABEL,
  type ResultsSpec,
  SHARED_STRATEGIES,
  SHARING_STRATEGY_LABEL,
} from './manifest.js';
import { checkConstraint, checkPartition, checkResultsDir, defaultTimeLimitS, type SlurmSpec } from './slurm.js';

export interface FleetJobOptions {
  spec: FleetJobSpec;
  /** The manifest's file, or null for stdout. */
  out: string | null;
}

/** What `fleet job` runs: the Kubernetes Job's options, or with --slurm the sbatch script's. */
export type FleetJobCommandOptions =
  | (FleetJobOptions & { slurm?: undefined })
  | { slurm: SlurmSpec; out: string | null };

export const DEFAULT_JOB_NAME = 'gpushare-fleet';
export const DEFAULT_FLEET_MODES = ['timeslice', 'mps'] as const;
/** Kubernetes caps an Indexed Job at 100,000 completions. */
const MAX_PODS = 100_000;

/** A DNS subdomain (RFC 1123): PersistentVolumeClaim and RuntimeClass names, label-key prefixes. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label name (the part after the prefix) and a non-empty label value: 63 characters at most. */
const LABEL_NAME = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** An image reference as Docker parses one: [registry[:port]/]path[:tag][@sha256:digest], path in lower case. */
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
/** A first component is a registry only with a dot or a port, or as localhost (as Docker decides). */
const HOST_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
const REGISTRY = `(?:(?:localhost|${HOST_LABEL}(?:\\.${HOST_LABEL})+)(?::\\d+)?/|${HOST_LABEL}:\\d+/)?`;
const IMAGE = new RegExp(`^${REGISTRY}${COMPONENT}(?:/${COMPONENT})*(?::\\w[\\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`);

const DECIMAL = /^-?\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;

/** A whole number in [lo, hi], as bench's flags take one: plain decimal only. */
function integer(raw: string | undefined, flag: string, fallback: number, lo: number, hi: number): number {
  if (raw === undefined) return fallback;
  if (!DECIMAL.test(raw) || !WHOLE.test(raw) || Number(raw) < lo || Number(raw) > hi) {
    throw new UserError(`${flag} ${argText(raw)}: needs a whole number from ${lo} to ${hi}`);
  }
  return Number(raw);
}

/** `k=v[,k=v]` as a nodeSelector: equality only, every key and value as Kubernetes takes labels. */
export function parseNodeSelector(raw: string): Record<string, string> {
  const selector: Record<string, string> = {};
  const bad = (why: string) => new UserError(`--nodes ${argText(raw)}: ${why}`);
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '')
      throw bad(
        'an empty item; give label=value pairs separated by commas, e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3',
      );
    const match = /^([^=!\s]+)=([^=]*)$/.exec(item);
    if (!match)
      throw bad(
        `"${item}" is not label=value; a nodeSelector takes only equalities (no !=, in, notin or bare keys), e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`,
      );
    const [, key = '', value = ''] = match;
    const slash = key.lastIndexOf('/');
    const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : [null, key];
    if ((prefix !== null && !DNS_SUBDOMAIN.test(prefix)) || !LABEL_NAME.test(name)) {
      throw bad(
        `"${key}" is not a label key (an optional DNS prefix and "/", then at most 63 letters, digits, "-", "_" or ".")`,
      );
    }
    if (value !== '' && !LABEL_NAME.test(value))
      throw bad(
        `"${value}" is not a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`,
      );
    if (key in selector && selector[key] !== value)
      throw bad(`${key} given twice (${selector[key]}, ${value}); a node has one value per label`);
    selector[key] = value;
  }
  return selector;
}

/** Why a selector picks nodes whose device plugin shares GPUs, or null. */
function selectsSharedPool(selector: Record<string, string>): string | null {
  const strategy = selector[SHARING_STRATEGY_LABEL];
  if (strategy !== undefined && (SHARED_STRATEGIES as readonly string[]).includes(strategy))
    return `${SHARING_STRATEGY_LABEL}=${strategy}`;
  const replicas = selector[REPLICAS_LABEL];
  if (replicas !== undefined && WHOLE.test(replicas) && Number(replicas) > 1) return `${REPLICAS_LABEL}=${replicas}`;
  const product = selector[PRODUCT_LABEL];
  if (product?.endsWith('-SHARED')) return `${PRODUCT_LABEL}=${product}, the name the device plugin gives shared GPUs`;
  return null;
}

function results(args: FleetJobArgs): ResultsSpec {
  const kind = args.results ?? (args.pvc !== undefined ? 'pvc' : 'logs');
  if (kind !== 'logs' && kind !== 'pvc')
    throw new UserError(
      `--results ${argText(kind)}: choose logs (each pod prints its runs in its log) or pvc (runs written to --pvc)`,
    );
  if (kind === 'logs') {
    if (args.pvc !== undefined)
      throw new UserError(
        `--pvc ${argText(args.pvc)}: --results logs writes no claim; drop --pvc, or use --results pvc`,
      );
    return { kind };
  }
  if (args.pvc === undefined)
    throw new UserError(
      "--results pvc: name the claim with --pvc <claim>, a ReadWriteMany PersistentVolumeClaim in the Job's namespace",
    );
  if (!DNS_SUBDOMAIN.test(args.pvc))
    throw new UserError(
      `--pvc ${argText(args.pvc)}: needs a PersistentVolumeClaim name (lower-case letters, digits, "-" and ".")`,
    );
  return { kind, claimName: args.pvc };
}

/** The flags as a command line that makes the same manifest (--out left out), for its header. */
function sourceLine(args: FleetJobArgs): string {
  const flags: Array<[string, string | boolean | undefined]> = [
    ['--nodes', args.nodes],
    ['--count', args.count],
    ['--image', args.image],
    ['--modes', args.modes],
    ['--per', args.per],
    ['--gpus-per-node', args.gpusPerNode],
    ['--results', args.results],
    ['--pvc', args.pvc],
    ['--name', args.name],
    ['--namespace', args.namespace],
    ['--backoff-limit', args.backoffLimit],
    ['--active-deadline-s', args.activeDeadlineS],
    ['--runtime-class', args.runtimeClass],
    ['--allow-shared-pool', args.allowSharedPool],
  ];
  const argv = flags.flatMap(([flag, value]) =>
    value === undefined || value === false ? [] : value === true ? [flag] : [flag, value],
  );
  return `gpushare fleet job ${argvText(argv)}`;
}

/** fleet job's flags. */
export const FLEET_JOB_FLAGS = {
  nodes: {
    type: 'string',
    describe:
      'node selector of the pool, e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (required, but with --slurm)',
  },
  image: { type: 'string', describe: 'container image with gpushare (see the Dockerfile; required, but with --slurm)' },
  modes: { type: 'string', describe: 'modes each pod benches', defaultDescription: 'timeslice,mps' },
  out: { type: 'string', describe: 'write the manifest here', defaultDescription: 'stdout' },
  count: {
    type: 'number',
    demandOption: true,
    describe: 'GPU nodes in the pool: the Job runs one pod on each (--per node) or one per GPU of each (--per gpu)',
  },
  per: {
    type: 'string',
    describe:
      'node: one pod holds all --gpus-per-node GPUs of a node and benches them with bench --gpus all; gpu: one pod per GPU, benches on a node in parallel',
    defaultDescription: 'node',
  },
  'gpus-per-node': {
    type: 'number',
    describe:
      'GPUs of each node: per node, the pod requests them all (give the real count to hold the node); needed with --per gpu',
    defaultDescription: '1',
  },
  results: {
    type: 'string',
    describe:
      'logs: each pod prints its runs as base64 tar.gz in its log, read back with kubectl logs (no storage needed, hence the default); pvc: written to --pvc',
    defaultDescription: 'logs',
  },
  pvc: {
    type: 'string',
    describe:
      'PersistentVolumeClaim for --results pvc, mounted at /results; must be ReadWriteMany (pods on many nodes write at once)',
  },
  name: {
    type: 'string',
    describe: "the Job's name (pods are <name>-<index>-…)",
    defaultDescription: 'gpushare-fleet',
  },
  namespace: { type: 'string', describe: "the Job's namespace", defaultDescription: "kubectl's current namespace" },
  'backoff-limit': {
    type: 'number',
    describe: 'failed pods the Job retries in all before it fails (evictions not counted)',
    defaultDescription: 'one per pod',
  },
  'active-deadline-s': {
    type: 'number',
    describe: 'seconds the whole Job may take, pods waiting for a node included',
    defaultDescription: '1800 + 900 per GPU a pod benches',
  },
  'runtime-class': {
    type: 'string',
    describe: 'RuntimeClass of the pods, e.g. nvidia where the NVIDIA runtime is not the default',
  },
  slurm: {
    type: 'boolean',
    describe:
      'write an sbatch --array script instead: one task per GPU node (or per GPU), the same bench and exit codes, runs under --results-dir for fleet report',
  },
  partition: { type: 'string', describe: 'with --slurm: the Slurm partition (#SBATCH --partition)' },
  constraint: {
    type: 'string',
    describe: 'with --slurm: node features the tasks need (#SBATCH --constraint), e.g. h100',
  },
  'results-dir': {
    type: 'string',
    describe:
      'with --slurm: where the runs go, on a filesystem every node shares (relative: under the submit directory)',
    defaultDescription: 'gpushare-fleet-results',
  },
  'allow-shared-pool': {
    type: 'boolean',
    describe:
      'also schedule onto nodes whose device plugin shares GPUs (nvidia.com/gpu.sharing-strategy mps or time-slicing): a pod there gets a share, not a whole GPU',
  },
} as const;
export type FleetJobArgs = ArgsOf<typeof FLEET_JOB_FLAGS>;

/** Flags of one scheduler given to the other: each named, with why. */
const KUBERNETES_ONLY = {
  nodes: '--nodes',
  image: '--image',
  results: '--results',
  pvc: '--pvc',
  namespace: '--namespace',
  backoffLimit: '--backoff-limit',
  runtimeClass: '--runtime-class',
  allowSharedPool: '--allow-shared-pool',
} as const;
const SLURM_ONLY = { partition: '--partition', constraint: '--constraint', resultsDir: '--results-dir' } as const;

function modesOf(raw: string | undefined): string[] {
  const modes =
    raw === undefined
      ? [...DEFAULT_FLEET_MODES]
      : [
          ...new Set(
            raw
              .split(',')
              .map((m) => m.trim())
              .filter(Boolean),
          ),
        ];
  if (modes.length === 0)
    throw new UserError(
      `--modes ${argText(raw ?? '')}: give at least one mode, comma-separated: ${MODE_NAMES.join(', ')}`,
    );
  for (const mode of modes) {
    if (!(MODE_NAMES as readonly string[]).includes(mode))
      throw new UserError(`unknown mode "${mode}" in --modes: choose from ${MODE_NAMES.join(', ')}`);
  }
  return modes;
}

/** --slurm: the sbatch script's settings. */
function resolveSlurm(args: FleetJobArgs): FleetJobCommandOptions {
  for (const [key, flag] of Object.entries(KUBERNETES_ONLY))
    if (args[key as keyof typeof KUBERNETES_ONLY] !== undefined)
      throw new UserError(`${flag}: a Kubernetes Job setting; --slurm writes an sbatch script, so drop ${flag}`);
  const per = args.per ?? 'node';
  if (per !== 'node' && per !== 'gpu')
    throw new UserError(`--per ${argText(per)}: choose node (one task holds a whole node) or gpu (one task per GPU)`);
  if (per === 'gpu' && args.gpusPerNode === undefined)
    throw new UserError(
      '--per gpu: give the GPUs of each node with --gpus-per-node N, so the array has N tasks per node',
    );
  const count = integer(args.count, '--count', 1, 1, 10_000);
  const gpusPerNode = integer(args.gpusPerNode, '--gpus-per-node', 1, 1, 64);
  const name = args.name ?? DEFAULT_JOB_NAME;
  if (!K8S_NAME.test(name))
    throw new UserError(
      `--name ${argText(name)}: needs lower-case letters, digits and "-" (at most 63), e.g. gpushare-h100`,
    );
  const flags: Array<[string, string | boolean | undefined]> = [
    ['--slurm', true],
    ['--count', args.count],
    ['--modes', args.modes],
    ['--per', args.per],
    ['--gpus-per-node', args.gpusPerNode],
    ['--name', args.name],
    ['--active-deadline-s', args.activeDeadlineS],
    ['--partition', args.partition],
    ['--constraint', args.constraint],
    ['--results-dir', args.resultsDir],
  ];
  const argv = flags.flatMap(([flag, value]) =>
    value === undefined || value === false ? [] : value === true ? [flag] : [flag, value],
  );
  return {
    slurm: {
      name,
      modes: modesOf(args.modes),
      count,
      per,
      gpusPerNode,
      timeLimitS: integer(
        args.activeDeadlineS,
        '--active-deadline-s',
        defaultTimeLimitS({ per, gpusPerNode }),
        60,
        30 * 24 * 3600,
      ),
      partition: args.partition === undefined ? null : checkPartition(args.partition),
      constraint: args.constraint === undefined ? null : checkConstraint(args.constraint),
      resultsDir: checkResultsDir(args.resultsDir ?? 'gpushare-fleet-results'),
      source: `gpushare fleet job ${argvText(argv)}`,
    },
    out: args.out ?? null,
  };
}

/** fleet job's options: the Job's, or with --slurm the sbatch script's. */
export function resolveFleetJobCommand(args: FleetJobArgs): FleetJobCommandOptions {
  return args.slurm ? resolveSlurm(args) : resolveFleetJobOptions(args);
}

export function resolveFleetJobOptions(args: FleetJobArgs): FleetJobOptions {
  for (const [key, flag] of Object.entries(SLURM_ONLY))
    if (args[key as keyof typeof SLURM_ONLY] !== undefined)
      throw new UserError(`${flag}: a Slurm setting; add --slurm for an sbatch script, or drop ${flag}`);
  const missing = (['nodes', 'image'] as const).filter((k) => args[k] === undefined);
  if (missing.length > 0)
    throw new UserError(
      `fleet job needs ${missing.map((k) => `--${k}`).join(', ')} (see gpushare fleet job --help), or --slurm for an sbatch script`,
    );
  const nodes = args.nodes as string;
  const image = args.image as string;
  const nodeSelector = parseNodeSelector(nodes);
  const allowSharedPool = args.allowSharedPool ?? false;
  const shared = selectsSharedPool(nodeSelector);
  if (shared && !allowSharedPool) {
    throw new UserError(
      `--nodes ${argText(nodes)}: selects nodes whose device plugin shares each GPU (${shared}), where nvidia.com/gpu: 1 is a share, not a GPU; select unshared nodes, or add --allow-shared-pool`,
    );
  }
  if (!IMAGE.test(image))
    throw new UserError(
      `--image ${argText(image)}: needs an image reference such as ghcr.io/org/gpushare:0.1.0 (registry/path:tag, path in lower case)`,
    );
  const modes = modesOf(args.modes);
  const per = args.per ?? 'node';
  if (per !== 'node' && per !== 'gpu')
    throw new UserError(
      `--per ${argText(per)}: choose node (one pod holds all of a node's GPUs) or gpu (one pod per GPU)`,
    );
  if (per === 'gpu' && args.gpusPerNode === undefined)
    throw new UserError(
      '--per gpu: give the GPUs of each node with --gpus-per-node N, so the Job runs N pods per node',
    );
  const count = integer(args.count, '--count', 1, 1, 10_000);
  const gpusPerNode = integer(args.gpusPerNode, '--gpus-per-node', 1, 1, 64);
  const pods = jobPods({ per, count, gpusPerNode });
  if (pods > MAX_PODS)
    throw new UserError(
      `--count ${count} × --gpus-per-node ${gpusPerNode}: ${pods} pods, more than an Indexed Job's ${MAX_PODS}; split the pool into several Jobs`,
    );
  const name = args.name ?? DEFAULT_JOB_NAME;
  // Each pod's hostname is <name>-<index>, a DNS label of 63 characters at most.
  const longest = 62 - String(pods - 1).length;
  if (!K8S_NAME.test(name) || name.length > longest) {
    throw new UserError(
      `--name ${argText(name)}: needs a Kubernetes name of at most ${longest} characters here (lower-case letters, digits and "-"; pods are named <name>-<index>), e.g. gpushare-h100`,
    );
  }
  if (args.namespace !== undefined && !K8S_NAME.test(args.namespace)) {
    throw new UserError(
      `--namespace ${argText(args.namespace)}: needs a Kubernetes name (lower-case letters, digits and "-", at most 63), e.g. gpu-bench`,
    );
  }
  if (args.runtimeClass !== undefined && !DNS_SUBDOMAIN.test(args.runtimeClass)) {
    throw new UserError(
      `--runtime-class ${argText(args.runtimeClass)}: needs a RuntimeClass name (lower-case letters, digits, "-" and "."), e.g. nvidia`,
    );
  }
  const spec: FleetJobSpec = {
    name,
    namespace: args.namespace ?? null,
    image,
    modes,
    nodeSelector,
    count,
    per,
    gpusPerNode,
    results: results(args),
    backoffLimit: integer(args.backoffLimit, '--backoff-limit', pods, 0, 100_000),
    activeDeadlineS: integer(
      args.activeDeadlineS,
      '--active-deadline-s',
      defaultDeadlineS({ per, gpusPerNode }),
      60,
      30 * 24 * 3600,
    ),
    allowSharedPool,
    runtimeClass: args.runtimeClass ?? null,
    source: sourceLine(args),
  };
  return { spec, out: args.out ?? null };
}
