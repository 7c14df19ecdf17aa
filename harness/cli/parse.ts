/**
 * argv → one command and its raw arguments: yargs reads the flags the chosen command declares, and
 * answers --help and --version; every usage error becomes one line that names the fix.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import yargs, { type Argv } from 'yargs';
import { Parser } from 'yargs/helpers';
import type { AnyCommand, Flags, Positionals } from '../core/command.js';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { VERSION } from '../core/version.js';
import { SERVE_FILE } from '../record/kinds.js';
import { COMMANDS, type CommandEntry, GROUPS } from './registry.js';

/** What argv asked for: a command and its raw arguments, or text yargs already wrote (help, version). */
export type Parsed =
  | {
      kind: 'command';
      entry: CommandEntry;
      command: AnyCommand;
      args: Record<string, unknown>;
      /** One line each, for stderr: a flag given by its old name. */
      warnings: string[];
    }
  | { kind: 'printed'; text: string };

/** Keys yargs gives as arrays on purpose: --set is repeatable; `_` and `--` are the leftover words. */
const LEFTOVER = new Set(['_', '--', '$0']);

export async function parseArgv(argv: readonly string[], columns: number): Promise<Parsed> {
  const entry = chosenEntry(argv);
  const command = entry ? await (entry.serve && servesServer(argv) ? entry.serve() : entry.load()) : null;
  let chosen: Record<string, unknown> | null = null;
  const y = yargs([...argv])
    .scriptName('gpushare')
    .exitProcess(false)
    .parserConfiguration({ 'populate--': true, 'camel-case-expansion': true })
    .strict()
    .version(VERSION)
    .alias('v', 'version')
    .help()
    .alias('h', 'help')
    .wrap(Math.min(110, columns || 110))
    .fail((message, error) => {
      throw error instanceof UserError
        ? error
        : usageError(message ?? error?.message ?? 'bad arguments', argv, entry, command);
    });
  skipHelpCache(y);
  const register = (parent: Argv, e: CommandEntry, word: string) =>
    parent.command(
      `${word}${e.args ? ` ${e.args}` : ''}`,
      e.describe,
      (b) => (e === entry && command ? declare(b, command, e) : b),
      (args) => {
        chosen = args;
      },
    );
  for (const e of COMMANDS.filter((c) => !c.name.includes(' '))) register(y, e, e.name);
  for (const [group, describe] of Object.entries(GROUPS)) {
    const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
    y.command(group, describe, (g) => {
      for (const e of members) register(g, e, e.name.slice(group.length + 1));
      return g.demandCommand(
        1,
        `name a ${group} command: ${members.map((m) => m.name.slice(group.length + 1)).join(' or ')}`,
      );
    });
  }
  y.demandCommand(1, `name a command: ${[...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))].join(', ')}`);
  let printed = '';
  await y.parse([...argv], {}, (_error, _args, output) => {
    printed = output;
  });
  if (chosen === null || entry === null || command === null) return { kind: 'printed', text: printed };
  const args = withRawNumbers(chosen, argv, command.flags);
  refuseRepeatedOrEmpty(args, command);
  return { kind: 'command', entry, command, ...underNewNames(args, command.flags) };
}

/** Flags given by an old name (`renamedFlag`) or a choice by its old spelling (`renamedChoices`), moved to the new one, and a warning for each. */
export function underNewNames(
  args: Record<string, unknown>,
  flags: Flags,
): { args: Record<string, unknown>; warnings: string[] } {
  const out = { ...args };
  const warnings: string[] = [];
  for (const [name, flag] of Object.entries(flags)) {
    const choice = out[name];
    const to = typeof choice === 'string' ? flag.renamedChoices?.[choice] : undefined;
    if (to === undefined) continue;
    // The old spelling of a choice: its own flag set, this flag back to its default, one warning.
    for (const key of [to, camel(to)]) out[key] = true;
    for (const key of [name, camel(name)]) out[key] = flag.default;
    warnings.push(`--${name} ${String(choice)} is deprecated: use --${to}`);
  }
  for (const [old, flag] of Object.entries(flags)) {
    const to = flag.renamedTo;
    if (to === undefined || out[old] === undefined) continue;
    if (out[to] !== undefined)
      throw new UserError(
        `--${old} ${argText(String(out[old]))} and --${to} ${argText(String(out[to]))}: give --${to} only (--${old} is its old name)`,
      );
    for (const key of [to, camel(to)]) out[key] = out[old];
    for (const key of [old, camel(old)]) delete out[key];
    warnings.push(`--${old} is deprecated: use --${to}`);
  }
  return { args: out, warnings };
}

/** The registered command argv names, found before yargs runs so only its module is loaded. */
function chosenEntry(argv: readonly string[]): CommandEntry | null {
  const firstFlag = argv.findIndex((a) => a.startsWith('-'));
  const [first, second] = firstFlag === -1 ? argv : argv.slice(0, firstFlag);
  if (first === undefined) return null;
  return COMMANDS.find((c) => c.name === first || c.name === `${first} ${second ?? ''}`) ?? null;
}

