/** Text kept short enough to read: lines folded to an 80-column terminal, lists cut to their first few. */

/** Columns every console summary is laid out for. */
export const TERMINAL_COLUMNS = 80;

/**
 * One line folded at spaces into lines of at most `width` characters, continuation lines indented by
 * the line's own indent and `indent`; a word longer than a line stays whole (a path, a metric id).
 */
export function wrapLine(line: string, width = TERMINAL_COLUMNS, indent = '  '): string[] {
  if ([...line].length <= width) return [line];
  const lead = /^ */.exec(line)?.[0] ?? '';
  const words = line.slice(lead.length).split(' ');
  const next = `${lead}${indent}`;
  const lines: string[] = [];
  let current = lead;
  for (const word of words) {
    const start = lines.length === 0 ? lead : next;
    if (current.trim() === '') current = `${start}${word}`;
    else if ([...`${current} ${word}`].length <= width) current = `${current} ${word}`;
    else {
      lines.push(current);
      current = `${next}${word}`;
    }
  }
  lines.push(current);
  return lines;
}

/**
 * Text for a terminal of `columns`: every line longer than that folded by `wrapLine`. Lines drawn in
 * place (a carriage return or an escape sequence: the progress bar) are left as they are, since they
 * size themselves, and so is a label with its one word (a path). The one way every command's human output is fitted (cli/run.ts applies it).
 */
export function fitText(text: string, columns: number): string {
  return text
    .split('\n')
    .map((line) =>
      /[\r\x1b]/.test(line) || LABELLED_WORD.test(line) || SHELL_CONTINUED.test(line)
        ? line
        : wrapLine(line, columns).join('\n'),
    )
    .join('\n');
}

/** A label and one word (`results: <path>`): never parted, so that the path copies and parses whole. */
const LABELLED_WORD = /^ *[\w ]+: \S+$/;

/**
 * A line of a command folded for a shell (see commandLines), ending in " \\": folded again, its
 * backslash would land on a line of its own and the pasted command would end early. It is only longer
 * than the terminal where one word is (a long path), which no fold can shorten.
 */
const SHELL_CONTINUED = / \\$/;

/**
 * The terminal's width: the stream's own when it is a terminal, else $COLUMNS (a positive integer),
 * else TERMINAL_COLUMNS.
 */
export function terminalColumns(
  streamColumns: number | undefined,
  env: Readonly<Record<string, string | undefined>>,
): number {
  if (streamColumns !== undefined && streamColumns > 0) return streamColumns;
  const fromEnv = env.COLUMNS?.trim() ?? '';
  return /^[1-9]\d{0,4}$/.test(fromEnv) ? Number(fromEnv) : TERMINAL_COLUMNS;
}

/**
 * A command line (its words already quoted for a shell) as lines of at most `width` characters,
 * each but the last ending in " \\": folded so, it still runs when pasted into a shell.
 */
export function commandLines(words: readonly string[], width = TERMINAL_COLUMNS, lead = '  '): string[] {
  const lines: string[] = [];
  let current = lead;
  for (const word of words) {
    const start = lines.length === 0 ? lead : `${lead}  `;
    if (current.trim() === '') current = `${start}${word}`;
    else if ([...`${current} ${word} \\`].length <= width) current = `${current} ${word}`;
    else {
      lines.push(`${current} \\`);
      current = `${lead}  ${word}`;
    }
  }
  lines.push(current);
  return lines;
}

/** The first `shown` items joined with "; ", and how many more: a refusal or a note stays readable. */
export function shortList(items: readonly string[], shown = 3): string {
  const more = items.length - shown;
  return `${items.slice(0, shown).join('; ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}
