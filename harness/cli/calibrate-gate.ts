/**
 * `npm run calibrate:gate -- [<runs dir>] [--measured YYYY-MM-DD] [--out FILE]`: how often the gate calls
 * equal runs changed, and how small a change it catches, on committed default-suite runs (found by their
 * config, run directories or stored runs: by default the evidence store, evidence/). The runs are split
 * by how they were measured (the gate's comparability, and the harness generation: its release lead), and
 * each set of at least 4 is calibrated on its own. Every pair of runs (the earlier one the baseline) is
 * gated with the band learned from the other runs (both of the pair left out) and with the default floors,
 * and every run against random directories of other runs; each as A/A (nothing changed) and with a planted
 * slowdown of its shared arm (plant-slowdown.ts), re-analysed by bench's analysis.
 */
import { statSync, writeFileSync } from 'node:fs';
import { analyze } from '../bench/analysis/analyze.js';
import type { Analysis } from '../bench/analysis/types.js';
import { DEFAULTS } from '../bench/defaults.js';
import { BETWEEN_RUN_LEVEL, floorFor, logToRelative, sourceText } from '../bench/gate/bands.js';
import { type Change, comparability, gradedChanges } from '../bench/gate/gate.js';
import { measuredLoop, type Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { UserError } from '../core/errors.js';
import { openRun, runEntries, STORE_DIR } from '../record/evidence.js';
import { predictionHalfWidthLog, runSpread } from '../stats/between-runs.js';
import { mulberry32 } from '../stats/bootstrap.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { plantSlowdown } from './plant-slowdown.js';

/** The planted slowdown the issue's target names, and the share of pairs that must catch it. */
const PLANTED = 0.1;
const DETECT = 0.95;
const SPURIOUS_TARGET = 0.01;
/** Baseline-directory sizes tried, and how many random sets of each per candidate run. */
const SET_SIZES = [10, 20];
const SETS_PER_RUN = 20;
const SEED = 36;

const USAGE = 'usage: npm run calibrate:gate -- [<runs dir>] [--measured YYYY-MM-DD] [--out FILE]';

/** The command line: one directory (anywhere among the flags), --measured and --out with a value each. */
export function parseArgs(args: readonly string[]): { dir: string; measured?: string; out?: string } {
  const flags: Record<string, string> = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    if (arg !== '--out' && arg !== '--measured') throw new UserError(`${arg}: no such option (${USAGE})`);
    const value = args[i + 1];
    if (value === undefined || value.startsWith('--')) throw new UserError(`${arg} needs a value (${USAGE})`);
    flags[arg.slice(2)] = value;
    i++;
  }
  if (positionals.length > 1)
    throw new UserError(`give one directory of runs, not ${positionals.join(' and ')} (${USAGE})`);
  if (flags.measured !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(flags.measured))
    throw new UserError(`--measured ${flags.measured}: give a date as YYYY-MM-DD (${USAGE})`);
  return { dir: positionals[0] ?? STORE_DIR, ...flags };
}

let dir = STORE_DIR;
let measured: string | undefined;
let out: string | undefined;

/** A default-suite run: bench's default modes, workloads, clients, window and round policy. */
function isDefaultSuite(run: Run): boolean {
  const c = run.config;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return (
    run.status === 'complete' &&
    (measured === undefined || run.createdAt.startsWith(measured)) &&
    same(c.modes, DEFAULTS.modes) &&
    same(
      c.streamsWorkloads.map((w) => w.name),
      DEFAULTS.streamsWorkloads,
    ) &&
    same(
      c.contentionWorkloads.map((w) => w.name),
      DEFAULTS.contentionWorkloads,
    ) &&
    c.clients === DEFAULTS.clients &&
    c.clientCounts === undefined &&
    c.windowMs === DEFAULTS.windowMs &&
    c.cpuPin === DEFAULTS.cpuPin &&
    c.roundPolicy.minRounds === DEFAULTS.rounds &&
    c.roundPolicy.maxRounds === DEFAULTS.maxRounds &&
    c.roundPolicy.timeBudgetS === DEFAULTS.timeBudgetS &&
    /H100/.test(gpuAt(run.fingerprint, c.gpuIndex)?.name ?? '')
  );
}

/** The smallest set of runs a calibration is made from. */
const MIN_RUNS = 4;

/**
 * The default-suite runs in `dir`, split into sets measured alike: what the gate compares (GPU model, driver,
 * settings, protocol loop) and the harness generation (its release lead before each window, which moved
 * mps/gemm and mps/infer by 1–1.5%), largest set first, each in time order.
 */