/** --serve given (before any --), or --resume naming a server run's directory: the command's server variant. */
function servesServer(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const words = end === -1 ? argv : argv.slice(0, end);
  if (words.some((w) => w === '--serve' || w.startsWith('--serve='))) return true;
  const at = words.findIndex((w) => w === '--resume' || w.startsWith('--resume='));
  if (at === -1) return false;
  const dir = words[at]?.startsWith('--resume=') ? words[at].slice('--resume='.length) : words[at + 1];
  return dir !== undefined && existsSync(path.join(dir, SERVE_FILE));
}

function declare(b: Argv, command: AnyCommand, entry: CommandEntry): Argv {
  for (const [name, positional] of Object.entries((command.positionals ?? {}) as Positionals))
    b.positional(name, positional);
  b.options(command.flags);
  for (const [line, what] of entry.examples ?? []) b.example(line, what);
  if (command.epilogue) b.epilogue(command.epilogue);
  return b;
}

/**
 * A number flag's value as typed: yargs turns `0x10` into 16 and ` 5` into 5, so the same argv is
 * read again with those flags as strings, for `resolve` to check and quote.
 */
function withRawNumbers(args: Record<string, unknown>, argv: readonly string[], flags: Flags): Record<string, unknown> {
  const numbers = Object.entries(flags).filter(([, f]) => f.type === 'number');
  if (numbers.length === 0) return args;
  const raw = Parser([...argv], {
    string: [
      ...numbers.map(([n]) => n),
      ...Object.entries(flags)
        .filter(([, f]) => f.type === 'string')
        .map(([n]) => n),
    ],
    boolean: Object.entries(flags)
      .filter(([, f]) => f.type === 'boolean')
      .map(([n]) => n),
    configuration: { 'populate--': true, 'camel-case-expansion': true },
  });
  const out = { ...args };
  for (const [name] of numbers) {
    for (const key of [name, camel(name)]) {
      if (raw[key] === undefined) delete out[key];
      else out[key] = raw[key];
    }
  }
  return out;
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Refuses, for every command, the two flag shapes the options downstream would misread: a repeated
 * flag, which yargs gives as an array where a string is expected (a crash, or one of the values taken
 * without a word), and an empty value (`--out ''`, or `--out` with none), which as a path would mean
 * the current directory.
 */
function refuseRepeatedOrEmpty(args: Record<string, unknown>, command: AnyCommand): void {
  const positionals = Object.keys(command.positionals ?? {});
  for (const [key, value] of Object.entries(args)) {
    // camelCase keys are yargs' copies of the dashed ones.
    const variadic = ((command.positionals ?? {}) as Positionals)[key]?.array === true;
    if (LEFTOVER.has(key) || /[A-Z]/.test(key) || (command.flags as Flags)[key]?.array || variadic) continue;
    const name = positionals.includes(key) ? `<${key}>` : `--${key}`;
    if (Array.isArray(value)) {
      const times = value.length === 2 ? 'twice' : `${value.length} times`;
      throw new UserError(`${name} given ${times} (${value.map((v) => argText(String(v))).join(', ')}): give it once`);
    }
    // bench --serve --fleet <file>: the fleet file gives each server's command, so --serve stands alone.
    if (value === '' && !(key === 'serve' && args.fleet !== undefined))
      throw new UserError(`${name} '': needs a value, not an empty one`);
  }
}

/** yargs' own usage messages, made one line that names the fix (and the nearest flag or command). */
function usageError(
  message: string,
  argv: readonly string[],
  entry: CommandEntry | null,
  command: AnyCommand | null,
): UserError {
  const help = entry ? `gpushare ${entry.name} --help` : 'gpushare --help';
  // A misspelt flag comes first, whatever else is wrong: it is often why a required one is missing
  // (`plan --model 40`), and yargs reports a missing one or a missing <run> before it.
  const misspelt = command ? unknownFlagIn(argv, command) : null;
  if (misspelt !== null) return unknownFlag(misspelt, Object.keys(command?.flags as Flags), entry, help);
  const unknown = /^Unknown arguments?: (.+)$/.exec(message);
  if (unknown) return unknownArgument(unknown[1] ?? '', argv, entry, command, help);
  const missing = /^Missing required arguments?: (.+)$/.exec(message);
  const invalid = /^Invalid values:\s+Argument: ([\w-]+), Given: (.+), Choices: (.+)$/s.exec(message);
  if (invalid) {
    const choices = (invalid[3] ?? '').split(', ').map((c) => c.replace(/^"|"$/g, ''));
    return new UserError(
      `--${invalid[1]} ${argText((invalid[2] ?? '').replace(/^"|"$/g, ''))}: choose ${choices.slice(0, -1).join(', ')} or ${choices.at(-1)} (see ${help})`,
    );
  }
  if (missing) {
    const names = (missing[1] ?? '').split(', ');
    return new UserError(
      `${entry?.name ?? 'this command'} needs ${names.map((n) => `--${n}`).join(', ')} (see ${help})`,
    );
  }
  const positionals = /^Not enough non-option arguments/.test(message)
    ? missingPositionals(argv, entry, command, help)
    : null;
  return positionals ?? new UserError(`${message} (see ${help})`);
}

/** yargs' "Unknown argument(s): <words>": a command that does not exist, a word no command takes, or a flag not declared. */
function unknownArgument(
  words: string,
  argv: readonly string[],
  entry: CommandEntry | null,
  command: AnyCommand | null,
  help: string,
): UserError {
  if (entry === null && !argv[0]?.startsWith('-')) return unknownCommand(argv[0] ?? '', argv[1]);
  const word = words.split(', ')[0] ?? '';
  const given = argv.find((a) => a.replace(/^-+/, '').split('=')[0] === word) ?? word;
  if (!given.startsWith('-'))
    return new UserError(`unexpected argument ${argText(given)}${entry ? ` for ${entry.name}` : ''} (see ${help})`);
  return unknownFlag(word, command ? Object.keys(command.flags as Flags) : ['help', 'version'], entry, help);
}

/** --word, which the command does not declare, and the nearest of its `flags`. */
function unknownFlag(word: string, flags: readonly string[], entry: CommandEntry | null, help: string): UserError {
  const near = nearest(word, flags);
  return new UserError(
    `unknown flag --${word}${entry ? ` for ${entry.name}` : ''}${near ? `: did you mean --${near}?` : ''} (see ${help})`,
  );
}

/** yargs' "Not enough non-option arguments": the command's required <positionals>, or no command at all; null: neither. */
function missingPositionals(
  argv: readonly string[],
  entry: CommandEntry | null,
  command: AnyCommand | null,
  help: string,
): UserError | null {
  if (entry) {
    const positionals: Positionals = command?.positionals ?? {};
    const needed = Object.keys(positionals).filter((p) => positionals[p]?.demandOption);
    if (needed.length > 0)
      return new UserError(`${entry.name} needs ${needed.map((n) => `<${n}>`).join(' ')} (see ${help})`);
  }
  return argv.length === 0 ? new UserError(`name a command (see gpushare --help)`) : null;
}

/** The first flag in argv (before `--`) that `command` does not declare, without its dashes; null if none. */
function unknownFlagIn(argv: readonly string[], command: AnyCommand): string | null {
  const flags = command.flags as Flags;
  const known = new Set(['help', 'h', 'version', 'v']);
  for (const [name, flag] of Object.entries(flags)) {
    known.add(name);
    known.add(camel(name));
    if (flag.type === 'boolean') known.add(`no-${name}`);
    for (const alias of [flag.alias ?? []].flat()) known.add(alias);
  }
  const end = argv.indexOf('--');
  for (const word of end === -1 ? argv : argv.slice(0, end)) {
    if (!word.startsWith('-') || /^-\d/.test(word)) continue;
    const name = word.replace(/^-+/, '').split('=')[0] ?? '';
    if (!known.has(name)) return name;
  }
  return null;
}

function unknownCommand(word: string, next: string | undefined): UserError {
  const group = GROUPS[word] !== undefined ? word : null;
  if (group) {
    const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `)).map((c) => c.name.slice(group.length + 1));
    const near = nearest(next ?? '', members);
    return new UserError(
      `unknown ${group} command ${argText(next ?? '')}${near ? `: did you mean ${group} ${near}?` : `: choose ${members.join(' or ')}`} (see gpushare ${group} --help)`,
    );
  }
  const names = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0] as string))];
  const near = nearest(word, names);
  return new UserError(
    `unknown command ${argText(word)}${near ? `: did you mean ${near}?` : ''} (see gpushare --help)`,
  );
}

/** The candidate nearest `word` (edit distance ≤ 2, or a prefix either way), or null. */
export function nearest(word: string, candidates: readonly string[]): string | null {
  let best: { name: string; distance: number } | null = null;
  for (const name of candidates) {
    const distance =
      name.startsWith(word) || word.startsWith(name) ? Math.min(1, editDistance(word, name)) : editDistance(word, name);
    if (distance <= 2 && (best === null || distance < best.distance)) best = { name, distance };
  }
  return best?.name ?? null;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/**
 * yargs renders the whole help text after running a command's handler, in case the command fails later
 * and help is to be shown with the error (~60 ms a start, in a CLI that starts for every test). Our
 * failures are one line without help, so that text is never read.
 */
function skipHelpCache(y: Argv): void {
  const internal = (y as unknown as { getInternalMethods(): { getUsageInstance(): { cacheHelpMessage(): void } } })
    .getInternalMethods()
    .getUsageInstance();
  internal.cacheHelpMessage = () => undefined;
}
