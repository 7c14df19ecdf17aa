/**
 * Text for markdown (CommonMark with GitHub's tables, strikethrough and math): a run-controlled string
 * (a GPU name, a host name, a reason) stays inside the line or table cell it is written into, and reads
 * as the text it is. Harmless text (letters, digits, spaces, `.-:/(),+%×`, `_` inside a word) is left
 * as it is, so reports of ordinary runs do not change.
 */
import { shownEscaped } from './unprintable.js';

/** A line break of any kind: markdown would end the line (and with it a table row or a heading) there. */
const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/g;
/**
 * Backslash-escaped wherever they are: the escape itself, code spans, emphasis, HTML and comments
 * (`<!--`), table pipes, math.
 */
const ALWAYS = /[\\`*<|$]/g;
/** Strikethrough takes a pair of `~` runs: a lone `~` ("~10 ms") stays, two or more are all escaped. */
const TILDES = /~/g;
/** `_` opens or closes emphasis unless it stands between two letters or digits (CUDA_ERROR_OUT_OF_MEMORY is plain). */
const LOOSE_UNDERSCORE = /(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])/gu;
/** `](` would close a link's text and open its target; a `[` at the start could be a link definition or a task box. */
const LINK = /\](?=\()|^\[/g;
/** An entity reference (`&lt;`, `&#60;`) would be read as the character it names. */
const ENTITY = /&(?=#?[A-Za-z0-9]+;)/g;
/** What starts a block when the text starts a line (or a list item): a heading, a quote, a list item, a rule. */
const BLOCK_START = /^(?:#|>|[-+=](?=\s|$)|[-=](?=[-= \t]*$)|\d+[.)](?=\s|$))/;
/** A heading's closing `#`s (trailing spaces after them too) would be dropped when the text ends one. */
const CLOSING_HASHES = /(?<=\s)#(?=#*[ \t]*$)/;

/** Text on one line of markdown or in one table cell. */
export function mdText(text: string): string {
  return shownEscaped(
    text
      .replace(LINE_BREAK, ' ')
      .replace(/^[ \t]+/, '')
      .replace(ALWAYS, '\\$&')
      .replace(TILDES, (tilde, _at, all: string) => (all.indexOf('~') === all.lastIndexOf('~') ? tilde : '\\~'))
      .replace(LOOSE_UNDERSCORE, '\\_')
      .replace(LINK, '\\$&')
      .replace(ENTITY, '\\&')
      .replace(BLOCK_START, (start) => `${start.slice(0, -1)}\\${start.slice(-1)}`)
      .replace(CLOSING_HASHES, '\\#'),
  );
}

/** A backtick run longer than any in `text`, so nothing in it can close the span or block it opens. */
const fenceFor = (text: string, shortest: number) =>
  '`'.repeat(Math.max(shortest - 1, ...(text.match(/`+/g) ?? []).map((run) => run.length)) + 1);

/**
 * Text as a code span. In a table cell (`cell`) every pipe is escaped too: GitHub splits a row at an
 * unescaped pipe even inside a code span, and shows `\|` there as `|` (outside a table it would show the backslash).
 */
export function mdCode(text: string, where: 'line' | 'cell' = 'line'): string {
  const shown = shownEscaped(text.replace(LINE_BREAK, ' '));
  const body = where === 'cell' ? shown.replaceAll('|', '\\|') : shown;
  // Two backticks alone are no code span: an empty one holds a space.
  if (body === '') return '` `';
  const fence = fenceFor(body, 1);
  // A space inside each end: a span that starts or ends with a backtick, or with spaces at both ends (one of each is stripped).
  const pad = /^`|`$|^ (?=.*[^ ]).* $/.test(body) ? ' ' : '';
  return `${fence}${pad}${body}${pad}${fence}`;
}

/** Lines of text as a fenced code block (a fence longer than any backtick run in them), the writer's line breaks kept. */
export function mdFence(text: string): string {
  const body = shownEscaped(text, /\n/);
  const fence = fenceFor(body, 3);
  return `${fence}\n${body}${body.endsWith('\n') ? '' : '\n'}${fence}\n`;
}
