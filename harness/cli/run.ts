/**
 * The one boundary between argv and a command: parse, resolve, run, and turn a user's error into one
 * line and its exit code. Tests drive the CLI in process through `run(argv, deps)`.
 */

import type { AppDeps } from '../core/deps.js';
import { ExitCode, Interrupted, signalExitCode, UserError } from '../core/errors.js';
import { termText } from '../core/escape/terminal.js';
import { parseArgv } from './parse.js';

/** Runs argv as `gpushare` would and returns its exit code; errors that are not the user's propagate. */
export async function run(argv: readonly string[], deps: AppDeps): Promise<number> {
  try {
    const parsed = await parseArgv(argv, deps.terminal.isTty ? deps.terminal.columns : 110);
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
    const options = await command.resolve({ ...args, rest });
    // After resolve: a refusal stays the one line on stderr.
    for (const warning of parsed.warnings) deps.err(`gpushare: warning: ${warning}\n`);
    return await command.run(options, deps);
  } catch (error) {
    if (error instanceof UserError) {
      // Shown escaped: a message may quote a run's text (a path, a value read from run.json).
      deps.err(`gpushare: ${termText(error.message)}\n`);
      return error.exitCode;
    }
    if (error instanceof Interrupted) return signalExitCode(error.signal);
    throw error;
  }
}
