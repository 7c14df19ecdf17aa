/**
 * Every figure in the tables of README.md's "## Measured" and of docs/results.md recomputes from the
 * committed run its table (or row) cites, through gpushare's own analysis: `analyze` for bench runs,
 * `scalingPoints` for a sweep's memory and host time, `capacityTable`, `mixCells` and its cell text; the
 * noise study's wall times from the `time` each run's console.txt kept, its shares measuring and start-up
 * seconds from the run's time account as bench's summary prints it, its gate results from the gate's
 * output kept beside the run. Each table's figures are accounted for: recomputed, or skipped with the
 * reason (no run records them), or the test fails naming them, so a number added to a table is checked
 * or listed here. Runs are found by the 6-hex suffix the docs cite them by, in results/ or evidence/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modesAt } from '../../harness/bench/analysis/alone.js';
import type { MetricAnalysis } from '../../harness/bench/analysis/types.js';
import { scalingPoints } from '../../harness/bench/outputs/scaling.js';
import { loadCapacityRun } from '../../harness/capacity/record.js';
import { capacityTable } from '../../harness/capacity/table.js';
import { LEGACY_GREEN_ALONE, mixCells } from '../../harness/mix/analysis.js';
import { keptText, overloadedText, ratioText } from '../../harness/mix/cell-text.js';
import { loadMixRun } from '../../harness/mix/record.js';
import { measuringPct, timeAccountText } from '../../harness/session/time-account.js';
import { CI_LEVEL } from '../../harness/stats/statistics.js';
import { ROOT } from '../helpers.js';
import {
  accountFor,
  type BenchRun,
  benchRun,
  type Check,
  range,
  recomputed,
  runDir,
  type Skip,
  type Skipped,
  tableIn,
  unchecked,
} from './doc-figures.js';

const README = 'README.md';
const RESULTS = 'docs/results.md';

const runs = new Map<string, BenchRun>();
/** A bench run its test has loaded, by the suffix the doc cites it by. */
function bench(suffix: string): BenchRun {
  const found = runs.get(suffix);
  if (found === undefined) throw new Error(`…-${suffix} was not loaded: its table cites no such run`);
  return found;
}
async function load(suffixes: Iterable<string>): Promise<void> {
  for (const suffix of suffixes) if (!runs.has(suffix)) runs.set(suffix, await benchRun(suffix));
}

/** The run ids a passage cites: `…-2c8cff`, or a path or link ending in one. */
const citedIn = (text: string) => new Set([...text.matchAll(/-([0-9a-f]{6})\b/g)].map((m) => m[1] as string));

const cite = (suffix: string) => `\`…-${suffix}\``;
const code = (text: string) => `\`${text}\``;
const fixed = (digits: number) => (x: number) => x.toFixed(digits);
const percent = (fraction: number, digits: number) => (fraction * 100).toFixed(digits);

/** What the tests of this file checked and skipped, for the summary printed at the end. */
const tallies: Array<{ table: string; checked: number; skipped: Skipped[] }> = [];

/** Every figure of the table accounted for; prints how many were recomputed and skipped. */
function expectAccounted(table: string, text: string, checks: readonly Check[], skips: readonly Skip[] = []): void {
  const { missing, stale, unaccounted, checked, skipped } = accountFor(text, checks, skips);
  // On failure: each check as recomputed that the doc does not hold, each skip that matches nothing, each figure left over.
  expect({ table, missing, stale, unaccounted }).toEqual({ table, missing: [], stale: [], unaccounted: [] });
  const skippedCount = skipped.reduce((n, s) => n + s.figures.length, 0);
  tallies.push({ table, checked, skipped });
  console.log(`${table}: ${checked} figures recomputed from the runs, ${skippedCount} skipped with a reason`);
  expect(checked).toBeGreaterThan(0);
}

/** The part of `file` from `from` to the next heading of level 1 or 2. */
function section(file: string, from: string): string {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const start = text.indexOf(from);
  if (start === -1) throw new Error(`${file}: no "${from}"`);
  const next = text.slice(start + from.length).search(/^#{1,2} /m);
  return next === -1 ? text.slice(start) : text.slice(start, start + from.length + next);
}

/** The metric ids of a verdict table's rows, in order. */
const rowIds = (table: string) => [...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1] as string);

/** A verdict table's verdict cell: the threshold's verdict and bounds, or — where no threshold grades the ratio. */
const verdictCell = (m: MetricAnalysis) => (m.threshold ? `${m.verdict} (${m.threshold.text})` : '—');

/** A ratio's median, its interval with the coverage it has, and (`halfWidth`) the half-width, as the verdict tables print them. */
function verdictRow(m: MetricAnalysis, halfWidth: boolean): Check {
  const s = m.stats;
  if (s.value === null || s.ci === null || s.confidence === null || s.halfWidth === null)
    throw new Error(`${m.metric.id}: no interval`);
  const [median, lo, hi] = [fixed(3)(s.value), fixed(3)(s.ci[0]), fixed(3)(s.ci[1])];
  const coverage = percent(s.confidence, 1);
  return halfWidth
    ? recomputed`| ${code(m.metric.id)} | ${median}× | [${lo}, ${hi}] (${coverage}%) | ±${percent(s.halfWidth, 2)}% | ${s.n} | ${verdictCell(m)} |`
    : recomputed`| ${code(m.metric.id)} | ${median}× | [${lo}, ${hi}] (${coverage}%) | ${s.n} | ${verdictCell(m)} |`;
}

