/** The project's markdown renders as written: every code fence it opens, it closes. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

const DOCS = [
  ...['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md'].map((f) => path.join(ROOT, f)),
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(ROOT, 'docs', f)),
];

/** The line numbers of fences left open: a fence opens with ``` (or ~~~) and closes with the same run. */
function unclosedFences(text: string): number[] {
  let open: { line: number; fence: string } | null = null;
  text.split('\n').forEach((line, i) => {
    const fence = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined) return;
    if (open === null) open = { line: i + 1, fence };
    else if (fence.startsWith(open.fence) && line.trim() === fence) open = null;
  });
  return open === null ? [] : [(open as { line: number }).line];
}

describe('markdown code fences', () => {
  it('finds a fence left open', () => {
    expect(unclosedFences('a\n```sh\nx\n```\n\n```\ny\n')).toEqual([6]);
    expect(unclosedFences('```\n```\n')).toEqual([]);
  });

  it.each(DOCS.map((f) => [path.relative(ROOT, f)]))('%s closes every fence it opens', (file) => {
    expect(unclosedFences(readFileSync(path.join(ROOT, file), 'utf8'))).toEqual([]);
  });
});

describe("the helper's serve() in the docs", () => {
  it.each(DOCS.map((f) => [path.relative(ROOT, f)]))(
    '%s names serve(name, build, args) only as the old form',
    (file) => {
      let heading = '';
      for (const line of readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
        if (line.startsWith('#')) heading = line;
        // `serve(name, build, args)` is the old form: a doc names it only as such (in the line or its section).
        if (line.includes('serve(name, build, args)'))
          expect([file, `${heading} ${line}`]).toEqual([file, expect.stringMatching(/\bold\b/i)]);
      }
    },
  );
});
