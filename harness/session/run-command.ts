/**
 * The command of a product that makes a run on one GPU (probe, capacity, mix, serve, verify), with
 * new and --resume written once. A new run: the dry run where asked, this machine's fingerprint and
 * preflight (newRun), the record's header, its directory opened and locked. A resumed one: its settings
 * flags refused, its directory locked, its record read again, this machine checked against it, the MPS
 * daemons its killed harness left stopped (resumeOnThisMachine). Either then runs the product's
 * measure in the lifecycle. A product gives its flags, its record (what follows the header, and how a
 * resume marks it), its loop and its report.
 */
import { type ArgsOf, type Command, defineCommand, type Flags, type Positionals } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { termJson, termText } from '../core/escape/terminal.js';
import {
  type MachineRecordHeader,
  newMachineRecordHeader,
  notResumable,
  type RecordHeader,
} from '../record/record-file.js';
import { simulatedJson } from '../record/simulated.js';
import { refuseSettingsWithResume } from './flags.js';
import { type MachineRecord, newSession, type RecordBinding, resumeOnThisMachine, type Session } from './lifecycle.js';
import { type NewRun, newRun } from './preflight.js';

/** What every run command resolves its flags into, besides its own settings. */
export interface RunOptions {
  gpuIndex: number;
  out: string | null;
  python: string;
  allowBusy: boolean;
  json: boolean;
  dryRun?: boolean;
}

/** A record the factory makes and resumes: a machine record with a schema id. */
type RunRecord = MachineRecord & Pick<RecordHeader<string>, 'schema' | 'createdAt'>;

/** The kinds of run a run command makes (bench and multi-GPU runs have commands of their own). */
type RunKind = 'probe' | 'capacity' | 'mix' | 'serve' | 'verify';

/** How a product continues a run with --resume. */
export interface RunResume<O extends RunOptions, R extends RunRecord> {
  /** The record in `dir`, or null where it holds none of this kind (refused as notResumable says). */
  load(dir: string): Promise<R | null>;
  /** Notes the resume in the record (when, and what it kept) and drops what is measured again. */
  resumed(record: R, deps: AppDeps): void;
  /** The options the run goes on with: its own settings, from the record; `given` holds the rest. */
  options(record: R, given: RunOptions): O;
}

/** What a product gives to have a run command. */
export interface RunProduct<F extends Flags, P extends Positionals, O extends RunOptions, R extends RunRecord> {
  flags: F;
  positionals?: P;
  rest?: boolean;
  epilogue?: string;
  kind: RunKind;
  schema: R['schema'];
  /** What the product does, for a refusal: "cannot measure capacity here: …". */
  verb: string;
  /** The flags of a new run → its options, or a UserError (see Command.resolve). */
  resolve(args: ArgsOf<F> & ArgsOf<P> & { rest: string[] }): O | Promise<O>;
  /** Where the options ask for a dry run (`dryRun`): what it prints, and its exit code; nothing is started. */
  dryRun?(options: O, deps: AppDeps): number | Promise<number>;
  binding(dir: string): RecordBinding<R>;
  /** A new run's first record: `header`, then the product's own fields. May refuse (a UserError). */
  create(header: MachineRecordHeader<R['schema']>, options: O, made: NewRun, deps: AppDeps): R | Promise<R>;
  /** Absent: the run has no --resume (verify). */
  resume?: RunResume<O, R>;
  /** Measures and reports (runAndReport); `startedUs` is the command's start, CLOCK_MONOTONIC µs. */
  measure(session: Session<R>, options: O, deps: AppDeps, startedUs: number): Promise<number>;
}

/** A new run's options, or the directory of the run --resume continues and how it prints. */
export type RunCommandOptions<O> = { resume: null; options: O } | { resume: string; json: boolean };

/** The command of `product`: flags and help as it gives them, new and --resume as above. */
export function defineRunCommand<
  const F extends Flags,
  // None unless given: a command without positionals takes no others.
  const P extends Positionals = Record<never, never>,
  O extends RunOptions = RunOptions,
  R extends RunRecord = RunRecord,
>(product: RunProduct<F, P, O, R>): Command<F, P, RunCommandOptions<O>> {
  return defineCommand({
    flags: product.flags,
    ...(product.positionals !== undefined ? { positionals: product.positionals } : {}),
    ...(product.rest !== undefined ? { rest: product.rest } : {}),
    ...(product.epilogue !== undefined ? { epilogue: product.epilogue } : {}),
    resolve: async (args): Promise<RunCommandOptions<O>> => {
      const dir = product.resume !== undefined ? resumeDir(args) : undefined;
      if (dir === undefined) return { resume: null, options: await product.resolve(args) };
      refuseSettingsWithResume(product.flags, args);
      return { resume: dir, json: 'json' in args && args.json === true };
    },
    run: (options, deps) => {
      const startedUs = deps.clock.monotonicUs();
      return options.resume === null
        ? startRun(product, options.options, deps, startedUs)
        : resumeRun(product, options.resume, options.json, deps, startedUs);
    },
  });
}

/** --resume's directory, where it was given. */
function resumeDir(args: object): string | undefined {
  return 'resume' in args && typeof args.resume === 'string' ? args.resume : undefined;
}

async function startRun<O extends RunOptions, R extends RunRecord>(
  product: RunProduct<Flags, Positionals, O, R>,
  options: O,
  deps: AppDeps,
  startedUs: number,
): Promise<number> {
  if (product.dryRun !== undefined && options.dryRun === true) return product.dryRun(options, deps);
  const made = await newRun(deps, options, product.kind, product.verb);
  const header = newMachineRecordHeader(product.schema, made, options.gpuIndex);
  const record = await product.create(header, options, made, deps);
  const session = await newSession(product.binding(made.dir), made.dir, record, deps);
  return product.measure(session, options, deps, startedUs);
}

async function resumeRun<O extends RunOptions, R extends RunRecord>(
  product: RunProduct<Flags, Positionals, O, R>,
  dir: string,
  json: boolean,
  deps: AppDeps,
  startedUs: number,
): Promise<number> {
  // resolve gives a directory to resume only to a product that has --resume.
  const resume = product.resume as RunResume<O, R>;
  const session = await resumeOnThisMachine(product.binding(dir), dir, deps, {
    load: async (from) => (await resume.load(from)) ?? Promise.reject(await notResumable(from, product.kind)),
    resumed: (record) => resume.resumed(record, deps),
    verb: product.verb,
  });
  const record = session.record;
  const given: RunOptions = {
    gpuIndex: record.gpuIndex,
    out: dir,
    python: record.fingerprint.python.executable,
    allowBusy: false,
    json,
  };
  return product.measure(session, resume.options(record, given), deps, startedUs);
}

/** What every run's --json prints first: the simulated marker, the run, its directory and its report. */
export function runJson<R extends MachineRecord>(
  session: Session<R>,
  report: string,
  rest: Readonly<Record<string, unknown>>,
): string {
  const run = session.record;
  return termJson({ ...simulatedJson(run.fingerprint), runId: run.id, dir: session.dir, report, ...rest });
}

/** What every run's text ends with: where the run and its report are. */
export function whereLines(dir: string, report: string): string {
  return `run: ${termText(dir)}\nreport: ${termText(report)}\n`;
}