/**
 * A default run's verdict table: a row per ratio it lists (every headline and graded one among them), then
 * MIG as the run records it.
 */
function expectVerdictTable(table: string, text: string, b: BenchRun, halfWidth: boolean, header: Check): void {
  const ids = rowIds(text).filter((id) => id !== 'mig');
  expect(ids).toEqual(expect.arrayContaining(b.analysis().verdicts.map((m) => m.metric.id)));
  const mig = b.run.modes.find((m) => m.mode === 'mig')?.status;
  expectAccounted(table, text, [
    header,
    ...ids.map((id) => verdictRow(b.metric(id), halfWidth)),
    recomputed`| \`mig\` | ${String(mig)} |`,
  ]);
}

describe('README.md, "## Measured": every figure of its tables recomputes from the run it cites', () => {
  const measured = section(README, '## Measured');

  it('the metric table, from the default run …-2c8cff', async () => {
    expect(citedIn(measured.slice(0, measured.indexOf('| metric |')))).toContain('2c8cff');
    await load(['2c8cff']);
    const header = recomputed`| metric | median | within-run ${CI_LEVEL * 100}% CI (coverage) | rounds | verdict |`;
    expectVerdictTable(
      'README metric table (…-2c8cff)',
      tableIn(README, '| metric | median |'),
      bench('2c8cff'),
      false,
      header,
    );
  });

  it("the mix table's this-H100 columns, from …-mix-35ef80 (training beside the victim at the load the text names)", async () => {
    const intro = measured.slice(measured.indexOf('A latency-critical service'), measured.indexOf('| mode | victim'));
    expect(intro).toContain('mix-35ef80');
    const mix = await loadMixRun(await runDir('35ef80'));
    if (mix === null) throw new Error('…-mix-35ef80 holds no mix.json');
    const loadPct = Number(/at (\d+)% of its capacity/.exec(intro)?.[1]);
    const cells = mixCells(mix).filter((c) => c.aggressor === 'train' && c.load * 100 === loadPct);
    const cell = (mode: string, threadPct: number | null = null) => {
      const found = cells.find((c) => c.mode === mode && c.threadPct === threadPct);
      if (found === undefined) throw new Error(`no ${mode} ${threadPct ?? ''} cell beside train at ${loadPct}%`);
      return found;
    };
    type Cell = ReturnType<typeof cell>;
    const p99 = (c: Cell) => (c.status === 'overloaded' ? overloadedText(c) : ratioText(c.p99));
    const green = cell('green');
    // Green's alone ran in its own slice (recorded before 2026-11-27): the row says so, and says its p99 was the highest kept up.
    expect(green.reason).toContain(LEGACY_GREEN_ALONE);
    const shown = [cell('timeslice'), cell('mps'), cell('mps', 25), cell('mps', 10), cell('streams'), green];
    const keptUp = shown.filter((c) => c.status === 'measured');
    expect(Math.max(...keptUp.map((c) => c.together?.p99.ms ?? 0))).toBe(green.together?.p99.ms);
    const row = (label: string, c: Cell) => recomputed`| ${label} | ${p99(c)} | ${keptText(c.kept)} |`;
    const capped = (c: Cell) => row(`MPS, training capped at ${c.threadPct}% threads`, c);
    const table = tableIn(README, '| mode | victim p99');
    const tally = new Set(
      table
        .split('\n')
        .slice(2)
        .map((line) => line.split(' | ').slice(3).join(' | ')),
    );
    expectAccounted(
      'README mix table, this-H100 columns (…-mix-35ef80)',
      table,
      [
        row('time-slicing', cell('timeslice')),
        row('MPS', cell('mps')),
        capped(cell('mps', 25)),
        capped(cell('mps', 10)),
        row('one process, victim on a high-priority stream', cell('streams')),
        recomputed`| one process, each tenant in a green context of its own SMs | ${ratioText(green.p99)} against the victim alone *in its own slice*, not on the whole GPU as every other row: not comparable (green's p99 beside training, ${green.together?.p99.ms.toFixed(2) ?? '?'} ms, was the highest of the rows that kept up) | ${keptText(green.kept)} (the same baseline) |`,
      ],
      [...tally].map((quote) => ({
        quote,
        reason:
          "tally-bench's published A100 figures (tally_results_demo/priority-aware-perf.csv), not a run of this repository",
      })),
    );
  });
});

