/** `gpushare mix`'s flags and scenario file given meaning. */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { ArgsOf } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { integer, integerList, list, number, oneOf, unique } from '../core/flags.js';
import { runFlags } from '../session/flags.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { builtinSpec, customSpec, DEFAULT_PYTHON } from '../workload/registry.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { AGGRESSOR_KINDS, type Aggressor, MIX_MODES, type MixSettings, type Protect } from './record.js';

const KINDS = Object.keys(AGGRESSOR_KINDS) as Array<keyof typeof AGGRESSOR_KINDS>;

/** What each exit code of mix means (its --help). */
export const MIX_EPILOGUE =
  "exit 0: every cell measured (overloaded cells included), or skipped with the reason; 2: a usage error, or this machine cannot run it; 3: the victim's capacity could not be found, or a mode failed or measured nothing valid; 129/130/131/143: interrupted";

/** mix's flags. */
export const MIX_FLAGS = {
  scenario: {
    type: 'string',
    describe:
      'a YAML scenario file (victim, aggressors with an optional command each, modes, loads…); flags override it',
  },
  victim: { type: 'string', describe: 'the latency-critical workload, a built-in', defaultDescription: 'infer' },
  aggressors: {
    type: 'string',
    describe: `aggressor kinds, comma-separated: ${KINDS.map((k) => `${k} (${AGGRESSOR_KINDS[k]})`).join(', ')}`,
    defaultDescription: KINDS.join(','),
  },
  modes: {
    type: 'string',
    describe: 'timeslice, mps (with the aggressor capped at each --thread-pcts), streams, green; comma-separated',
    defaultDescription: 'timeslice,mps,streams,green',
  },
  'thread-pcts': {
    type: 'string',
    describe: "the aggressor's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE settings under MPS, besides uncapped",
    defaultDescription: '50,25,10',
  },
  loads: {
    type: 'string',
    describe: "the victim's offered load, % of its capacity alone, comma-separated",
    defaultDescription: '25,50',
  },
  'slo-p99-ms': { type: 'number', describe: "the victim's p99 target, ms: its capacity alone is found at it" },
  'victim-qps': { type: 'number', describe: "the victim's capacity alone, req/s, instead of searching it" },
  protect: {
    type: 'string',
    describe: "the protection search's target for the victim's p99: a multiple of its p99 alone (2x) or ms (5ms)",
    defaultDescription: '2x',
  },
  arrivals: { type: 'string', describe: 'poisson or constant', defaultDescription: 'poisson' },
  'window-ms': { type: 'number', describe: 'length of each window, ms', defaultDescription: '800' },
  rounds: { type: 'number', describe: 'rounds of every arm', defaultDescription: '3' },
  'dry-run': { type: 'boolean', describe: 'print the arms and the time they take on an H100, and measure nothing' },
  ...runFlags('mix', 'the matrix'),
} as const;
export type MixArgs = ArgsOf<typeof MIX_FLAGS>;

/** What `gpushare mix` measures, where, and how it prints. */
export interface MixOptions {
  settings: MixSettings;
  gpuIndex: number;
  out: string | null;
  python: string;
  readyTimeoutMs: number;
  allowBusy: boolean;
  json: boolean;
  dryRun: boolean;
}

/** A side given in a scenario file: a built-in's name, or a command of your own. */
const SideSchema = z.union([
  z.string(),
  z.object({ name: z.string().regex(/^[a-z][a-z0-9-]*$/), command: z.array(z.string()).min(1) }).strict(),
]);

/** A scenario file: every key optional, none unknown. */
const ScenarioSchema = z
  .object({
    victim: SideSchema,
    aggressors: z.array(SideSchema).min(1),
    modes: z.array(z.enum(MIX_MODES)).min(1),
    threadPcts: z.array(z.number().int().min(1).max(99)),
    loads: z.array(z.number().positive().max(200)).min(1),
    sloP99Ms: z.number().positive(),
    victimQps: z.number().positive(),
    protect: z.string(),
    windowMs: z.number().min(100),
    rounds: z.number().int().min(1).max(100),
  })
  .partial()
  .strict();
type Scenario = z.infer<typeof ScenarioSchema>;

