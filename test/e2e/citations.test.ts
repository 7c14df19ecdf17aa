/**
 * Every citation resolves in a clone (issue 46): each run id the README, CONTRIBUTING.md, ARCHITECTURE.md
 * and docs/ name is a committed run (the evidence store or results/), whole or in its `…-<suffix>` short
 * form; a run never committed is said to be so in the same paragraph; and every repository path they name,
 * as a link or in backticks, is a file or folder of the repository. No page mentions a branch other than main.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { citingPages } from '../../harness/cli/evidence-index.js';
import { STORED_RUN_SUFFIX } from '../../harness/record/evidence.js';
import { ROOT } from '../helpers.js';

const pages = [...citingPages(ROOT), 'evidence/README.md', 'test/fixtures/runs/README.md'];
const texts = new Map(pages.map((p) => [p, readFileSync(path.join(ROOT, p), 'utf8')]));

/** Every committed run's id: the store holds them all, and results/ copies of some. */
const committed = [
  ...new Set([
    ...readdirSync(path.join(ROOT, 'evidence'))
      .filter((f) => f.endsWith(STORED_RUN_SUFFIX))
      .map((f) => f.slice(0, -STORED_RUN_SUFFIX.length)),
    ...readdirSync(path.join(ROOT, 'results')),
  ]),
];

/** Words that say, in the paragraph that names it, that a run was never committed. */
const NEVER_COMMITTED = /never published|never committed|neither committed|not kept|were lost|exist nowhere/;

/** A page's paragraphs (blank-line separated; a table row or list item each its own), outside code blocks. */
function paragraphs(text: string): string[] {
  return text.replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, ' ')).split(/\n\s*\n|\n(?=\||- |\d+\. )/);
}

/** Run ids a paragraph names: whole (2026-11-24-h100-80gb-hbm3-e6a982) or short (…-e6a982, …-serve-501b6b). */
function runIdsIn(paragraph: string): { named: string; matches: string[] }[] {
  // A simulated run's id is an example of the form (the simulator's runs are never evidence).
  const whole = [...paragraph.matchAll(/\b\d{4}-\d{2}-\d{2}-[a-z0-9-]*?[0-9a-f]{6}\b/g)]
    .map((m) => m[0])
    .filter((id) => !id.includes('-simulated-'));
  const short = [...paragraph.matchAll(/…-((?:[a-z0-9]+-)*[0-9a-f]{6})\b/g)].map((m) => m[1] as string);
  return [
    ...whole.map((id) => ({ named: id, matches: committed.filter((c) => c === id) })),
    ...short.map((tail) => ({ named: `…-${tail}`, matches: committed.filter((c) => c.endsWith(`-${tail}`)) })),
  ];
}

/** The repository's top-level entries: a backticked path starting with one of them is a repository path. */
const TOP = new Set(readdirSync(ROOT).filter((f) => !['node_modules', 'dist', 'runs', '.git'].includes(f)));

/** Paths other projects hold, named on purpose (each says whose it is where it is named). */
const ELSEWHERE = new Set([
  // tally-bench's published results, which the README sets beside gpushare mix's.
  'tally_results_demo/priority-aware-perf.csv',
]);

/** Where a path relative to a folder the pages speak from may be: the root, harness/, bench's stages, workloads/. */
const BASES = ['', 'harness', 'harness/bench', 'workloads', 'workloads/gpushare_protocol', 'test'];

/** Backticked tokens that name a repository file or folder (templates, globs and git-ignored output left out). */
function pathsIn(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+)`/g)]
    .map((m) => (m[1] as string).replace(/:\d+(-\d+)?$/, '').replace(/[#?].*$/, ''))
    .filter((p) => !/[<>*{}…$|=]/.test(p) && !p.startsWith('/') && !p.startsWith('runs/') && !/^[a-z]+:/.test(p))
    .filter(
      (p) =>
        TOP.has(p.split('/')[0] as string) ||
        (p.includes('/') && /\.(ts|py|md|json|sh|ya?ml|mjs|cjs|txt|svg|toml)$/.test(p)),
    );
}

describe('citations in the pages a user reads', () => {
  it('name only committed runs, or say in words that a run never was', () => {
    const broken: string[] = [];
    let resolved = 0;
    for (const [page, text] of texts)
      for (const paragraph of paragraphs(text))
        for (const { named, matches } of runIdsIn(paragraph)) {
          if (matches.length === 1) resolved++;
          else if (matches.length > 1) broken.push(`${page}: ${named} names ${matches.length} runs`);
          else if (!NEVER_COMMITTED.test(paragraph)) broken.push(`${page}: ${named} is no committed run`);
        }
    console.log(`run ids resolved: ${resolved} in ${texts.size} pages`);
    expect(broken).toEqual([]);
    expect(resolved).toBeGreaterThan(100);
  });

  it('name only repository paths that exist, in links and in backticks', () => {
    const broken: string[] = [];
    let resolved = 0;
    for (const [page, text] of texts) {
      const here = path.dirname(page);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const file = (target as string).split('#')[0] as string;
        if (/^[a-z]+:/.test(file) || file === '') continue;
        if (existsSync(path.join(ROOT, here, file))) resolved++;
        else broken.push(`${page}: link ${target}`);
      }
      for (const p of pathsIn(text)) {
        if (ELSEWHERE.has(p)) continue;
        if (BASES.some((base) => existsSync(path.join(ROOT, base, p)))) resolved++;
        else broken.push(`${page}: \`${p}\``);
      }
    }
    console.log(`repository paths resolved: ${resolved} in ${texts.size} pages`);
    expect(broken).toEqual([]);
  });

  it('the architecture and contributing pages name only source files that exist, by bare name too', () => {
    // A bare `lifecycle.ts` or `rounds.ts` names a file in the folder the text is about: it must be a
    // file of the tree somewhere, so a file renamed or gone fails here until the page says so (issue 47).
    // The committed tree, not the working one: an ignored file of this checkout resolves nothing in a clone.
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const names = new Set(tracked.split('\n').map((f) => path.basename(f)));
    const broken: string[] = [];
    let resolved = 0;
    for (const page of ['ARCHITECTURE.md', 'CONTRIBUTING.md'])
      for (const [, token] of (texts.get(page) as string).matchAll(/`([\w.-]+\.(?:ts|py|mjs|cjs|sh))(?::[\d-]+)?`/g)) {
        if (names.has(token as string)) resolved++;
        else broken.push(`${page}: \`${token}\``);
      }
    console.log(`bare file names resolved: ${resolved} in ARCHITECTURE.md and CONTRIBUTING.md`);
    expect(broken).toEqual([]);
    expect(resolved).toBeGreaterThan(40);
  });

  it('mention no branch but main: only main is published', () => {
    for (const [page, text] of texts)
      expect([
        page,
        text.match(/evidence branch|`evidence` branch|\.\.\/gpushare-evidence|orphan branch|fetch origin evidence/g),
      ]).toEqual([page, null]);
  });
});