describe('docs/results.md: every figure of its tables recomputes from the run it cites', () => {
  it('the default run …-e4176e: median, interval, coverage, half-width, rounds, verdict', async () => {
    const intro = section(RESULTS, 'Measured on an NVIDIA H100');
    expect(citedIn(intro.slice(0, intro.indexOf('| metric |')))).toContain('e4176e');
    await load(['e4176e']);
    const table = tableIn(RESULTS, '| metric | median | within-run CI (coverage) | half-width |');
    expectVerdictTable(
      'results.md default run table (…-e4176e)',
      table,
      bench('e4176e'),
      true,
      recomputed`| metric | median | within-run CI (coverage) | half-width | rounds | verdict |`,
    );
  });

  it('resnet18: each row from the run it cites', async () => {
    const table = tableIn(RESULTS, '| clients | time-sliced slowdown | MPS slowdown | run |');
    const cited = [...citedIn(table)];
    expect(cited.length).toBe(table.split('\n').length - 2);
    await load(cited);
    const slowdown = (m: MetricAnalysis) =>
      `${fixed(3)(m.stats.value ?? Number.NaN)}× ±${percent(m.stats.halfWidth ?? Number.NaN, 2)}%`;
    const rows = cited.map((suffix) => {
      const b = bench(suffix);
      const timeslice = b.metric('timeslice/custom/slowdown');
      const clients = b.analysis().comparisons.find((c) => c.comparison.id === timeslice.metric.comparisonId)
        ?.comparison.clientEnv.length;
      const report = `[${cite(suffix)}](../reports/${b.run.id}.md)`;
      return recomputed`| ${String(clients)} | ${slowdown(timeslice)} | ${slowdown(b.metric('mps/custom/slowdown'))} | ${report} |`;
    });
    expectAccounted('results.md resnet18 table', table, rows);
  });

  it('one alone for every mode …-7ef3af: the plain alone per count, each slowdown with its interval and its own-alone ratio', async () => {
    const intro = section(RESULTS, '## One alone for every mode');
    expect(citedIn(intro.slice(0, intro.indexOf('| clients |')))).toContain('7ef3af');
    await load(['7ef3af']);
    const b = bench('7ef3af');
    const sets = modesAt(b.analysis());
    const cell = (mode: string, k: number) => {
      const s = b.metric(`${mode}/infer@${k}/slowdown`).stats;
      const [value, lo, hi] = [s.value ?? Number.NaN, ...(s.ci ?? [Number.NaN, Number.NaN])].map(fixed(2));
      const own = b.metric(`${mode}/infer@${k}/solo-overhead`).stats.value ?? Number.NaN;
      return `${value}× [${lo}, ${hi}] · ${fixed(3)(own)}×`;
    };
    expectAccounted('results.md one-alone table (…-7ef3af)', tableIn(RESULTS, '| clients | plain alone, requests/s'), [
      recomputed`| clients | plain alone, requests/s in the ${String(sets[0]?.modes.length)} modes' rounds |`,
      ...sets.map((at) => {
        const alones = at.modes.map((m) => m.alonePerS);
        const range = `${fixed(0)(Math.min(...alones))}–${fixed(0)(Math.max(...alones))}`;
        const k = at.clients;
        return recomputed`| ${String(k)} | ${range} | ${cell('streams', k)} | ${cell('green', k)} | ${cell('timeslice', k)} | ${cell('mps', k)} |`;
      }),
    ]);
  });

  it('the client sweep …-01535a: per-client slowdown and aggregate throughput with their intervals', async () => {
    const intro = section(RESULTS, '## One baseline for every mode');
    expect(citedIn(intro.slice(0, intro.indexOf('| clients |')))).toContain('01535a');
    await load(['01535a']);
    const b = bench('01535a');
    const counts = b.analysis().metrics.flatMap((m) => /^streams\/infer@(\d+)\/slowdown$/.exec(m.metric.id)?.[1] ?? []);
    const interval = (id: string) => {
      const s = b.metric(id).stats;
      const [value, lo, hi] = [s.value ?? Number.NaN, ...(s.ci ?? [Number.NaN, Number.NaN])].map(fixed(2));
      return `${value}× [${lo}, ${hi}]`;
    };
    const cell = (mode: string, k: string) =>
      `${interval(`${mode}/infer@${k}/slowdown`)} / ${interval(`${mode}/infer@${k}/aggregate-throughput`)}`;
    expectAccounted(
      'results.md client sweep table (…-01535a)',
      tableIn(RESULTS, '| clients | one process (`streams`) |'),
      counts.map(
        (k) =>
          recomputed`| ${k} | ${cell('streams', k)} | ${cell('green', k)} | ${cell('timeslice', k)} | ${cell('mps', k)} |`,
      ),
    );
  });

  it('the tenancy sweep …-3485bb at its largest count: slowdown, throughput, p99, memory, host time', async () => {
    const intro = section(RESULTS, '## Many models on one GPU');
    expect(citedIn(intro.slice(0, intro.indexOf('| mode |')))).toContain('3485bb');
    const clients = Number(/At (\d+):\n\n\| mode \| per-tenant slowdown/.exec(intro)?.[1]);
    await load(['3485bb']);
    const points = scalingPoints(bench('3485bb').analysis()).filter((p) => p.clients === clients);
    const row = (label: string, mode: string) => {
      const p = points.find((x) => x.mode === mode);
      if (p === undefined) throw new Error(`…-3485bb measured no ${mode} at ${clients}`);
      const x2 = (v: number | null) => fixed(2)(v ?? Number.NaN);
      const mib = (v: number | null) => fixed(0)(v ?? Number.NaN);
      const us = (v: number | null) => fixed(1)(v ?? Number.NaN);
      return recomputed`| ${label} | ${x2(p.slowdown)}× ±${percent(p.slowdownHalfWidth ?? Number.NaN, 1)}% | ${x2(p.aggregate)}× | ${x2(p.p99Ratio)}× | ${mib(p.reservedPerProcessMiB)} MiB | ${mib(p.overheadPerProcessMiB)} MiB | ${us(p.stepHostSoloUs)} → ${us(p.stepHostContendedUs)} |`;
    };
    expectAccounted('results.md tenancy table (…-3485bb)', tableIn(RESULTS, '| mode | per-tenant slowdown |'), [
      row('one process (`streams`)', 'streams'),
      row('`timeslice`', 'timeslice'),
      row('`mps`', 'mps'),
    ]);
  });

  it('capacity at a p99 target, from …-capacity-b8c91d', async () => {
    const intro = section(RESULTS, '## Many models on one GPU');
    const before = intro.slice(0, intro.indexOf('| clients | one process | green |'));
    expect(before.slice(before.lastIndexOf('Requests a second'))).toContain('capacity-b8c91d');
    const capacity = await loadCapacityRun(await runDir('b8c91d'));
    if (capacity === null) throw new Error('…-capacity-b8c91d holds no capacity.json');
    const rows = capacityTable(capacity);
    // A capacity bounded above by a rate that failed is the capacity; one bounded only by invalid or untried rates is at least it.
    const capacityOf = (mode: string, clients: number) => {
      const r = rows.find((x) => x.mode === mode && x.clients === clients);
      if (r?.capacityQps == null) throw new Error(`…-capacity-b8c91d: no ${mode} capacity at ${clients}`);
      return `${r.above === 'failed' ? '' : '≥ '}${r.capacityQps.toFixed(0)}`;
    };
    const counts = [...new Set(rows.map((r) => r.clients))];
    expectAccounted(
      'results.md capacity table (…-capacity-b8c91d)',
      tableIn(RESULTS, '| clients | one process | green |'),
      counts.map(
        (k) =>
          recomputed`| ${String(k)} | ${capacityOf('streams', k)} | ${capacityOf('green', k)} | ${capacityOf('timeslice', k)} | ${capacityOf('mps', k)} |`,
      ),
    );
  });

  it('the noise study: wall times, shares measuring, start-up, rounds and gate results of the runs it cites', async () => {
    const table = tableIn(RESULTS, '| source | measured | remedy | before → after |');
    // Every cited run the store or results/ holds; the two the table says were never committed are not there.
    const cited = [...citedIn(table)];
    const absent = ['13a95e', 'f5ed28'];
    await load(cited.filter((s) => !absent.includes(s)));
    expectAccounted('results.md noise table', table, noiseChecks(), NOISE_SKIPS);
  });
});

