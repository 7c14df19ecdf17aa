/**
 * The one boundary between argv and a command: parse, resolve, run, and turn a user's error into one
 * line and its exit code. Tests drive the CLI in process through `run(argv, deps)`.
 */

import type { AppDeps } from '../core/deps.js';
import { ExitCode, Interrupted, signalExitCode, UserError } from '../core/errors.js';
import { termText } from '../core/escape/terminal.js';
import { fitText } from '../core/wrap.js';
import { parseArgv } from './parse.js';

/** How a message line starts: errors, refusals and notices, each one line however long. */
export const MESSAGE = 'gpushare: ';

/** Runs argv as `gpushare` would and returns its exit code; errors that are not the user's propagate. */
export async function run(argv: readonly string[], deps: AppDeps): Promise<number> {
  const columns = deps.terminal.columns;
  // A message line (`gpushare: …`: an error, a refusal, where a run was saved and the command that
  // resumes it) is kept whole, as the house rule has it: a script greps it, its command pastes whole,
  // and a terminal wraps it. Every other line is folded.
  const err = (text: string) =>
    deps.err(
      text
        .split('\n')
        .map((line) => (line.startsWith(MESSAGE) ? line : fitText(line, columns)))
        .join('\n'),
    );
  try {
    const parsed = await parseArgv(helpAsFlag(argv), columns);
    if (parsed.kind === 'printed') {
      if (parsed.text) deps.out(`${parsed.text}\n`);
      return ExitCode.ok;
    }
    const { command, args } = parsed;
    const rest = ((args['--'] as unknown[] | undefined) ?? []).map(String);
    if (rest.length > 0 && !command.rest)
      throw new UserError(
        `${parsed.entry.name} takes no command after --: drop "-- ${rest.join(' ')}" (see gpushare ${parsed.entry.name} --help)`,
      );
    // `bench --` alone would otherwise run the default suite, not the command the user meant to give.
    if (rest.length === 0 && argv.at(-1) === '--' && argv.indexOf('--') === argv.length - 1)
      throw new UserError(
        `nothing after --: give the workload command there, e.g. gpushare ${parsed.entry.name} -- python3 my_model.py, or drop the --`,
      );
    const options = await command.resolve({ ...args, rest });
    // After resolve: a refusal stays the one line on stderr.
    for (const warning of parsed.warnings) err(`gpushare: warning: ${warning}\n`);
    // Human text is folded to the terminal's width here, once for every command; data is left whole.
    const data =
      parsed.entry.laysOutItself === true ||
      (command.printsData ? command.printsData(args) : printsDataByDefault(args));
    const out = data ? deps.out : (text: string) => deps.out(fitText(text, columns));
    return await command.run(options, { ...deps, out, err });
  } catch (error) {
    if (error instanceof UserError) {
      // Shown escaped: a message may quote a run's text (a path, a value read from run.json).
      err(`gpushare: ${termText(error.message)}\n`);
      return error.exitCode;
    }
    if (error instanceof Interrupted) return signalExitCode(error.signal);
    throw error;
  }
}

/** `--json`, or `--format csv|json`: stdout is for another program. */
function printsDataByDefault(args: Record<string, unknown>): boolean {
  return args.json === true || args.format === 'csv' || args.format === 'json';
}

/** `gpushare help bench` as gh and kubectl read it: `gpushare bench --help`; `help` alone: `--help`. */
function helpAsFlag(argv: readonly string[]): readonly string[] {
  return argv[0] === 'help' ? [...argv.slice(1), '--help'] : argv;
}
