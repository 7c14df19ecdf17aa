/** `gpushare artifacts`' and `gpushare plan`'s flags given meaning. */

import { existsSync } from 'node:fs';
import { type ArgsOf, renamedFlag } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { gpuList, integer, number } from '../core/flags.js';
import { K8S_NAME } from '../core/k8s-name.js';
import { isStoredRunName, runHolds } from '../record/evidence.js';
import { SERVE_FILE } from '../record/kinds.js';
import { MPS_CLIENT_LIMIT } from '../system/mps/client-limit.js';
import { DEFAULT_OPERATOR, type Operator } from './k8s.js';
import { DEFAULT_HEADROOM_PCT, type PlanRequest } from './plan-types.js';

export interface ArtifactsOptions {
  out: string;
  run?: string;
  /** A mix run whose protection settings go into the files. */
  mix?: string | undefined;
  gpu?: string;
  replicas: number;
  operator: Operator;
  /** The node's GPUs the MPS scripts serve: every one, or these indices. */
  gpus: number[] | 'all';
  /** --k8s dra: the DRA claims and Job too. */
  dra: boolean;
  /** --force: replace files in --out that gpushare did not write. */
  force: boolean;
}

export interface PlanOptions extends PlanRequest {
  run?: string;
  gpu?: string;
  /** Memory of a --gpu model without a built-in table, GiB. */
  gpuMemGiB: number | null;
  /** Print the advice as JSON instead of text. */
  json: boolean;
  /** Print the arithmetic behind the answer (adviceText) instead of the one-screen answer. */
  explain: boolean;
  out?: string;
  /** A mix run whose protection settings go into the MPS files. */
  mix?: string | undefined;
  operator: Operator;
  gpus: number[] | 'all';
  dra: boolean;
  force: boolean;
}

const OPERATOR_FLAGS = {
  namespace: {
    type: 'string',
    describe: "the GPU Operator's namespace (OpenShift: nvidia-gpu-operator)",
    defaultDescription: 'gpu-operator',
  },
  'cluster-policy': {
    type: 'string',
    describe: "the ClusterPolicy's name (OpenShift: gpu-cluster-policy)",
    defaultDescription: 'cluster-policy',
  },
  gpus: {
    type: 'string',
    describe: 'GPUs of the node the MPS scripts serve: all, or indices such as 0,1',
    defaultDescription: 'all',
  },
  k8s: {
    type: 'string',
    describe:
      "also write the Kubernetes DRA files: dra (ResourceClaims with NVIDIA's DRA driver GpuConfig, and a Job requesting a claim)",
  },
} as const;

/** --force, beside --out. */
const FORCE_FLAG = {
  force: {
    type: 'boolean',
    describe: 'replace files in --out that gpushare did not write there (a link is replaced, never written through)',
  },
} as const;

/** artifacts' flags. */
export const ARTIFACTS_FLAGS = {
  out: { type: 'string', demandOption: true, describe: 'directory for the files' },
  run: { type: 'string', describe: 'run directory: the GPU it measured and its costs' },
  mix: {
    type: 'string',
    describe:
      "a gpushare mix run: each aggressor's MPS thread cap its protection search found, in a launcher and pod specs",
  },
  'gpu-model': { type: 'string', describe: 'a GPU model without a run: A100-40GB, A100-80GB, H100-80GB, H200-141GB' },
  gpu: { type: 'string', hidden: true },
  replicas: { type: 'number', describe: 'shares per GPU in the device-plugin configs', defaultDescription: '4' },
  ...FORCE_FLAG,
  ...OPERATOR_FLAGS,
} as const;
export type ArtifactsArgs = ArgsOf<typeof ARTIFACTS_FLAGS>;

/** plan's flags. */
export const PLAN_FLAGS = {
  models: { type: 'number', describe: 'how many models (processes); required but with --run <server run>' },
  'mem-gib': { type: 'number', describe: 'GPU memory each model needs, GiB; required but with --run <server run>' },
  'sm-pct': {
    type: 'number',
    describe: 'share of the SMs each model needs when busy, %; required but with --run <server run>',
  },
  'slo-p99-ms': {
    type: 'number',
    describe: "p99 latency target, ms (checked against the run's measured contended p99)",
  },
  'latency-slo-ms': renamedFlag('slo-p99-ms', { type: 'number', describe: 'the old name of --slo-p99-ms' }),
  'headroom-pct': {
    type: 'number',
    describe: "memory a fit leaves free, % of the GPU's",
    defaultDescription: String(DEFAULT_HEADROOM_PCT),
  },
  run: { type: 'string', describe: 'run directory: its GPU, MIG table and measured costs' },
  'gpu-model': {
    type: 'string',
    describe: 'GPU model: A100-40GB, A100-80GB, H100-80GB, H200-141GB, or any with --gpu-mem-gib',
  },
  gpu: { type: 'string', hidden: true },
  json: {
    type: 'boolean',
    describe: "the answer as JSON: the request, each mode's fit, what breaks, the recommendation and the MPS limits",
  },
  explain: {
    type: 'boolean',
    describe: "the arithmetic behind the answer: each option's fit, limits, measured costs and risks",
  },
  'gpu-mem-gib': {
    type: 'number',
    describe: 'memory of a GPU model without a built-in table, GiB (time-slicing and MPS fits need no MIG table)',
  },
  out: { type: 'string', describe: 'write the artifacts for the recommendation here' },
  ...FORCE_FLAG,
  mix: {
    type: 'string',
    describe:
      "a gpushare mix run: with an MPS recommendation, each aggressor's thread cap found, in a launcher and pod specs",
  },
  ...OPERATOR_FLAGS,
} as const;
export type PlanArgs = ArgsOf<typeof PLAN_FLAGS>;