afterAll(() => {
  const checked = tallies.reduce((n, t) => n + t.checked, 0);
  const skipped = tallies.flatMap((t) => t.skipped);
  const reasons = new Map<string, number>();
  for (const s of skipped) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + s.figures.length);
  console.log(
    [
      `doc tables: ${checked} figures recomputed in ${tallies.length} tables, ${skipped.reduce((n, s) => n + s.figures.length, 0)} skipped:`,
      ...[...reasons].map(([reason, n]) => `  ${n} — ${reason}`),
    ].join('\n'),
  );
});

// ---- The noise study (docs/results.md, "Where the noise comes from") ----

/** What bench's summary printed of a run's time account ("measuring: 46 s of 82 s (56%); client start-up …"), in parts. */
function accountOf(suffix: string) {
  const account = bench(suffix).run.timeAccount;
  if (account === undefined) throw new Error(`…-${suffix} recorded no time account`);
  const parts =
    /^measuring: (\S+) s of (\S+) s \((\d+)%\); client start-up and warm-up (\S+) s, harness between trials (\S+) s, outside comparisons (\S+) s$/.exec(
      timeAccountText(account),
    );
  if (parts === null) throw new Error(`the time account's line changed: ${timeAccountText(account)}`);
  const part = (i: number) => parts[i] ?? '';
  return {
    windows: part(1),
    measuring: part(3),
    startup: part(4),
    harness: part(5),
    outside: part(6),
    outsideWindows: (100 - measuringPct(account)).toFixed(0),
  };
}

/**
 * The wall time the docs quote: `time`'s real time after the command (the run's console.txt), in tenths of
 * a second, rounded half up as the docs round it (1m39.850s is 99.9 s).
 */
function wallTenths(suffix: string): number {
  const printed = readFileSync(path.join(bench(suffix).dir, 'console.txt'), 'utf8');
  const reals = [...printed.matchAll(/^real\t(\d+)m(\d+)\.(\d{3})s$/gm)];
  if (reals.length !== 1) throw new Error(`…-${suffix}: console.txt holds ${reals.length} "real" lines of time`);
  const [min, s, ms] = [1, 2, 3].map((i) => Number((reals[0] as RegExpMatchArray)[i]));
  return Math.round(((min ?? Number.NaN) * 60_000 + (s ?? Number.NaN) * 1000 + (ms ?? Number.NaN)) / 100);
}

