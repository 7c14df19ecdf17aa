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

/** The first `shown` items joined with "; ", and how many more: a refusal or a note stays readable. */
export function shortList(items: readonly string[], shown = 3): string {
  const more = items.length - shown;
  return `${items.slice(0, shown).join('; ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}