async function loadRunSets(): Promise<Run[][]> {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new UserError(`${dir}: no such directory of runs (${USAGE}; the committed runs are in ${STORE_DIR}/)`);
  const runs: Run[] = [];
  for (const entry of await runEntries(dir)) {
    const run = await openRun(entry)
      .then(loadRun)
      .catch(() => null);
    if (run && isDefaultSuite(run)) runs.push(run);
  }
  const groups: Run[][] = [];
  for (const run of runs) {
    const group = groups.find(
      (g) =>
        comparability(run, g[0] as Run).length === 0 && run.config.releaseLeadMs === (g[0] as Run).config.releaseLeadMs,
    );
    if (group) group.push(run);
    else groups.push([run]);
  }
  return groups
    .sort((a, b) => b.length - a.length)
    .map((g) => g.sort((a, b) => a.createdAt.localeCompare(b.createdAt)));
}

/** One gating: the candidate run, its baseline runs and the runs its band is learned from (indices). */
interface Case {
  candidate: number;
  baselines: number[];
  history: number[];
}

interface Tally {
  cases: number;
  spurious: number;
  caught: number;
  /** Per case: how far (log scale) the ratio must move the worse way before it lies outside its band. */
  needed: number[];
  bands: number[];
  sources: Set<string>;
  /** Cases whose planted copy's band differed from the A/A one's (should be none). */
  bandMoved: number;
  /** How often each run took part in an A/A case called changed (as the candidate, or the one baseline). */
  spuriousBy: Map<number, number>;
}

const pct = (x: number, digits = 1) => `${(x * 100).toFixed(digits)}%`;
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;

/** The worse-direction log change: positive when the ratio moved the worse way. */
const worseLog = (c: Change) => (c.better === 'higher' ? -Math.log(c.change) : Math.log(c.change));

/** Gates every case as A/A and with the candidate's planted copy; one tally per headline. */
function scenario(cases: readonly Case[], analyses: Analysis[], planted: Analysis[], noiseBand: number) {
  const tallies = new Map<string, Tally>();
  let withAny = 0;
  for (const k of cases) {
    const baselines = k.baselines.map((i) => analyses[i] as Analysis);
    const history = k.history.map((i) => analyses[i] as Analysis);
    const aa = gradedChanges(analyses[k.candidate] as Analysis, baselines, history, noiseBand);
    const slowed = new Map(
      gradedChanges(planted[k.candidate] as Analysis, baselines, history, noiseBand).map((c) => [c.metricId, c]),
    );
    if (aa.some((c) => c.status === 'regression' || c.status === 'improvement')) withAny++;
    for (const c of aa) {
      let t = tallies.get(c.metricId);
      if (!t)
        tallies.set(
          c.metricId,
          (t = {
            cases: 0,
            spurious: 0,
            caught: 0,
            needed: [],
            bands: [],
            sources: new Set(),
            bandMoved: 0,
            spuriousBy: new Map(),
          }),
        );
      t.cases++;
      if (c.status === 'regression' || c.status === 'improvement') {
        t.spurious++;
        // With one baseline either run of the pair may be the odd one.
        for (const i of k.baselines.length === 1 ? [k.candidate, ...k.baselines] : [k.candidate])
          t.spuriousBy.set(i, (t.spuriousBy.get(i) ?? 0) + 1);
      }
      const p = slowed.get(c.metricId);
      if (p?.status === 'regression') t.caught++;
      if (c.band) {
        t.needed.push(c.band.halfWidthLog - worseLog(c));
        t.bands.push(c.band.halfWidthLog);
        t.sources.add(sourceText(c.band.source));
        if (!p?.band || Math.abs(p.band.halfWidthLog - c.band.halfWidthLog) > 1e-9) t.bandMoved++;
      } else t.needed.push(Number.POSITIVE_INFINITY);
    }
  }
  return { tallies, withAny, cases: cases.length };
}