/** A run's wall time, share measuring and time account, each as the noise table writes it. */
function timed(suffix: string) {
  const tenths = wallTenths(suffix);
  return {
    ...accountOf(suffix),
    s: (tenths / 10).toFixed(1),
    min: `${Math.floor(tenths / 600)} min ${((tenths % 600) / 10).toFixed(1)}`,
  };
}

/** What `gpushare gate` printed against a baseline, kept beside the run as gate-vs-<baseline>.txt. */
function gateOf(suffix: string, baseline: string) {
  const text = readFileSync(path.join(bench(suffix).dir, `gate-vs-${baseline}.txt`), 'utf8');
  const rows = [...text.matchAll(/^(\S+)\s.*\s([+-]\d+\.\d)% \[[^\]]*\] (\w+)$/gm)].map((m) => ({
    metric: m[1] as string,
    change: (m[2] as string).replace('-', '−'),
    status: m[3] as string,
  }));
  const exit = /^exit (\d+):/m.exec(text)?.[1];
  if (exit === undefined || rows.length === 0) throw new Error(`…-${suffix}/gate-vs-${baseline}.txt: no gate output`);
  const row = (metric: string) => {
    const found = rows.find((r) => r.metric === metric);
    if (found === undefined) throw new Error(`the gate of …-${suffix} shows no ${metric}`);
    return found;
  };
  return { exit, unclear: String(rows.filter((r) => r.status === 'unclear').length), row };
}

/** A ratio's CI half-width in per cent, to `digits`; its rounds. */
const halfWidth = (suffix: string, id: string, digits: number) =>
  percent(bench(suffix).metric(id).stats.halfWidth ?? Number.NaN, digits);
const rounds = (suffix: string, id: string) => String(bench(suffix).metric(id).stats.n);
/** The smallest whole per cent every headline's half-width lies within ("every headline within ±2%"). */
const headlinesWithin = (suffix: string) =>
  String(
    Math.ceil(
      Math.max(
        ...bench(suffix)
          .analysis()
          .metrics.filter((m) => m.metric.headline)
          .map((m) => 100 * (m.stats.halfWidth ?? Number.POSITIVE_INFINITY)),
      ),
    ),
  );
/** Why a comparison stopped adding rounds, in words ("time budget"); how many comparisons stopped so. */
const stopOf = (suffix: string, comparison: string) =>
  bench(suffix)
    .run.stops.find((s) => s.comparisonId === comparison)
    ?.reason.replace('-', ' ') ?? 'none';
const stoppedBy = (suffix: string, reason: string) =>
  String(bench(suffix).run.stops.filter((s) => s.reason === reason).length);
const oneOf = (n: string) => (n === '1' ? 'one' : n);

const SPIN = 'streams/spin/speedup-k2';
const GEMM = 'timeslice/gemm/slowdown';
const PIPELINE = 'streams/pipeline/pinned-speedup-k2';
const MPS_INFER = 'mps/infer/slowdown';
const TIMESLICE_INFER = 'timeslice/infer/slowdown';

const NOT_KEPT = '…-13a95e was never committed (the table says so): nothing to recompute from';
const UNNAMED = 'the passage names no run for it';
const CV_PY =
  "a CV that studies/issue10/cv.py prints from runs' trials (population SD over each round's first trials), a Python study whose arithmetic gpushare's analysis does not share";
const OLD_RUNS = 'the old way run it compares with is not cited (its run is not in the store)';

/** "72.4 s, 61% (`…-ed51c9`": a run's wall time and share measuring where the table cites it ("3 min 37.2 s" with `min`). */
function timedCite(suffix: string, min = false): string {
  const t = timed(suffix);
  return `${min ? t.min : t.s} s, ${t.measuring}% (${cite(suffix)}`;
}

/**
 * The noise table's figures that runs record, as the table words them. Two rows name no run: the
 * window-length and copies rows' half-widths are those of …-d4099d (500 ms windows), …-e4176e and
 * …-c263f1 (250 ms), which the row before cites, and match to the digit; the sweep row's "before" is the
 * sweep and resnet18 runs the row before cites.
 */
