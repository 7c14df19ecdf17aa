import path from 'node:path';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import type { WorkloadSpec } from './spec.js';

type ParamValue = string | number | boolean;

/** The Python interpreter the built-in workloads run with unless --python names another. */
export const DEFAULT_PYTHON = 'python3';

/** A parameter of a built-in workload: passed to its script as `--<name> <value>`. */
export interface ParamDef {
  name: string;
  type: 'int' | 'number' | 'bool' | 'choice';
  default: ParamValue;
  choices?: readonly string[];
  help: string;
}

/** A workload shipped in workloads/. */
export interface BuiltinWorkload {
  name: string;
  script: string;
  description: string;
  params: readonly ParamDef[];
  /** For a workload with host buffers: the host memory its streams arms use, given its parameters (true: pinned). */
  hostMemory?: (params: Readonly<Record<string, ParamValue>>) => readonly boolean[];
}

const syncEvery = (value: number): ParamDef => ({
  name: 'sync-every',
  type: 'int',
  default: value,
  help: 'iterations between synchronizations in a timed window (1 = per-request latency)',
});
const iterations = (value: number): ParamDef => ({
  name: 'iterations',
  type: 'int',
  default: value,
  help: 'iterations of a fixed-work trial (streams mode)',
});

function inferParams(graph: boolean): ParamDef[] {
  return [
    // A 4-layer encoder (about 0.3 ms a request on an H100) rather than a 30 µs MLP: requests that
    // small measure the host's sync latency, which varies ±10% between windows, more than the GPU.
    { name: 'model', type: 'choice', default: 'transformer', choices: ['mlp', 'transformer'], help: 'network' },
    { name: 'layers', type: 'int', default: 4, help: 'transformer encoder layers' },
    { name: 'tokens', type: 'int', default: 128, help: 'tokens per sequence (transformer)' },
    { name: 'batch', type: 'int', default: 8, help: 'requests per batch' },
    { name: 'hidden', type: 'int', default: 1024, help: 'model width' },
    { name: 'graph', type: 'bool', default: graph, help: 'replay a captured CUDA graph per request' },
    iterations(2000),
    syncEvery(1),
  ];
}

/** The built-in workloads, defined once: the CLI, the plan and the README table read this. */
export const BUILTIN_WORKLOADS: readonly BuiltinWorkload[] = [
  {
    name: 'spin',
    script: 'spin.py',
    description: 'kernels that keep a chosen number of SMs busy for a chosen time (the concurrentKernels probe)',
    params: [
      { name: 'blocks', type: 'int', default: 8, help: 'thread blocks per kernel (≈ SMs kept busy)' },
      { name: 'spin-us', type: 'number', default: 1000, help: 'how long each kernel spins, µs' },
      iterations(128),
      syncEvery(8),
    ],
  },
  {
    name: 'gemm',
    script: 'gemm.py',
    description: 'square matrix multiplication, optionally captured in a CUDA graph',
    params: [
      { name: 'size', type: 'int', default: 4096, help: 'matrix size n (n×n by n×n)' },
      { name: 'dtype', type: 'choice', default: 'fp16', choices: ['fp16', 'bf16', 'fp32'], help: 'element type' },
      { name: 'graph', type: 'bool', default: false, help: 'replay a captured CUDA graph of sync-every products' },
      iterations(400),
      syncEvery(8),
    ],
  },
  {
    name: 'infer',
    script: 'infer.py',
    description:
      'small-batch inference of a small transformer encoder (or an MLP) with random weights, one request per iteration, replayed from a CUDA graph (GPU contention, little host noise)',
    params: inferParams(true),
  },
  {
    name: 'infer-eager',
    script: 'infer.py',
    description:
      'the same requests launched eagerly from Python, kernel by kernel: launch-bound, as many real services are, and noisier (it follows host latency)',
    params: inferParams(false),
  },
  {
    name: 'bandwidth',
    script: 'bandwidth.py',
    description: 'a streaming copy between two device buffers far larger than L2: presses on memory bandwidth',
    params: [
      { name: 'mib', type: 'int', default: 1024, help: 'size of each of the two buffers, MiB' },
      iterations(200),
      syncEvery(8),
    ],
  },
  {
    name: 'train',
    script: 'train.py',
    description:
      'training steps of a small transformer encoder (forward, backward and an AdamW step, bf16 autocast): a training job',
    params: [
      { name: 'layers', type: 'int', default: 4, help: 'transformer encoder layers' },
      { name: 'hidden', type: 'int', default: 1024, help: 'model width' },
      { name: 'tokens', type: 'int', default: 256, help: 'tokens per sequence' },
      { name: 'batch', type: 'int', default: 16, help: 'sequences per step' },
      iterations(50),
      syncEvery(1),
    ],
  },
  {
    name: 'pipeline',
    script: 'pipeline.py',
    description: 'chunks through host-to-device copy, compute and device-to-host copy',
    hostMemory: (params) => (params.pageable === true ? [true, false] : [true]),
    params: [
      { name: 'chunk-mib', type: 'int', default: 16, help: 'chunk size, MiB' },
      // Copies with next to no compute overlap only each other, and on 2 streams that varied 5%
      // between rounds (H100 VM). With 2 products per chunk the 2-stream time varied 0.1%.
      {
        name: 'matmuls',
        type: 'int',
        default: 2,
        help: 'fp32 products of each chunk with a 1024×1024 matrix (the compute)',
      },
      {
        name: 'pageable',
        type: 'bool',
        default: false,
        help: 'also compare pageable host memory (about 1 s a trial on an H100)',
      },
      iterations(96),
      syncEvery(4),
    ],
  },
];

