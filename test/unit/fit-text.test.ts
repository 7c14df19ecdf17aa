/** The one way output is fitted to a terminal: fitText, the width it is given, and command lines folded for a shell. */
import { describe, expect, it } from 'vitest';
import { commandLines, fitText, terminalColumns } from '../../harness/core/wrap.js';

const widest = (text: string) => Math.max(...text.split('\n').map((l) => [...l].length));

describe('fitText', () => {
  it('folds every line wider than the terminal at spaces, continuation lines indented', () => {
    const text = `${'word '.repeat(30).trim()}\nshort\n`;
    const fitted = fitText(text, 40);
    expect(widest(fitted)).toBeLessThanOrEqual(40);
    expect(fitted.split('\n')[1]).toMatch(/^ {2}word/);
    expect(fitted.endsWith('short\n')).toBe(true);
    expect(fitted.replace(/\n {2}/g, ' ')).toBe(text);
  });

  it('leaves alone a line drawn in place, and a label with its one word (a path)', () => {
    const bar = `\r\x1b[K${'x '.repeat(50)}`;
    expect(fitText(bar, 40)).toBe(bar);
    const results = `results: /${'very-long-directory/'.repeat(5)}run`;
    expect(fitText(results, 40)).toBe(results);
  });
});

describe('a folded command, fitted again', () => {
  it('stays one shell command when one of its words is wider than the terminal (a checkout at a long path)', () => {
    const words = ['python3', `/${'a-long-checkout-directory/'.repeat(3)}workloads/gemm.py`, '--size', '4096'];
    const fitted = fitText(commandLines(words, 40).join('\n'), 40);
    // Each line but the last ends in its backslash, so a shell reads the lines as the one command.
    expect(
      fitted
        .split('\n')
        .slice(0, -1)
        .every((l) => l.endsWith(' \\')),
    ).toBe(true);
    expect(fitted.replace(/ \\\n +/g, ' ').trim()).toBe(words.join(' '));
  });
});

describe('terminalColumns', () => {
  it("is the stream's width, else $COLUMNS, else 80", () => {
    expect(terminalColumns(120, { COLUMNS: '60' })).toBe(120);
    expect(terminalColumns(undefined, { COLUMNS: '60' })).toBe(60);
    expect(terminalColumns(0, {})).toBe(80);
    expect(terminalColumns(undefined, { COLUMNS: 'wide' })).toBe(80);
    expect(terminalColumns(undefined, { COLUMNS: '0' })).toBe(80);
  });
});

describe('commandLines', () => {
  it('folds a command between its words, each line but the last ending in a backslash', () => {
    const words = [
      'python3',
      '/a/long/path/to/workload.py',
      '--size',
      '4096',
      '--dtype',
      'fp16',
      '--iterations',
      '400',
    ];
    const lines = commandLines(words, 40);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(40);
    expect(lines.slice(0, -1).every((l) => l.endsWith(' \\'))).toBe(true);
    expect(lines.join('\n').replace(/ \\\n +/g, ' ')).toBe(`  ${words.join(' ')}`);
    expect(commandLines(['a', 'b'], 40)).toEqual(['  a b']);
  });
});