function noiseChecks(): Check[] {
  const [t, w, g] = [timed, timedCite, gateOf];
  const gemm = (s: string) => halfWidth(s, GEMM, 2);
  const config = (s: string) => bench(s).run.config;
  const finalGates = ['bf4273', '6277d7'].flatMap((s) => ['859719', 'ed828a'].map((b) => g(s, b)));
  const cpus = ['3245f0', 'bda126'].map((s) => String(bench(s).run.fingerprint.host?.allowedCpus?.length));
  // "across these slots": the new way's default runs the row cites after …-653dbd.
  const slots = ['7d4aa9', '3245f0', 'bda126', '3d5d26', '13ceb9', '924ef0', '5c5577', '263513', '2fa6a0', '7d5d1d'];
  slots.push('6ceef7', '01c1fc', '3acf33', '651a08', 'a2cb2b', 'e6a982');
  const fleetBand =
    "the fleet report's band over every resnet18 run in the store ([2.407, 2.660] by gpushare fleet report evidence), not a cited run's";
  return [
    // window length, copies, the 5-round interval
    recomputed`±${gemm('d4099d')}% in ${rounds('d4099d', GEMM)} rounds → ±${range(['c263f1', 'e4176e'].map(gemm))}% in ${range(['c263f1', 'e4176e'].map((s) => rounds(s, GEMM)))} |`,
    recomputed`| ${range(['e4176e', 'c263f1'].map((s) => String(config(s).windowMs)))} ms windows: more rounds`,
    recomputed`±${halfWidth('d4099d', PIPELINE, 1)}% → ±${range(['e4176e', 'c263f1'].map((s) => halfWidth(s, PIPELINE, 2)))}% |`,
    recomputed`at least ${String(config('e4176e').roundPolicy.minRounds)} rounds`,
    // start-up and the harness between trials
    recomputed`the old way spent ${t('e34b0e').startup} s starting clients, ${t('e34b0e').harness} s between trials and ${t('e34b0e').outside} s before the first comparison (${cite('e34b0e')})`,
    recomputed`| ${t('e34b0e').outsideWindows}% of the default suite's wall time outside windows |`,
    recomputed`release lead ${String(config('e34b0e').releaseLeadMs)} → ${String(config('ed51c9').releaseLeadMs)} ms`,
    recomputed`| ${t('e34b0e').s} s, ${t('e34b0e').measuring}% measuring → ${w('ed51c9')}, gated \`${g('ed51c9', 'e34b0e').unclear === '0' ? 'unchanged' : 'unclear'}\` on every headline against ${cite('e34b0e')})`,
    recomputed`at the final code ${t('034eeb').s} s, ${t('034eeb').measuring}% → ${t('eb00d1').s} s, ${t('eb00d1').measuring}% (${cite('eb00d1')} against ${cite('034eeb')}: exit ${g('eb00d1', '034eeb').exit}, but mps/infer \`${g('eb00d1', '034eeb').row(MPS_INFER).status}\`, ${g('eb00d1', '034eeb').row(MPS_INFER).change}%`,
    recomputed`measured infer ${unchecked('1–2.5', 'a mean over the switched and old runs of that day, not one run or gate')}% higher`,
    // the second day
    recomputed`${unchecked('80.5', NOT_KEPT)} s, ${unchecked('55', NOT_KEPT)}% measuring → ${t('5c93e0').s} s, **${t('5c93e0').measuring}%** (${cite('5c93e0')}; ${t('5c93e0').startup} s start-up, ${t('5c93e0').harness} s harness, ${t('5c93e0').outside} s outside)`,
    recomputed`as ${cite('348b58')} (${t('348b58').s} s, ${t('348b58').measuring}%) was`,
    recomputed`${w('4c07c5')}) → ${w('9f9de4')}, ${t('9f9de4').windows} s of windows: ${stoppedBy('9f9de4', 'time-budget')} comparisons ran to their time budget), gated exit ${g('9f9de4', '4c07c5').exit} with ${g('9f9de4', '4c07c5').unclear} headlines \`unclear\``,
    recomputed`the old way's CIs ±${unchecked('2–4', 'approximate, over some headlines of …-ed828a and …-859719 (they span ±0.09–4.47%)')}%)`,
    recomputed`${w('ed828a')}) and ${w('859719')}) against ${w('bf4273')}) and ${w('6277d7')}), every gate exit ${range(finalGates.map((x) => x.exit))} with ${range(finalGates.map((x) => x.unclear))} headlines \`unclear\`, both ways (against ${cite('ed828a')}: ${range([g('bf4273', 'ed828a').unclear, g('6277d7', 'ed828a').unclear])} each)`,
    recomputed`${w('b81d07')}) against **${t('c9a2f1').s} s, ${t('c9a2f1').measuring}%** (${cite('c9a2f1')}: every headline within ±${headlinesWithin('c9a2f1')}%, the graded ones ±${halfWidth('c9a2f1', SPIN, 2)}% and ±${halfWidth('c9a2f1', GEMM, 2)}%; gated \`unchanged\` on every headline, exit ${g('c9a2f1', 'b81d07').exit})`,
    recomputed`${w('c7329b')}, timeslice/infer \`${g('c7329b', 'b81d07').row(TIMESLICE_INFER).status}\`, ${g('c7329b', 'b81d07').row(TIMESLICE_INFER).change}%)`,
    recomputed`resnet18 example ${unchecked('88.5', OLD_RUNS)} s → ${t('254b44').s} s (${cite('254b44')}); infer sweep ${unchecked('4 min 44.7', OLD_RUNS)} s → ${t('645db2').min} s (${cite('645db2')}, start-up ${unchecked('122', OLD_RUNS)} → ${t('645db2').startup} s)`,
    recomputed`the windows themselves: ${unchecked('51–75', 'a range over runs the row does not list')} s on this machine, where the rounds a ±${percent(config('5c93e0').roundPolicy.gradedCiTarget, 0)}% or ±${percent(config('5c93e0').roundPolicy.ciTarget, 0)}% CI needs`,
    // start-up of sweeps and custom commands
    recomputed`| the sweep ${t('645db2').startup} s of start-up, the resnet18 example ${t('254b44').startup} s |`,
    recomputed`sweep ${t('645db2').min} s → **${t('5634df').min} s**, ${t('5634df').measuring}% measuring (${cite('5634df')};`,
    recomputed`noisier slots ${t('6fa4f9').min} s (${cite('6fa4f9')}, cold page cache), ${t('2bd117').min} s (${cite('2bd117')}:`,
    recomputed`${t('93b943').min} s and ${t('70498f').min} s (${cite('93b943')}, ${cite('70498f')}, ${range(['93b943', '70498f'].map((s) => t(s).startup))} s of start-up`,
    recomputed`**${t('f9deae').min} s**, ${t('f9deae').measuring}% (${cite('f9deae')}));`,
    recomputed`resnet18 ${t('254b44').s} s → **${t('7c52ef').s} s** (${cite('7c52ef')}), **${t('b93542').s} s** (${cite('b93542')}) and at the final code **${t('c0731d').s} s** (${cite('c0731d')},`,
    recomputed`its mps/custom@4 slowdown, ${fixed(2)(bench('c0731d').metric('mps/custom@4/slowdown').stats.value ?? Number.NaN)}× against its band for the resnet18 runs, ${unchecked('2.41–2.66', fleetBand)}×`,
    recomputed`gated exit ${range([g('14d0f1', 'aaccd5').exit, g('7b8e38', '67805a').exit])} against the old way each time`,
    recomputed`(${cite('14d0f1')} against ${cite('aaccd5')}; at the final code ${cite('7b8e38')}, ${t('7b8e38').s} s, ${t('7b8e38').measuring}%, against ${cite('67805a')}, ${t('67805a').s} s, ${t('67805a').measuring}%)`,
    // at 1e8f500, then after fc3273a
    recomputed`default **${t('653dbd').s} s, ${t('653dbd').measuring}%** (${cite('653dbd')}: every headline within ±${headlinesWithin('653dbd')}%, the graded ones ±${halfWidth('653dbd', SPIN, 1)}% and ±${halfWidth('653dbd', GEMM, 1)}%; ${t('653dbd').startup} s start-up, ${t('653dbd').harness} s harness, ${t('653dbd').outside} s outside)`,
    recomputed`${w('7d4aa9')}, timeslice/gemm stopped on its ${stopOf('7d4aa9', 'timeslice/gemm')} at ±${halfWidth('7d4aa9', GEMM, 1)}%), both gated \`unchanged\` on every headline, exit ${range([g('653dbd', '8def0b').exit, g('7d4aa9', '8def0b').exit])}`,
    recomputed`the old way's ${w('8def0b')}: ${t('8def0b').startup} s start-up, ${t('8def0b').harness} s harness, ${t('8def0b').outside} s outside)`,
    recomputed`resnet18 **${t('ae9f51').s} s** (${cite('ae9f51')}, every CI on target); infer sweep **${t('00e26b').min} s**, ${t('00e26b').measuring}% (${cite('00e26b')})`,
    recomputed`on this VM all ${range(cpus)}, no quota`,
    recomputed`the old way ${w('6d6b2b')}); ${w('3245f0')}, timeslice/gemm stopped on its ${stopOf('3245f0', 'timeslice/gemm')} at ±${halfWidth('3245f0', GEMM, 1)}%; gated exit ${g('3245f0', '6d6b2b').exit}, streams/pipeline \`${g('3245f0', '6d6b2b').row(PIPELINE).status}\` at ${g('3245f0', '6d6b2b').row(PIPELINE).change}%, the rest \`unchanged\`)`,
    recomputed`${w('bda126')}, every CI on target; every headline \`unchanged\`, exit ${g('bda126', '6d6b2b').exit})`,
    // 21:40–21:50
    recomputed`(streams/pipeline's CI ±${range(['3d5d26', '13ceb9'].map((s) => halfWidth(s, PIPELINE, 0)))}% after ${range(['3d5d26', '13ceb9'].map((s) => rounds(s, PIPELINE)))} rounds)`,
    recomputed`the old way ${w('7696d8')}), ${w('3d5d26')}) and ${w('13ceb9')}), each gated exit ${range([g('3d5d26', '7696d8').exit, g('13ceb9', '7696d8').exit])} with ${oneOf(range([g('3d5d26', '7696d8').unclear, g('13ceb9', '7696d8').unclear]))} headline \`unclear\` (mps/infer ${g('3d5d26', '7696d8').row(MPS_INFER).change}%; streams/pipeline ${g('13ceb9', '7696d8').row(PIPELINE).change}%)`,
    recomputed`resnet18 ${t('fa60d5').s} s (${cite('fa60d5')}, every CI on target); infer sweep ${w('08ab8c', true)})`,
    // at e480d5d
    recomputed`the old way ${w('aaa98d')}); default ${w('924ef0')}, every CI on target; gated exit ${g('924ef0', 'aaa98d').exit}, streams/pipeline ${g('924ef0', 'aaa98d').row(PIPELINE).change}% and timeslice/infer ${g('924ef0', 'aaa98d').row(TIMESLICE_INFER).change}% \`unclear\`)`,
    recomputed`${w('5c5577')}, every CI on target; every headline \`unchanged\`)`,
    recomputed`resnet18 **${t('32295a').s} s** (${cite('32295a')}, every CI on target; its mps@2 solo arms ran ${unchecked('~8', "a comparison of solo arms across the resnet18 runs, approximate; no run's figure")}% faster`,
    recomputed`infer sweep **${t('b8f955').min} s**, ${t('b8f955').measuring}% (${cite('b8f955')}: ${stoppedBy('b8f955', 'ci-target')} of ${String(bench('b8f955').run.plan.length)} comparisons on their CI target)`,
    recomputed`the old way ${w('34989d')}) against ${w('263513')}), ${w('2fa6a0')}) and ${w('7d5d1d')}), every headline \`unchanged\` in all three gates`,
    recomputed`timeslice/gemm's ±${percent(config('263513').roundPolicy.gradedCiTarget, 0)}% took ${range(['34989d', '263513', '2fa6a0', '7d5d1d'].map((s) => rounds(s, GEMM)))} rounds`,
    recomputed`the old way ${w('9d1901')}) against ${w('6ceef7')}), ${w('01c1fc')}) and ${w('3acf33')}), gated exit ${range(['6ceef7', '01c1fc', '3acf33'].map((s) => g(s, '9d1901').exit))} (${range(['6ceef7', '01c1fc'].map((s) => g(s, '9d1901').unclear))} \`unclear\` in each of the first two)`,
    recomputed`the old way ${w('1bcad3')}) against ${w('651a08')}), ${w('a2cb2b')}) and ${w('e6a982')}), gated exit ${range(['651a08', 'a2cb2b', 'e6a982'].map((s) => g(s, '1bcad3').exit))} (${range(['651a08', 'a2cb2b'].map((s) => g(s, '1bcad3').unclear))} \`unclear\` in the first two)`,
    recomputed`the default suite's windows took ${range(slots.map((s) => t(s).windows))} s across these slots (${t('653dbd').windows} s at`,
  ];
}

