/** `gpushare fleet job`'s flags given meaning: each checked, each bad value named with its fix, defaults filled in. */
import { argText, argvText } from './argv-text.js';
import type { FleetJobArgs } from './cli.js';
import { UserError } from './errors.js';
import { K8S_NAME } from './artifacts/k8s.js';
import { defaultDeadlineS, jobPods, PRODUCT_LABEL, REPLICAS_LABEL, SHARED_STRATEGIES, SHARING_STRATEGY_LABEL, type FleetJobSpec, type ResultsSpec } from './artifacts/k8s-job.js';
import { MODE_NAMES } from './run/schema.js';

export interface FleetJobOptions {
  spec: FleetJobSpec;
  /** The manifest's file, or null for stdout. */
  out: string | null;
}

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
    if (item === '') throw bad('an empty item; give label=value pairs separated by commas, e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3');
    const match = /^([^=!\s]+)=([^=]*)$/.exec(item);
    if (!match) throw bad(`"${item}" is not label=value; a nodeSelector takes only equalities (no !=, in, notin or bare keys), e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`);
    const [, key = '', value = ''] = match;
    const slash = key.lastIndexOf('/');
    const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : [null, key];
    if ((prefix !== null && !DNS_SUBDOMAIN.test(prefix)) || !LABEL_NAME.test(name)) {
      throw bad(`"${key}" is not a label key (an optional DNS prefix and "/", then at most 63 letters, digits, "-", "_" or ".")`);
    }
    if (value !== '' && !LABEL_NAME.test(value)) throw bad(`"${value}" is not a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`);
    if (key in selector && selector[key] !== value) throw bad(`${key} given twice (${selector[key]}, ${value}); a node has one value per label`);
    selector[key] = value;
  }
  return selector;
}

/** Why a selector picks nodes whose device plugin shares GPUs, or null. */
function selectsSharedPool(selector: Record<string, string>): string | null {
  const strategy = selector[SHARING_STRATEGY_LABEL];
  if (strategy !== undefined && (SHARED_STRATEGIES as readonly string[]).includes(strategy)) return `${SHARING_STRATEGY_LABEL}=${strategy}`;
  const replicas = selector[REPLICAS_LABEL];
  if (replicas !== undefined && WHOLE.test(replicas) && Number(replicas) > 1) return `${REPLICAS_LABEL}=${replicas}`;
  const product = selector[PRODUCT_LABEL];
  if (product?.endsWith('-SHARED')) return `${PRODUCT_LABEL}=${product}, the name the device plugin gives shared GPUs`;
  return null;
}

function results(args: FleetJobArgs): ResultsSpec {
  const kind = args.results ?? (args.pvc !== undefined ? 'pvc' : 'logs');
  if (kind !== 'logs' && kind !== 'pvc') throw new UserError(`--results ${argText(kind)}: choose logs (each pod prints its runs in its log) or pvc (runs written to --pvc)`);
  if (kind === 'logs') {
    if (args.pvc !== undefined) throw new UserError(`--pvc ${argText(args.pvc)}: --results logs writes no claim; drop --pvc, or use --results pvc`);
    return { kind };
  }
  if (args.pvc === undefined) throw new UserError('--results pvc: name the claim with --pvc <claim>, a ReadWriteMany PersistentVolumeClaim in the Job\'s namespace');
  if (!DNS_SUBDOMAIN.test(args.pvc)) throw new UserError(`--pvc ${argText(args.pvc)}: needs a PersistentVolumeClaim name (lower-case letters, digits, "-" and ".")`);
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
  const argv = flags.flatMap(([flag, value]) => (value === undefined || value === false ? [] : value === true ? [flag] : [flag, value]));
  return `gpushare fleet job ${argvText(argv)}`;
}

export function resolveFleetJobOptions(args: FleetJobArgs): FleetJobOptions {
  const nodeSelector = parseNodeSelector(args.nodes);
  const allowSharedPool = args.allowSharedPool ?? false;
  const shared = selectsSharedPool(nodeSelector);
  if (shared && !allowSharedPool) {
    throw new UserError(`--nodes ${argText(args.nodes)}: selects nodes whose device plugin shares each GPU (${shared}), where nvidia.com/gpu: 1 is a share, not a GPU; select unshared nodes, or add --allow-shared-pool`);
  }
  if (!IMAGE.test(args.image)) throw new UserError(`--image ${argText(args.image)}: needs an image reference such as ghcr.io/org/gpushare:0.1.0 (registry/path:tag, path in lower case)`);
  const modes = args.modes === undefined ? [...DEFAULT_FLEET_MODES] : [...new Set(args.modes.split(',').map((m) => m.trim()).filter(Boolean))];
  if (modes.length === 0) throw new UserError(`--modes ${argText(args.modes ?? '')}: give at least one mode, comma-separated: ${MODE_NAMES.join(', ')}`);
  for (const mode of modes) {
    if (!(MODE_NAMES as readonly string[]).includes(mode)) throw new UserError(`unknown mode "${mode}" in --modes: choose from ${MODE_NAMES.join(', ')}`);
  }
  const per = args.per ?? 'node';
  if (per !== 'node' && per !== 'gpu') throw new UserError(`--per ${argText(per)}: choose node (one pod holds all of a node's GPUs) or gpu (one pod per GPU)`);
  if (per === 'gpu' && args.gpusPerNode === undefined) throw new UserError('--per gpu: give the GPUs of each node with --gpus-per-node N, so the Job runs N pods per node');
  const count = integer(args.count, '--count', 1, 1, 10_000);
  const gpusPerNode = integer(args.gpusPerNode, '--gpus-per-node', 1, 1, 64);
  const pods = jobPods({ per, count, gpusPerNode });
  if (pods > MAX_PODS) throw new UserError(`--count ${count} × --gpus-per-node ${gpusPerNode}: ${pods} pods, more than an Indexed Job's ${MAX_PODS}; split the pool into several Jobs`);
  const name = args.name ?? DEFAULT_JOB_NAME;
  // Each pod's hostname is <name>-<index>, a DNS label of 63 characters at most.
  const longest = 62 - String(pods - 1).length;
  if (!K8S_NAME.test(name) || name.length > longest) {
    throw new UserError(`--name ${argText(name)}: needs a Kubernetes name of at most ${longest} characters here (lower-case letters, digits and "-"; pods are named <name>-<index>), e.g. gpushare-h100`);
  }
  if (args.namespace !== undefined && !K8S_NAME.test(args.namespace)) {
    throw new UserError(`--namespace ${argText(args.namespace)}: needs a Kubernetes name (lower-case letters, digits and "-", at most 63), e.g. gpu-bench`);
  }
  if (args.runtimeClass !== undefined && !DNS_SUBDOMAIN.test(args.runtimeClass)) {
    throw new UserError(`--runtime-class ${argText(args.runtimeClass)}: needs a RuntimeClass name (lower-case letters, digits, "-" and "."), e.g. nvidia`);
  }
  const spec: FleetJobSpec = {
    name,
    namespace: args.namespace ?? null,
    image: args.image,
    modes,
    nodeSelector,
    count,
    per,
    gpusPerNode,
    results: results(args),
    backoffLimit: integer(args.backoffLimit, '--backoff-limit', pods, 0, 100_000),
    activeDeadlineS: integer(args.activeDeadlineS, '--active-deadline-s', defaultDeadlineS({ per, gpusPerNode }), 60, 30 * 24 * 3600),
    allowSharedPool,
    runtimeClass: args.runtimeClass ?? null,
    source: sourceLine(args),
  };
  return { spec, out: args.out ?? null };
}