/** The scenario as a markdown table and its summary lines; headlines that miss a target named. */
function report(title: string, result: ReturnType<typeof scenario>, runs: readonly Run[]): string[] {
  const lines = [
    `#### ${title}`,
    '',
    `| headline | band used | band, median | A/A: called changed | planted ${pct(PLANTED, 0)} slowdown caught | smallest slowdown caught in ${pct(DETECT, 0)} (ratio change) |`,
    '|---|---|---|---|---|---|',
  ];
  let spurious = 0;
  let decisions = 0;
  let moved = 0;
  const misses: string[] = [];
  for (const [id, t] of result.tallies) {
    spurious += t.spurious;
    decisions += t.cases;
    moved += t.bandMoved;
    const needed = [...t.needed].sort((a, b) => a - b);
    // A change of d (log) the worse way is caught in a case when d exceeds its `needed`: the 95th percentile.
    const d = quantile(needed, DETECT);
    const arm = -Math.expm1(-d);
    const bands = [...t.bands].sort((a, b) => a - b);
    const spuriousRate = t.spurious / t.cases;
    const caughtRate = t.caught / t.cases;
    const miss = [
      spuriousRate > SPURIOUS_TARGET ? `called changed in ${pct(spuriousRate)} of A/A cases` : '',
      caughtRate < DETECT
        ? `catches a ${pct(PLANTED, 0)} slowdown in ${pct(caughtRate)}, a ${pct(arm)} one in ${pct(DETECT, 0)}`
        : '',
    ].filter(Boolean);
    if (spuriousRate > SPURIOUS_TARGET) {
      // Which runs the A/A calls came from: an outlier run says so here, not in a footnote.
      const top = [...t.spuriousBy].sort((a, b) => b[1] - a[1]).slice(0, 3);
      miss.push(`A/A calls involving ${top.map(([i, n]) => `\`${(runs[i] as Run).id}\` (${n})`).join(', ')}`);
    }
    if (miss.length > 0) misses.push(`\`${id}\`: ${miss.join('; ')}`);
    lines.push(
      `| \`${id}\` | ${[...t.sources].join(', ')} | ±${pct(logToRelative(bands[bands.length >> 1] ?? Number.NaN))} | ${t.spurious} of ${t.cases} (${pct(spuriousRate, 2)}) | ${t.caught} of ${t.cases} (${pct(caughtRate)}) | ${Number.isFinite(d) ? `${pct(arm)} (${pct(Math.expm1(d))})` : 'n/a'} |`,
    );
  }
  lines.push(
    '',
    `All headlines: ${spurious} of ${decisions} A/A decisions called a change (${pct(spurious / decisions, 2)}); ${result.withAny} of ${result.cases} cases (${pct(result.withAny / result.cases)}) had a headline called changed. Planted copies whose band moved: ${moved}.`,
    '',
    misses.length === 0
      ? `Every headline meets both targets (≤ ${pct(SPURIOUS_TARGET, 0)} A/A, ≥ ${pct(DETECT, 0)} of a ${pct(PLANTED, 0)} slowdown).`
      : `Targets (≤ ${pct(SPURIOUS_TARGET, 0)} A/A, ≥ ${pct(DETECT, 0)} of a ${pct(PLANTED, 0)} slowdown) missed:\n\n${misses.map((m) => `- ${m}`).join('\n')}`,
    '',
  );
  return lines;
}

