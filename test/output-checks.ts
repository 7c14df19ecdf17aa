/** What tests check an output with, per context: a markdown document's shape, XML 1.0's characters, a terminal's controls. */
import MarkdownIt from 'markdown-it';

/** Raw HTML on, as GitHub renders it: a comment or tag planted in a report shows up as an html token. */
export const markdown = new MarkdownIt({ html: true });

/** The text a markdown-it inline token shows, and the kinds of its children other than text. */
export function inlineOf(token: { children: Array<{ type: string; content: string }> | null }) {
  const children = token.children ?? [];
  return {
    text: children.map((c) => c.content).join(''),
    kinds: children.map((c) => c.type).filter((t) => t !== 'text' && t !== 'text_special'),
  };
}

/** A document's shape: every block token, and each inline token's children other than text. */
export function markdownShape(text: string): string[] {
  return markdown
    .parse(text, {})
    .map((t) => (t.type === 'inline' ? `inline(${inlineOf(t as never).kinds.join(',')})` : `${t.type}:${t.tag}`));
}

/** A character outside XML 1.0's Char production: one makes a document unparseable (fast-xml-parser's validator does not check). */
export const NOT_XML_CHAR = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

/** What a terminal acts on or reorders: C0 controls but the line feed, DEL and C1 controls, bidi marks and overrides. */
export const TERMINAL_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