/** Reads and checks a scenario file: one line naming the file, the key and what is wrong. */
export function parseScenario(text: string, file: string): Scenario {
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    throw new UserError(`${file} is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = ScenarioSchema.safeParse(data ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : '(top level)';
  throw new UserError(`${file}: ${where}: ${issue?.message ?? 'invalid'}; see docs/mixed-tenants.md for the keys`);
}

function readScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read the scenario file ${file} (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
  return parseScenario(text, file);
}

/** --protect: `2x` (a multiple of the victim's p99 alone) or `5ms`. */
export function parseProtect(text: string): Protect {
  const m = /^(\d+(?:\.\d+)?)(x|ms)$/.exec(text.trim());
  const value = Number(m?.[1]);
  if (!m || !(value > 0))
    throw new UserError(
      `--protect ${argText(text)}: give a multiple of the victim's p99 alone (e.g. 2x) or a p99 in ms (e.g. 5ms)`,
    );
  return m[2] === 'x' ? { kind: 'multiple', value } : { kind: 'ms', value };
}

function side(given: z.infer<typeof SideSchema>, python: string, what: string): { name: string; spec: WorkloadSpec } {
  if (typeof given !== 'string') return { name: given.name, spec: customSpec(given.command) };
  const builtin = what === 'aggressor' ? (AGGRESSOR_KINDS[given as keyof typeof AGGRESSOR_KINDS] ?? null) : given;
  if (builtin === null)
    throw new UserError(
      `aggressor "${given}": choose from ${KINDS.join(', ')}, or give {name, command} in a scenario file`,
    );
  return { name: given, spec: builtinSpec(builtin, python, {}) };
}

/** The aggressors: --aggressors, else the scenario file's, else one of each kind; each name once. */
function resolveAggressors(args: MixArgs, file: Scenario, python: string): Aggressor[] {
  const given =
    args.aggressors !== undefined
      ? list(args.aggressors, '--aggressors', KINDS).map((k) => oneOf(k, KINDS, '--aggressors', 'aggressor kind'))
      : (file.aggressors ?? KINDS);
  const aggressors: Aggressor[] = given.map((a) => {
    const { name, spec } = side(a, python, 'aggressor');
    return { name, workload: spec };
  });
  const names = aggressors.map((a) => a.name);
  if (new Set(names).size !== names.length)
    throw new UserError(`aggressors ${names.join(', ')}: each aggressor once (names must differ)`);
  return aggressors;
}

export function resolveMixOptions(args: MixArgs): MixOptions {
  const file = args.scenario !== undefined ? readScenario(args.scenario) : {};
  const python = args.python ?? DEFAULT_PYTHON;
  const aggressors = resolveAggressors(args, file, python);
  const victim = side(args.victim ?? file.victim ?? 'infer', python, 'victim').spec;
  const sloP99Ms =
    args.sloP99Ms !== undefined ? number(args.sloP99Ms, '--slo-p99-ms', 0, 0.01, 600_000) : file.sloP99Ms;
  const victimQps =
    args.victimQps !== undefined ? number(args.victimQps, '--victim-qps', 0, 0.1, 1e7) : (file.victimQps ?? null);
  if (sloP99Ms === undefined && victimQps === null)
    throw new UserError(
      "--slo-p99-ms is required: the victim's p99 target in ms, at which its capacity alone is found (e.g. --slo-p99-ms 5), or its capacity with --victim-qps",
    );
  const modes =
    args.modes !== undefined
      ? unique(list(args.modes, '--modes', []).map((m) => oneOf(m, MIX_MODES, '--modes', 'mode')))
      : (file.modes ?? [...MIX_MODES]);
  const threadPcts =
    args.threadPcts !== undefined
      ? integerList(args.threadPcts, '--thread-pcts', [], 1, 99)
      : (file.threadPcts ?? [50, 25, 10]);
  const loadsPct = args.loads !== undefined ? integerList(args.loads, '--loads', [], 1, 200) : (file.loads ?? [25, 50]);
  return {
    settings: {
      victim,
      aggressors,
      modes,
      threadPcts: unique([...threadPcts].sort((a, b) => b - a)),
      loads: unique([...loadsPct].sort((a, b) => a - b)).map((pct) => pct / 100),
      sloP99Ms: sloP99Ms ?? null,
      victimQps,
      protect: parseProtect(args.protect ?? file.protect ?? '2x'),
      arrivals: oneOf(args.arrivals ?? 'poisson', ['poisson', 'constant'] as const, '--arrivals', 'arrival process'),
      windowMs: number(args.windowMs, '--window-ms', file.windowMs ?? 800, 100, 60_000),
      rounds: integer(args.rounds, '--rounds', file.rounds ?? 3, 1, 100),
      startQps: 200,
      maxSteps: 8,
    },
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python,
    readyTimeoutMs: READY_TIMEOUT_S * 1000,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
    dryRun: args.dryRun ?? false,
  };
}
