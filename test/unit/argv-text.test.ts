import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argText, argvText } from '../../harness/core/escape/terminal.js';

/**
 * Reads text back into words the way bash does for the three forms argvText writes: plain words,
 * '…' (with '\'' for a quote) and $'…' with \\, \', \uXXXX and \UXXXXXXXX. Anything else throws, so a
 * round trip proves the text is unambiguous.
 */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let i = 0;
  while (i < text.length) {
    const ch = text[i] ?? '';
    if (ch === ' ') {
      if (word !== null) words.push(word);
      word = null;
      i += 1;
      continue;
    }
    word ??= '';
    if (text.startsWith("$'", i)) {
      i += 2;
      while (text[i] !== "'") {
        if (i >= text.length) throw new Error(`unterminated $' in ${text}`);
        if (text[i] !== '\\') {
          word += text[i];
          i += 1;
          continue;
        }
        const escapeChar = text[i + 1];
        if (escapeChar === 'u') {
          word += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
        } else if (escapeChar === 'U') {
          word += String.fromCodePoint(parseInt(text.slice(i + 2, i + 10), 16));
          i += 10;
        } else if (escapeChar === '\\' || escapeChar === "'") {
          word += escapeChar;
          i += 2;
        } else {
          throw new Error(`unexpected escape \\${escapeChar} in ${text}`);
        }
      }
      i += 1;
    } else if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated ' in ${text}`);
      word += text.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '\\') {
      word += text[i + 1];
      i += 2;
    } else {
      if (!/[\w@%+=:,./-]/.test(ch)) throw new Error(`unquoted special character ${JSON.stringify(ch)} in ${text}`);
      word += ch;
      i += 1;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** What a terminal could act on or a reader could mistake: controls, format characters, odd spaces. */
const UNPRINTABLE = /(?! )[\p{C}\p{Z}]/u;

describe('argvText: an argv printed unambiguously', () => {
  it.each([
    [
      'a plain word stays as it is',
      ['python3', '/opt/gpushare/workloads/gemm.py', '--size', '4096', 'a=b,c:d@e%f+g'],
      'python3 /opt/gpushare/workloads/gemm.py --size 4096 a=b,c:d@e%f+g',
    ],
    ['a space is quoted', ['./my workload', '--x'], "'./my workload' --x"],
    [
      'shell syntax is quoted',
      ['$(rm -rf /)', '`id`', 'a;b', 'a|b', 'a&b', '>f', '*', '~', '#x', '!x', 'a"b', 'a\\b'],
      "'$(rm -rf /)' '`id`' 'a;b' 'a|b' 'a&b' '>f' '*' '~' '#x' '!x' 'a\"b' 'a\\b'",
    ],
    ['a single quote is closed, escaped and reopened', ["it's"], "'it'\\''s'"],
    ['an empty argument is visible', ['a', '', 'b'], "a '' b"],
    [
      'ESC (ANSI colours, clear screen) is escaped',
      ['\u001b[31mred\u001b[0m', '\u001b[2J'],
      "$'\\u001b[31mred\\u001b[0m' $'\\u001b[2J'",
    ],
    [
      'newline, carriage return, tab, backspace, DEL',
      ['a\nb', 'a\rb', 'a\tb', 'a\bb', 'a\u007fb'],
      "$'a\\u000ab' $'a\\u000db' $'a\\u0009b' $'a\\u0008b' $'a\\u007fb'",
    ],
    ['a C1 control (8-bit CSI)', ['\u009b31m'], "$'\\u009b31m'"],
    [
      'bidi overrides and zero-width characters',
      ['\u202eevil', 'a\u200bb', '\u2066x\u2069'],
      "$'\\u202eevil' $'a\\u200bb' $'\\u2066x\\u2069'",
    ],
    [
      'spaces other than the plain one, line separators',
      ['a\u00a0b', 'a\u2028b', 'a\u3000b'],
      "$'a\\u00a0b' $'a\\u2028b' $'a\\u3000b'",
    ],
    ['a character beyond the BMP: private use, tag', ['\u{f0000}', '\u{e0041}'], "$'\\U000f0000' $'\\U000e0041'"],
    ['quotes and backslashes beside an escape', ["a'\\\u001b"], "$'a\\'\\\\\\u001b'"],
    ['printable non-ASCII is kept, quoted', ['größe', '模型', '🚀'], "'größe' '模型' '🚀'"],
  ])('%s', (_what, argv, text) => {
    expect(argvText(argv)).toBe(text);
    expect(shellWords(text)).toEqual(argv);
  });

  it('reads back as the same argv, with nothing a terminal acts on, for any argument', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' })), (argv) => {
        const text = argvText(argv);
        expect(text).not.toMatch(UNPRINTABLE);
        expect(shellWords(text)).toEqual(argv);
      }),
      { numRuns: 2000 },
    );
  });

  it('escapes a lone surrogate too', () => {
    expect(argText('a\ud800b')).toBe("$'a\\ud800b'");
  });
});