export function resolveArtifactsOptions(args: ArtifactsArgs): ArtifactsOptions {
  return {
    out: args.out,
    run: args.run,
    mix: args.mix,
    gpu: gpuModel(args),
    replicas: integer(args.replicas, '--replicas', 4, 2, MPS_CLIENT_LIMIT),
    operator: operator(args),
    gpus: gpuList(args.gpus),
    dra: dra(args.k8s),
    force: args.force ?? false,
  };
}

/** --k8s dra: the DRA files too (the device-plugin files are always written). */
function dra(value: string | undefined): boolean {
  if (value === undefined || value === 'device-plugin') return false;
  if (value === 'dra') return true;
  throw new UserError(`--k8s ${argText(value)}: choose dra (DRA ResourceClaims) or device-plugin (the default)`);
}

/** --gpu-model; --gpu, which names a GPU index in bench, is refused here rather than read as a model. */
function gpuModel(args: { gpuModel?: string; gpu?: string }): string | undefined {
  if (args.gpu !== undefined)
    throw new UserError(
      `--gpu ${argText(args.gpu)}: --gpu is a GPU index (bench); name a GPU model with --gpu-model, e.g. --gpu-model H100-80GB`,
    );
  return args.gpuModel;
}

/** The GPU Operator's namespace and ClusterPolicy name, each a Kubernetes object name. */
function operator(args: { namespace?: string; clusterPolicy?: string }): Operator {
  const name = (value: string | undefined, flag: string, fallback: string) => {
    if (value === undefined) return fallback;
    if (!K8S_NAME.test(value))
      throw new UserError(
        `${flag} ${argText(value)}: needs a Kubernetes name (lower-case letters, digits and "-", at most 63), e.g. nvidia-gpu-operator`,
      );
    return value;
  };
  return {
    namespace: name(args.namespace, '--namespace', DEFAULT_OPERATOR.namespace),
    clusterPolicy: name(args.clusterPolicy, '--cluster-policy', DEFAULT_OPERATOR.clusterPolicy),
  };
}

export function resolvePlanOptions(args: PlanArgs): PlanOptions {
  // A server run answers how many copies of that server: its plan needs none of the model's sizes.
  if (args.run !== undefined && !isStoredRunName(args.run) && !existsSync(args.run))
    throw new UserError(
      `--run ${argText(args.run)}: no such run directory; give one that gpushare bench or capacity wrote`,
    );
  const serverRun = args.run !== undefined && runHolds(args.run, SERVE_FILE);
  const missing = (['models', 'mem-gib', 'sm-pct'] as const).filter(
    (f) => args[f === 'models' ? 'models' : f === 'mem-gib' ? 'memGib' : 'smPct'] === undefined,
  );
  if (!serverRun && missing.length > 0)
    throw new UserError(`plan needs ${missing.map((n) => `--${n}`).join(', ')} (see gpushare plan --help)`);
  return {
    models: integer(args.models, '--models', 1, 1, 100_000),
    memGiB: number(args.memGib, '--mem-gib', 1, 0.001, 10_000),
    smPct: number(args.smPct, '--sm-pct', 10, 0.01, 100),
    sloP99Ms: args.sloP99Ms === undefined ? null : number(args.sloP99Ms, '--slo-p99-ms', 0, 0.001, 1e7),
    headroomPct: number(args.headroomPct, '--headroom-pct', DEFAULT_HEADROOM_PCT, 0, 90),
    run: args.run,
    gpu: gpuModel(args),
    gpuMemGiB: args.gpuMemGib === undefined ? null : number(args.gpuMemGib, '--gpu-mem-gib', 0, 0.001, 100_000),
    json: args.json ?? false,
    explain: args.explain ?? false,
    out: args.out,
    mix: args.mix,
    operator: operator(args),
    gpus: gpuList(args.gpus),
    dra: dra(args.k8s),
    force: args.force ?? false,
  };
}
