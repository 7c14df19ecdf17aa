/**
 * An argv as text that reads back unambiguously: each argument as a POSIX shell would take it, and
 * nothing that a terminal would act on (a workload command comes from the user, verbatim).
 */

/** Characters no POSIX shell treats specially: such an argument is printed as it is. */
const PLAIN = /^[\w@%+=:,./-]+$/;
/**
 * Characters printed as escapes: controls (ESC would recolour or clear the terminal, CR overwrite the
 * line), format characters (bidi overrides reorder text, zero-width ones hide it), separators other
 * than the plain space (they look like one), private-use, unassigned and lone surrogates.
 */
const UNPRINTABLE = /(?! )[\p{C}\p{Z}]/u;

/** One argument: plain; else in single quotes; else, when it holds an unprintable character, ANSI-C quoted ($'…'). */
export function argText(arg: string): string {
  if (PLAIN.test(arg)) return arg;
  if (!UNPRINTABLE.test(arg)) return `'${arg.replaceAll("'", "'\\''")}'`;
  // $'…' (bash, zsh, ksh) keeps the escapes visible as text, and pasted back gives the same argument.
  return `$'${arg.replace(/[\\']/g, '\\$&').replace(new RegExp(UNPRINTABLE, 'gu'), escaped)}'`;
}

export function argvText(argv: readonly string[]): string {
  return argv.map(argText).join(' ');
}

function escaped(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code > 0xffff ? `\\U${code.toString(16).padStart(8, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