export const BUILTIN_NAMES = BUILTIN_WORKLOADS.map((w) => w.name);

export function findBuiltin(name: string): BuiltinWorkload | undefined {
  return BUILTIN_WORKLOADS.find((w) => w.name === name);
}

/** Resolves a built-in workload with `overrides` (from --set name.param=value) into its exact argv. */
export function builtinSpec(name: string, python: string, overrides: Record<string, string>): WorkloadSpec {
  const workload = findBuiltin(name);
  if (!workload)
    throw new UserError(
      `unknown workload "${name}": choose from ${BUILTIN_NAMES.join(', ')}, or give your own command after --`,
    );
  const params: Record<string, ParamValue> = {};
  for (const def of workload.params) params[def.name] = def.default;
  for (const [key, raw] of Object.entries(overrides)) {
    const def = workload.params.find((p) => p.name === key);
    if (!def) {
      throw new UserError(
        `--set ${name}.${key}: "${key}" is not a parameter of ${name}; it takes ${workload.params.map((p) => p.name).join(', ')}`,
      );
    }
    params[key] = parseParam(name, def, raw);
  }
  const argv = [python, path.join(WORKLOADS_DIR, workload.script)];
  for (const [key, value] of Object.entries(params)) argv.push(`--${key}`, String(value));
  return { name, builtin: true, argv, params };
}

function parseParam(workload: string, def: ParamDef, raw: string): ParamValue {
  const bad = (allowed: string) => new UserError(`--set ${argText(`${workload}.${def.name}=${raw}`)}: ${allowed}`);
  switch (def.type) {
    // Plain decimal only, as for the flags: Number() alone would also take 0x10, 1e3, " 5" or "+5".
    case 'int': {
      const value = Number(raw);
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value <= 0) throw bad('needs a positive whole number');
      return value;
    }
    case 'number': {
      const value = Number(raw);
      if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(value) || value <= 0) throw bad('needs a positive number');
      return value;
    }
    case 'bool':
      if (raw === 'true' || raw === 'false') return raw === 'true';
      throw bad('needs true or false');
    case 'choice':
      if (def.choices?.includes(raw)) return raw;
      throw bad(`needs one of ${def.choices?.join(', ')}`);
  }
}

/**
 * The workload a product measures by name: a built-in with its --set `overrides`, or "custom", the
 * command after -- (which `usage`, e.g. "gpushare bench", shows how to give).
 */
export function workloadSpec(
  name: string,
  python: string,
  overrides: Record<string, Record<string, string>>,
  command: readonly string[],
  usage: string,
): WorkloadSpec {
  if (name === 'custom') {
    if (command.length === 0)
      throw new UserError(`workload "custom" needs your command after --, e.g. ${usage} -- ./my-workload --size 8`);
    return customSpec(command);
  }
  return builtinSpec(name, python, overrides[name] ?? {});
}

/** A user's own workload command: taken verbatim as argv, never given to a shell. */
export function customSpec(argv: readonly string[]): WorkloadSpec {
  return { name: 'custom', builtin: false, argv: [...argv], params: {} };
}

/** --set workload.param=value, repeatable: the parameters given for each workload by name. */
export function parseSets(sets: readonly string[]): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const item of sets) {
    const match = /^([a-z][a-z-]*)\.([a-z-]+)=(.+)$/.exec(item);
    if (!match) throw new UserError(`--set ${item}: expected workload.param=value, e.g. --set gemm.size=8192`);
    const [, workload = '', param = '', value = ''] = match;
    (out[workload] ??= {})[param] = value;
  }
  return out;
}
