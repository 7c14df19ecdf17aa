/**
 * Text for a terminal: run-controlled strings (a GPU name, a reason, a workload's argv) reach stdout
 * and stderr with nothing a terminal would act on and nothing that reads as something else.
 */
import { escapedChar, shownEscaped, UNPRINTABLE } from './unprintable.js';

/** A value on one line of terminal output: every control, format and odd space (line breaks too) shown as `\uXXXX`. */
export function termText(text: string): string {
  return shownEscaped(text);
}

/**
 * A JSON document for stdout. JSON.stringify escapes C0 controls but writes C1 controls (U+009B is a
 * CSI to many terminals), bidi overrides and line separators raw: they become `\uXXXX` escapes too,
 * which read back to the same strings.
 */
export function termJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(UNPRINTABLE, (char) =>
    char === '\n'
      ? char
      : char
          .split('')
          .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
          .join(''),
  )}\n`;
}

/** Characters no POSIX shell treats specially: such an argument is printed as it is. */
const PLAIN = /^[\w@%+=:,./-]+$/;
const HAS_UNPRINTABLE = new RegExp(UNPRINTABLE.source, 'u');

/**
 * One argument as a POSIX shell would take it back: plain; else in single quotes; else, when it holds
 * an unprintable character, ANSI-C quoted ($'…', which bash, zsh and ksh read back to the same argument).
 */
export function argText(arg: string): string {
  if (PLAIN.test(arg)) return arg;
  if (!HAS_UNPRINTABLE.test(arg)) return `'${arg.replaceAll("'", "'\\''")}'`;
  return `$'${arg.replace(/[\\']/g, '\\$&').replace(UNPRINTABLE, escapedChar)}'`;
}

/** An argv as text that reads back unambiguously (a workload command comes from the user, verbatim). */
export function argvText(argv: readonly string[]): string {
  return argv.map(argText).join(' ');
}
