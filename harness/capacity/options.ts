/** `gpushare capacity`'s flags given meaning. */
import type { ArgsOf } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { integer, list, number, oneOf, unique } from '../core/flags.js';
import { runFlags } from '../session/flags.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { builtinSpec, DEFAULT_PYTHON, parseSets } from '../workload/registry.js';
import type { CapacitySettings } from './record.js';

/** capacity's flags. */
export const CAPACITY_FLAGS = {
  'slo-p99-ms': { type: 'number', describe: 'the p99 latency target, ms (required)' },
  modes: { type: 'string', describe: 'timeslice, mps or both', defaultDescription: 'timeslice,mps' },
  clients: { type: 'string', describe: 'client counts, comma-separated', defaultDescription: '1,2,4' },
  workload: { type: 'string', describe: 'a built-in workload', defaultDescription: 'infer' },
  set: { type: 'string', array: true, describe: 'a workload parameter, e.g. --set infer.batch=4 (repeatable)' },
  load: { type: 'string', describe: 'arrivals: poisson or constant', defaultDescription: 'poisson' },
  'window-ms': { type: 'number', describe: 'length of each rate step, ms', defaultDescription: '2000' },
  'start-qps': {
    type: 'number',
    describe: 'first rate per client, req/s (doubled while it passes)',
    defaultDescription: '100',
  },
  'max-steps': { type: 'number', describe: 'rates tried at most per mode and client count', defaultDescription: '12' },
  ...runFlags('capacity', 'the capacity table'),
} as const;
export type CapacityArgs = ArgsOf<typeof CAPACITY_FLAGS>;

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
  if (args.sloP99Ms === undefined)
    throw new UserError('--slo-p99-ms is required: the p99 latency target in ms, e.g. --slo-p99-ms 10');
  const python = args.python ?? DEFAULT_PYTHON;
  const name = args.workload ?? 'infer';
  if (name === 'custom')
    throw new UserError(
      'capacity runs a built-in workload (--workload infer, gemm, spin…); a custom command must speak protocol 2 and is not supported here yet',
    );
  const counts = unique(
    list(args.clients, '--clients', ['1', '2', '4']).map((c) => integer(c, '--clients', 1, 1, 64)),
  ).sort((a, b) => a - b);
  return {
    settings: {
      sloP99Ms: number(args.sloP99Ms, '--slo-p99-ms', 10, 0.01, 600_000),
      modes: list(args.modes, '--modes', ['timeslice', 'mps']).map((m) =>
        oneOf(m, ['timeslice', 'mps'] as const, '--modes', 'mode (capacity measures timeslice and mps)'),
      ),
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
    readyTimeoutMs: READY_TIMEOUT_S * 1000,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
  };
}