/** The noise table's figures no committed run records, with why. */
const NOISE_SKIPS: Skip[] = [
  { pattern: /\b\d{4}-\d{2}-\d{2}\b/g, reason: 'a date: when the runs were made, context' },
  { pattern: /\b\d{2}:\d{2}\b/g, reason: 'a time of day (UTC): when the runs were made, context' },
  {
    row: '| CPU steal',
    reason: 'measured with studies/noise.py (one inference loop alone), not a bench run',
  },
  { row: '| eager launch-bound', reason: 'measured with studies/noise.py (one inference loop alone), not a bench run' },
  { row: '| host latency', reason: `${CV_PY}; the request times name no run` },
  { row: '| pinning the client', reason: 'measured with studies/noise.py (one inference loop alone), not a bench run' },
  { quote: "(the GEMM's power-capped SM clock swings 1400–1950 MHz)", reason: UNNAMED },
  { quote: 'slowdown CV 1.6–1.7% at 500 ms, 0.88% at 1000 ms, 1.05% at 250 ms', reason: CV_PY },
  {
    row: '| a stray slow run',
    reason: `${CV_PY}, over issue 10's exploratory runs (studies/issue10/), and the fixed-work trial's 3 runs (code)`,
  },
  {
    quote:
      "the 2-stream time follows the host's PCIe traffic | 2-stream speedup CV 2.3–3.8% even at 256 chunks | 2 fp32 products per chunk, so 2 streams hide copies behind compute | 0.10–0.12%;",
    reason: `${CV_PY}, and the pipeline workload's parameters (code)`,
  },
  {
    quote: '| a 5-round "95% CI" | [min, max] of 5 rounds covers 93.75%',
    reason: 'the arithmetic of the old interval (1 − 2 × 0.5⁵ for 5 rounds), not a measurement',
  },
  {
    row: '| start-up: `import torch`',
    reason:
      "timings from studies/startup.py, the release lead before …-e4176e's code, and `time npm run bench` wall times no run kept (…-e4176e and …-c263f1 have no console.txt; the 141 s run is not named)",
  },
  {
    quote: 'a noisier H100: solo arms of launch-bound workloads varied 3.6–6.7% between rounds',
    reason: UNNAMED,
  },
  { quote: 'spent 20 s starting clients, 7.7 s between trials and 8.0 s outside comparisons', reason: NOT_KEPT },
  { quote: '| 45% of the default suite outside windows |', reason: NOT_KEPT },
  { quote: '(0.6–1 s → 0.1 s)', reason: UNNAMED },
  {
    quote: 'started cold (7–13 s each)',
    reason: 'approximate, and the passage names no run for it',
  },
  {
    quote:
      "torchvision's import took 6.0–6.3 s of a resnet18 client's start, inside setup (`import torchvision` pulls in `torch._dynamo` and sympy: 3.5 s)",
    reason: UNNAMED,
  },
  { quote: "the first comparison's client 0", reason: "a client's index, not a measurement" },
  {
    quote: "the adds' CUDA starts took 15–40% longer",
    reason: "the time account gives a comparison's start-up, not how long each added client's CUDA start took",
  },
  { quote: 'noisier slots 55.6, 46.3 and 54.3 s', reason: UNNAMED },
  {
    quote: 'Default runs at this code 62.7–96.0 s, 73–79% measuring (the windows alone 45–73 s)',
    reason: 'a range over runs the row does not list',
  },
  { quote: 'so ≤ 60 s wall', reason: 'a target, not a measurement' },
];
