/**
 * The contract every command keeps: its flags (yargs option definitions, the one source of their
 * types), how argv becomes typed options or a UserError (`resolve`, pure), and how it runs.
 */
import type { Options, PositionalOptions } from 'yargs';
import type { AppDeps } from './deps.js';

/**
 * One flag as yargs takes it. A `number` flag reaches `resolve` as the text typed, so that a refusal
 * can quote it as given (yargs alone would turn 0x10 into 16); help still shows it as [number].
 */
export type Flag = Options & {
  type: 'string' | 'number' | 'boolean';
  /** The flag's new name, when this is its old one (see `renamedFlag`). */
  renamedTo?: string;
  /** Choices now spelled as a boolean flag of their own: `{ json: 'json' }` reads `--format json` as `--json`. */
  renamedChoices?: Readonly<Record<string, string>>;
};
export type Flags = Readonly<Record<string, Flag>>;
export type Positional = PositionalOptions & { type: 'string' };
export type Positionals = Readonly<Record<string, Positional>>;

type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;
type ValueOf<F> = F extends { type: 'boolean' }
  ? boolean
  : F extends { array: true }
    ? string[]
    : F extends { choices: ReadonlyArray<infer C> }
      ? C
      : string;
type Given<F> = F extends { demandOption: true } ? true : F extends { default: unknown } ? true : false;

type Renamed<F> = F extends { renamedTo: string } ? true : false;

/**
 * What `resolve` receives for a set of flags: camelCase keys, optional unless required or defaulted.
 * A renamed flag's old name is not among them: its value arrives under the new one.
 */
export type ArgsOf<F> = {
  -readonly [K in keyof F as Renamed<F[K]> extends true
    ? never
    : Given<F[K]> extends true
      ? CamelCase<K & string>
      : never]: ValueOf<F[K]>;
} & {
  -readonly [K in keyof F as Renamed<F[K]> extends true
    ? never
    : Given<F[K]> extends true
      ? never
      : CamelCase<K & string>]?: ValueOf<F[K]>;
};

/**
 * A flag's old name, kept working: --help marks it deprecated, and the command line reads its value
 * as the flag `to` (the new name), with one warning line.
 */
export function renamedFlag<const To extends string, const F extends Flag>(
  to: To,
  flag: F,
): F & { deprecated: string; renamedTo: To } {
  return { ...flag, deprecated: `use --${to}`, renamedTo: to };
}

/** A command's module: registered by name in cli/registry.ts and loaded only when it runs. */
export interface Command<F extends Flags = Flags, P extends Positionals = Positionals, O = unknown> {
  flags: F;
  /** The positional arguments in order, as named in the registry's usage (`gate <run>`). */
  positionals?: P;
  /** The words after `--` (bench's own workload command): only for a command that takes them. */
  rest?: boolean;
  /**
   * Whether stdout carries data for another program (JSON, CSV, a manifest) with these arguments:
   * then it is never folded to the terminal's width. Without it: `--json`, or `--format` csv or json.
   */
  printsData?: (args: Record<string, unknown>) => boolean;
  /** Printed at the end of the command's help: its exit codes. */
  epilogue?: string;
  /** argv → the command's options, or a UserError naming the bad value. No side effects but reading files named by flags. */
  resolve(args: ArgsOf<F> & ArgsOf<P> & { rest: string[] }): O | Promise<O>;
  run(options: O, deps: AppDeps): Promise<number>;
}

/** Defines a command with its argument types inferred from its flags. */
export function defineCommand<const F extends Flags, const P extends Positionals, O>(
  command: Command<F, P, O>,
): Command<F, P, O> {
  return command;
}

/** A command of any flags and options: what the registry holds. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds commands of every options type; each is called with its own.
export type AnyCommand = Command<any, any, any>;
