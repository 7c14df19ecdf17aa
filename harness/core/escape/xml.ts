/**
 * Text for XML (JUnit, SVG). XML 1.0 forbids most C0 controls, lone surrogates and U+FFFE/U+FFFF: one
 * of them makes the whole file unparseable, and CI drops it. They, and the other unprintable
 * characters, are shown as `\uXXXX`; then the five markup characters are escaped.
 */
import { shownEscaped } from './unprintable.js';

/** Tab, line feed and carriage return: XML allows them, and a writer's own multi-line text keeps them. */
const XML_WHITESPACE = /[\t\n\r]/;

/** A serialized document (an SVG as vega writes it, markup already escaped) with every unprintable character shown escaped. */
export function xmlChars(document: string): string {
  return shownEscaped(document, XML_WHITESPACE);
}

/** Text as element content; a carriage return as a character reference, which a parser keeps (a raw one it reads as a line feed). */
export function xmlText(text: string): string {
  return xmlChars(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\r/g, '&#13;');
}

/** Text as an attribute value: tabs and line feeds as character references too (a parser reads a raw one as a space). */
export function xmlAttr(text: string): string {
  return xmlText(text).replace(/[\t\n]/g, (c) => `&#${c.charCodeAt(0)};`);
}
