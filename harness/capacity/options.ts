/** `gpushare capacity`'s flags given meaning. */

import { type ArgsOf, renamedFlag } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { integer, integerList, list, number, oneOf } from '../core/flags.js';
import { runFlags } from '../session/flags.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { DEFAULT_PYTHON, parseSets, workloadSpec } from '../workload/registry.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { CAPACITY_MODES, type CapacitySettings } from './record.js';

/** What each exit code of capacity means (its --help). */
export const CAPACITY_EPILOGUE =
  'exit 0: every mode and client count measured (a capacity, a lower bound ≥ N, or none: the lowest rate tried failed), or was skipped; 2: a usage error, or this machine cannot run it; 3: a mode and client count measured nothing valid (every step invalid) or a client failed; 129/130/131/143: interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM';

/** capacity's flags. */
export const CAPACITY_FLAGS = {
  'slo-p99-ms': { type: 'number', describe: 'the p99 latency target, ms (required)' },
  modes: {
    type: 'string',
    describe: 'timeslice, mps, streams or green (the last two: N tenants of one process), comma-separated',
    defaultDescription: 'timeslice,mps',
  },
  clients: {
    type: 'string',
    describe: 'client counts (tenants in streams and green), comma-separated',
    defaultDescription: '1,2,4',
  },
  workloads: {
    type: 'string',
    describe: 'the workload: a built-in (infer, gemm, spin…) or custom, the command after -- (protocol 2)',
    defaultDescription: 'infer; custom with a command after --',
  },
  workload: renamedFlag('workloads', { type: 'string', describe: 'the old name of --workloads' }),
  set: { type: 'string', array: true, describe: 'a workload parameter, e.g. --set infer.batch=4 (repeatable)' },
  load: { type: 'string', describe: 'arrivals: poisson or constant', defaultDescription: 'poisson' },
  'window-ms': {
    type: 'number',
    describe:
      'length of each rate step, ms (longer where a rate needs it for 640 requests, shorter where a client would serve more than the 20000 latencies it reports a window)',
    defaultDescription: '2000',
  },
  'start-qps': {
    type: 'number',
    describe: 'first rate per client, req/s (doubled while it passes)',
    defaultDescription: '100',
  },
  'max-steps': { type: 'number', describe: 'rates tried at most per mode and client count', defaultDescription: '12' },
  ...runFlags('capacity', 'the capacity table'),
} as const;
/** capacity's arguments as typed: numbers stay strings so errors can quote them; `rest` is the command after `--`. */
export type CapacityArgs = ArgsOf<typeof CAPACITY_FLAGS> & { rest: string[] };

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
  return {
    settings: {
      sloP99Ms: number(args.sloP99Ms, '--slo-p99-ms', 10, 0.01, 600_000),
      modes: list(args.modes, '--modes', ['timeslice', 'mps']).map((m) =>
        oneOf(m, CAPACITY_MODES, '--modes', 'mode (capacity measures timeslice, mps, streams and green)'),
      ),
      clientCounts: integerList(args.clients, '--clients', [1, 2, 4], 1, 64),
      workload: capacityWorkload(args, python),
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

/** The one workload capacity measures: --workloads names it (infer unless given), or the command after -- is it. */
function capacityWorkload(args: CapacityArgs, python: string): WorkloadSpec {
  const names = args.workloads !== undefined ? list(args.workloads, '--workloads', []) : null;
  const name = names?.[0] ?? (args.rest.length > 0 ? 'custom' : 'infer');
  if (names !== null && names.length > 1)
    throw new UserError(
      `--workloads ${argText(args.workloads ?? '')}: capacity measures one workload per run; give one, e.g. --workloads ${name}`,
    );
  // Without this the command after -- would be dropped without a word.
  if (args.rest.length > 0 && name !== 'custom')
    throw new UserError(
      `the command after -- is the workload "custom": drop --workloads ${name} (or give --workloads custom), or drop the command`,
    );
  const overrides = parseSets(args.set ?? []);
  const ignored = Object.keys(overrides).find((w) => w !== name);
  if (ignored !== undefined)
    throw new UserError(
      `--set ${ignored}.…: this run measures ${name === 'custom' ? 'your command' : name}, not ${ignored}; drop the --set or measure ${ignored}`,
    );
  return workloadSpec(name, python, overrides, args.rest, 'gpushare capacity --slo-p99-ms 10');
}