/** One set of runs measured alike, calibrated: its heading line, then every scenario's table. */
function calibrate(runs: Run[]): string[] {
  const analyses = runs.map((r) => analyze(r));
  const planted = runs.map((r) => analyze(plantSlowdown(r, PLANTED)));
  const noiseBand = (runs[0] as Run).config.thresholds.noiseBand;
  const all = runs.map((_, i) => i);
  const pairs: Case[] = [];
  for (let j = 0; j < runs.length; j++)
    for (let i = 0; i < j; i++)
      pairs.push({ candidate: j, baselines: [i], history: all.filter((h) => h !== i && h !== j) });
  const random = mulberry32(SEED);
  const sets = (size: number): Case[] =>
    all.flatMap((j) =>
      Array.from({ length: SETS_PER_RUN }, () => {
        const others = all.filter((h) => h !== j);
        for (let x = others.length - 1; x > 0; x--) {
          const y = Math.floor(random() * (x + 1));
          [others[x], others[y]] = [others[y] as number, others[x] as number];
        }
        const chosen = others.slice(0, size);
        return { candidate: j, baselines: chosen, history: chosen };
      }),
    );
  const ids = runs.map((r) => r.id);
  const dates = [...new Set(runs.map((r) => r.createdAt.slice(0, 10)))].join(', ');
  const gpus = new Set(runs.map((r) => gpuAt(r.fingerprint, r.config.gpuIndex)?.uuid)).size;
  const first = runs[0] as Run;
  const lines = [
    `${runs.length} default-suite runs (${gpuAt(first.fingerprint, first.config.gpuIndex)?.name}, ${gpus} GPUs, driver ${first.fingerprint.driverVersion}, protocol loop ${measuredLoop(first)}, release lead ${first.config.releaseLeadMs} ms, measured ${dates}); between-run band: ${pct(BETWEEN_RUN_LEVEL, 1)} prediction interval; noise band ${pct(noiseBand, 0)} (the narrowest band). A/A: a run against others, nothing changed. Planted: the later run's shared arm (contended clients, K-stream work) ${pct(PLANTED, 0)} slower, re-analysed by bench's analysis.`,
    '',
    ...report(
      `One baseline run, band learned from the other ${runs.length - 2} runs (${pairs.length} pairs, both runs of each pair left out)`,
      scenario(pairs, analyses, planted, noiseBand),
      runs,
    ),
    ...report(
      `One baseline run, no history: the default floors (${pairs.length} pairs; the floors were learned from these same runs)`,
      scenario(
        pairs.map((p) => ({ ...p, history: [] })),
        analyses,
        planted,
        noiseBand,
      ),
      runs,
    ),
  ];
  for (const size of SET_SIZES)
    lines.push(
      ...report(
        `A directory of ${size} baseline runs, band learned from them (${SETS_PER_RUN} random sets of the other runs per run, seed ${SEED})`,
        scenario(sets(size), analyses, planted, noiseBand),
        runs,
      ),
    );
  lines.push(
    '#### Default floors',
    '',
    `The ${pct(BETWEEN_RUN_LEVEL, 1)} between-run half-width of one run against one other, learned from all ${runs.length} runs, beside the floor in force (\`harness/bench/gate/bands.ts\`):`,
    '',
    '| headline | learned from all runs | floor in force |',
    '|---|---|---|',
  );
  for (const m of (analyses[0] as Analysis).verdicts) {
    const spread = runSpread(
      analyses.flatMap((a) => a.metrics.find((x) => x.metric.id === m.metric.id)?.stats.value ?? []),
    );
    const learned = spread ? logToRelative(predictionHalfWidthLog(spread, 1, BETWEEN_RUN_LEVEL)) : null;
    lines.push(
      `| \`${m.metric.id}\` | ${learned === null ? 'n/a' : `±${pct(learned, 2)}`} | ±${pct(floorFor(m.metric.id))} |`,
    );
  }
  lines.push(
    '',
    `Every other ratio: ±${pct(floorFor('any/other/ratio'))}.`,
    '',
    'The smallest change caught comes from each case\'s A/A margin (its band less its change the worse way): a planted slowdown moves every per-round ratio by one factor, so the change moves by it and the band does not (the planted copies confirm it: "band moved" above).',
    '',
    `Runs (${ids.length}): ${ids.map((id) => `\`${id}\``).join(', ')}.`,
  );
  return lines;
}

/** A set's heading: what its runs share (the gate's comparability and the release lead). */
function setTitle(runs: readonly Run[]): string {
  const first = runs[0] as Run;
  return `${gpuAt(first.fingerprint, first.config.gpuIndex)?.name}, driver ${first.fingerprint.driverVersion}, protocol loop ${measuredLoop(first)}, release lead ${first.config.releaseLeadMs} ms: ${runs.length} runs`;
}

async function main() {
  const started = Date.now();
  ({ dir, measured, out } = parseArgs(process.argv.slice(2)));
  const sets = await loadRunSets();
  const calibrated = sets.filter((s) => s.length >= MIN_RUNS);
  const total = sets.reduce((n, s) => n + s.length, 0);
  if (calibrated.length === 0)
    throw new UserError(
      `need at least ${MIN_RUNS} default-suite runs measured alike under ${dir}, found ${total}${measured ? ` measured ${measured}` : ''}: the committed ones are in ${STORE_DIR}/ (npm run calibrate:gate -- ${STORE_DIR} --measured 2026-11-24)`,
    );
  const lines: string[] = [];
  const left = sets.filter((s) => s.length < MIN_RUNS);
  if (calibrated.length > 1 || left.length > 0)
    lines.push(
      `${total} default-suite runs in ${sets.length} sets measured alike; each set of at least ${MIN_RUNS} is calibrated on its own (the gate compares no runs measured otherwise, and the harness generations differ):`,
      '',
      ...sets.map((s) => `- ${setTitle(s)}${s.length < MIN_RUNS ? ' (too few: not calibrated)' : ''}`),
      '',
    );
  for (const runs of calibrated) {
    lines.push(`### ${setTitle(runs)}`, '');
    lines.push(...calibrate(runs));
  }
  const text = `${lines.join('\n')}\n`;
  if (out) writeFileSync(out, text);
  process.stdout.write(text);
  process.stderr.write(`calibrate-gate: ${total} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

// A script's one error boundary: a UserError is one line and exit 2, as every command's.
await main().catch((error: unknown) => {
  if (!(error instanceof UserError)) throw error;
  process.stderr.write(`calibrate:gate: ${error.message}\n`);
  process.exitCode = 2;
});
