/**
 * Characters no output should carry as they are: controls (ESC would recolour or clear a terminal, CR
 * overwrite a line, most C0 controls make XML unparseable), format characters (bidi overrides reorder
 * text, zero-width ones hide it), separators other than the plain space (they look like one),
 * private-use, unassigned and lone surrogates. Each output context shows them the same way: `\uXXXX`.
 */

/** One unprintable character (global: for replace). */
export const UNPRINTABLE = /(?! )[\p{C}\p{Z}]/gu;

/** A character as `\uXXXX` (or `\UXXXXXXXX` beyond the BMP), which a reader sees and no terminal or parser acts on. */
export function escapedChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code > 0xffff ? `\\U${code.toString(16).padStart(8, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Every unprintable character of `text` shown as its escape, but those `keep` matches. */
export function shownEscaped(text: string, keep: RegExp | null = null): string {
  return text.replace(UNPRINTABLE, (char) => (keep?.test(char) ? char : escapedChar(char)));
}
