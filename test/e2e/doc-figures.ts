/**
 * Checking a document's tables against the runs they cite (doc-tables.test.ts): what counts as a figure,
 * a template tag whose every `${}` is a value recomputed from a run (its own text may hold no figure), the
 * account of a table's figures (each recomputed, or skipped with a reason, or the test fails), and the
 * committed runs found by the 6-hex suffix docs cite them by (`…-2c8cff`), in results/ or the store.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import type { Analysis, MetricAnalysis } from '../../harness/bench/analysis/types.js';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { openRun, STORE_DIR, STORED_RUN_SUFFIX } from '../../harness/record/evidence.js';
import { ROOT } from '../helpers.js';

/**
 * A figure: digits standing alone, not inside a word (p99, H100, resnet18, a commit id) or a comparison's
 * name (@48); 3,267, a time (16:20) and a date (2026-11-24) are one figure each.
 */
const FIGURE = /(?<![\p{L}\d.@])\d+(?:[.,:-]\d+)*(?![\p{L}\d])/gu;

/** `text` as a reader reads its figures: code spans (run ids, metric names) and link targets (paths) hold none. */
const prose = (text: string) => text.replace(/`[^`\n]*`/g, ' ').replace(/\]\([^)\s]*\)/g, '] ');

export const figuresIn = (text: string): string[] => prose(text).match(FIGURE) ?? [];

/** A figure shown where it stands in a check but not recomputed, with why: no run records it. */
export class Unchecked {
  constructor(
    readonly text: string,
    readonly reason: string,
  ) {}
}
export const unchecked = (text: string, reason: string) => new Unchecked(text, reason);

export interface Skipped {
  figures: string[];
  reason: string;
}

/** Text a doc must hold, as recomputed: `checked` figures came from runs, `skipped` are shown unchecked. */
export interface Check {
  text: string;
  checked: number;
  skipped: Skipped[];
}

/**
 * The doc's text with its figures recomputed: each `${}` a value from a run (or `unchecked(…)`). The
 * template's own text may hold no figure, so no number passes as checked by being copied from the doc.
 */
export function recomputed(strings: TemplateStringsArray, ...values: Array<string | number | Unchecked>): Check {
  const copied = strings.flatMap(figuresIn);
  if (copied.length > 0)
    throw new Error(`a check's own text holds figures (${copied.join(', ')}): give each as a value from a run`);
  let text = strings[0] ?? '';
  let checked = 0;
  const skipped: Skipped[] = [];
  values.forEach((value, i) => {
    const shown = value instanceof Unchecked ? value.text : String(value);
    if (value instanceof Unchecked) skipped.push({ figures: figuresIn(shown), reason: value.reason });
    else checked += figuresIn(shown).length;
    text += shown + (strings[i + 1] ?? '');
  });
  // A code span cut in two would hide the figures after it from the account.
  if ((text.match(/`/g) ?? []).length % 2 !== 0) throw new Error(`a check cuts a code span in two: ${text}`);
  return { text, checked, skipped };
}

/** Figures of a table no run records: a quoted passage, every match of a global pattern, or whole rows (by their start). */
export type Skip = { reason: string } & ({ quote: string } | { pattern: RegExp } | { row: string });

/** The passages of `text` a skip takes out. */
function passagesOf(text: string, skip: Skip): string[] {
  if ('quote' in skip) return text.includes(skip.quote) ? [skip.quote] : [];
  if ('pattern' in skip) return text.match(skip.pattern) ?? [];
  return text.split('\n').filter((line) => line.startsWith(skip.row));
}

const skipText = (skip: Skip) => ('quote' in skip ? skip.quote : 'pattern' in skip ? String(skip.pattern) : skip.row);

/** A table of `file`: its lines from the header that starts with `header` to the first line that is not a row. */
export function tableIn(file: string, header: string): string {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const starts = lines.flatMap((line, i) => (line.startsWith(header) ? [i] : []));
  if (starts.length !== 1) throw new Error(`${file}: ${starts.length} tables whose header starts "${header}"`);
  const start = starts[0] as number;
  const end = lines.findIndex((line, i) => i > start && !line.startsWith('|'));
  return lines.slice(start, end === -1 ? undefined : end).join('\n');
}

export interface Account {
  /** Checks whose recomputed text the table does not hold: each as recomputed. */
  missing: string[];
  /** Skips that match nothing in the table any more. */
  stale: string[];
  /** Figures neither recomputed nor skipped, each with the text around it. */
  unaccounted: string[];
  checked: number;
  skipped: Skipped[];
}

const MASK = ' ⋯ ';

/** Every figure of `table`: in a check found in it, in a skip, or unaccounted. */
export function accountFor(table: string, checks: readonly Check[], skips: readonly Skip[]): Account {
  let rest = table;
  const account: Account = { missing: [], stale: [], unaccounted: [], checked: 0, skipped: [] };
  for (const check of checks) {
    if (!rest.includes(check.text)) {
      account.missing.push(check.text);
      continue;
    }
    rest = rest.replaceAll(check.text, MASK);
    account.checked += check.checked;
    account.skipped.push(...check.skipped);
  }
  for (const skip of skips) {
    const passages = passagesOf(rest, skip);
    if (passages.length === 0) account.stale.push(skipText(skip));
    for (const passage of passages) {
      account.skipped.push({ figures: figuresIn(passage), reason: skip.reason });
      rest = rest.replaceAll(passage, MASK);
    }
  }
  for (const line of prose(rest).split('\n'))
    for (const match of line.matchAll(FIGURE)) {
      const at = match.index ?? 0;
      account.unaccounted.push(`${match[0]} in "…${line.slice(Math.max(0, at - 40), at + 40)}…"`);
    }
  return account;
}

/** The committed runs by id: a reference run under results/ over its copy in the store, if both. */
function committedRuns(): Map<string, string> {
  const runs = new Map<string, string>();
  const store = path.join(ROOT, STORE_DIR);
  for (const name of readdirSync(store))
    if (name.endsWith(STORED_RUN_SUFFIX)) runs.set(name.slice(0, -STORED_RUN_SUFFIX.length), path.join(store, name));
  for (const name of readdirSync(path.join(ROOT, 'results'))) runs.set(name, path.join(ROOT, 'results', name));
  return runs;
}

let committed: Map<string, string> | undefined;

/** The run a doc cites as `…-<suffix>`: its directory (a stored run unpacked by openRun, as every command reads it). */
export async function runDir(suffix: string): Promise<string> {
  committed ??= committedRuns();
  const hits = [...committed].filter(([id]) => id.endsWith(`-${suffix}`));
  if (hits.length !== 1)
    throw new Error(
      `…-${suffix}: ${hits.length === 0 ? `no such run in results/ or ${STORE_DIR}/` : `${hits.length} runs end so`}`,
    );
  return openRun((hits[0] as [string, string])[1]);
}

/** A committed bench run, its analysis made once, when first asked for. */
export interface BenchRun {
  dir: string;
  run: Run;
  analysis: () => Analysis;
  metric: (id: string) => MetricAnalysis;
}

export async function benchRun(suffix: string): Promise<BenchRun> {
  const dir = await runDir(suffix);
  const run = await loadRun(dir);
  let analysis: Analysis | undefined;
  const analysed = () => (analysis ??= analyze(run));
  return {
    dir,
    run,
    analysis: analysed,
    metric(id) {
      const found = analysed().metrics.find((m) => m.metric.id === id);
      if (found === undefined) throw new Error(`${run.id} has no ratio ${id}`);
      return found;
    },
  };
}

/** A range as the docs write it: "12–17", or one value where all are the same (compared as numbers, shown as given). */
export function range(values: readonly string[]): string {
  const sorted = [...values].sort((a, b) => Number(a) - Number(b));
  const [low, high] = [sorted[0] ?? '', sorted.at(-1) ?? ''];
  return Number(low) === Number(high) ? low : `${low}–${high}`;
}
