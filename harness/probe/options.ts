/** `gpushare probe`'s flags given meaning. */
import type { ArgsOf } from '../core/command.js';
import { integer, list, oneOf } from '../core/flags.js';
import { runFlags } from '../session/flags.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { PROBES, type ProbeName } from './record.js';

/** probe's flags. */
export const PROBE_FLAGS = {
  probes: {
    type: 'string',
    describe: `probes to run, comma-separated: ${PROBES.join(', ')}`,
    defaultDescription: 'all',
  },
  ...runFlags('probe', 'the claims ledger'),
} as const;
export type ProbeArgs = ArgsOf<typeof PROBE_FLAGS>;

/** What `gpushare probe` runs, where, and how it prints. */
export interface ProbeOptions {
  probes: ProbeName[];
  gpuIndex: number;
  out: string | null;
  python: string;
  allowBusy: boolean;
  json: boolean;
}

export function resolveProbeOptions(args: ProbeArgs): ProbeOptions {
  const chosen = list(args.probes, '--probes', PROBES).map((p) => oneOf(p, PROBES, '--probes', 'probe'));
  return {
    // In the documented order whatever order they were given in: cheap, independent probes first.
    probes: PROBES.filter((p) => chosen.includes(p)),
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python: args.python ?? DEFAULT_PYTHON,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
  };
}
