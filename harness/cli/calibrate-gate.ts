/**
 * `npm run calibrate:gate -- [<runs dir>] [--measured YYYY-MM-DD] [--out FILE]`: how often the gate calls
 * equal runs changed, and how small a change it catches, on committed default-suite runs (found by their
 * config, run directories or stored runs: by default the evidence store, evidence/). The runs are split
 * into sets the gate would compare (its comparability: GPU model, driver, settings, protocol loop and
 * harness generation), and each set of at least 4 is calibrated on its own: every run against 1, 3, 10 and
 * 20 baseline runs of its set (as many as the set holds), as A/A (nothing changed) and with planted 5% and
 * 10% slowdowns of its shared arm (plant-slowdown.ts), re-analysed by bench's analysis; then the goal, per
 * set: with 10 or more baselines, at most 1% A/A and a 5% slowdown caught in 95%, on every headline.
 */
import { statSync, writeFileSync } from 'node:fs';
import { analyze } from '../bench/analysis/analyze.js';
import type { Analysis } from '../bench/analysis/types.js';
import { DEFAULTS } from '../bench/defaults.js';
import { comparability } from '../bench/gate/gate.js';
import { measuredLoop, type Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { UserError } from '../core/errors.js';
import { openRun, runEntries, STORE_DIR } from '../record/evidence.js';
import { mulberry32 } from '../stats/bootstrap.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { floorsTable, goalSection, scenarioTable, setIntro } from './calibration-report.js';
import { type Analysed, PLANTED, pairCases, runScenario, type ScenarioResult, setCases } from './gate-calibration.js';
import { plantSlowdown } from './plant-slowdown.js';

/** Baseline runs per scenario beyond one (sets of that many, learned from them), and random sets per candidate. */
const SET_SIZES = [3, 10, 20];
const SETS_PER_RUN = 20;
const SEED = 36;
/** The goal's scenarios: this many baseline runs or more. */
const GOAL_BASELINES = 10;

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
 * The default-suite runs in `dir`, split into sets the gate compares (its comparability: GPU model, driver,
 * settings, protocol loop, and the harness generation, whose release lead moved mps/gemm and mps/infer by
 * 1–1.5%), largest set first, each in time order.
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
    const group = groups.find((g) => comparability(run, g[0] as Run).length === 0);
    if (group) group.push(run);
    else groups.push([run]);
  }
  return groups
    .sort((a, b) => b.length - a.length)
    .map((g) => g.sort((a, b) => a.createdAt.localeCompare(b.createdAt)));
}

/**
 * A run's graded ratios as bench's analysis computes them, less analyze's cross-mode ratios: their bootstrap
 * is most of its time, and no default headline is one (checked against analyze on each set's first run).
 */
function gradedAnalysis(run: Run): Analysis {
  return analyze(run, run.config.thresholds, { crossMode: false });
}

function checkGraded(run: Run, graded: Analysis): void {
  const text = (a: Analysis) => JSON.stringify(a.verdicts.map((v) => [v.metric.id, v.stats.value, v.stats.ci]));
  if (text(analyze(run)) !== text(graded))
    throw new Error(`run ${run.id}: its graded ratios differ from analyze's; calibrate with analyze itself`);
}

/** One set of runs measured alike, calibrated: every scenario's table, the goal, the floors and its runs. */
function calibrate(runs: Run[]): string[] {
  const analyses = runs.map(gradedAnalysis);
  checkGraded(runs[0] as Run, analyses[0] as Analysis);
  const set: Analysed = {
    analyses,
    planted: PLANTED.map((fraction) => runs.map((r) => gradedAnalysis(plantSlowdown(r, fraction)))),
  };
  const noiseBand = (runs[0] as Run).config.thresholds.noiseBand;
  const pairs = pairCases(runs.length);
  const lines = [
    setIntro(runs, noiseBand),
    '',
    ...scenarioTable(
      `One baseline run: the default floors (${pairs.length} pairs, the earlier run the baseline, as \`gate <run> --baseline <run>\`; bands.ts learned the floors from the 58 default-suite H100 runs of 2026-11-24)`,
      runScenario(pairs, set, noiseBand),
      runs,
    ),
  ];
  const random = mulberry32(SEED);
  const goal: Array<{ baselines: number; result: ScenarioResult; noNoiseBand: ScenarioResult }> = [];
  for (const size of SET_SIZES.filter((n) => n < runs.length)) {
    const cases = setCases(runs.length, size, SETS_PER_RUN, random);
    const result = runScenario(cases, set, noiseBand);
    lines.push(
      ...scenarioTable(
        `${size} baseline runs, band learned from them (${SETS_PER_RUN} random sets of the other runs per run, seed ${SEED})`,
        result,
        runs,
      ),
    );
    if (size >= GOAL_BASELINES) goal.push({ baselines: size, result, noNoiseBand: runScenario(cases, set, 0) });
  }
  lines.push(...goalSection(goal, analyses, noiseBand, GOAL_BASELINES), ...floorsTable(analyses));
  lines.push('', `Runs (${runs.length}): ${runs.map((r) => `\`${r.id}\``).join(', ')}.`);
  return lines;
}

/** A set's heading: what its runs share (the gate's comparability, the harness generation among it). */
function setTitle(runs: readonly Run[]): string {
  const first = runs[0] as Run;
  return `${gpuAt(first.fingerprint, first.config.gpuIndex)?.name}, driver ${first.fingerprint.driverVersion}, protocol loop ${measuredLoop(first)}, release lead ${first.config.releaseLeadMs} ms, gpushare ${first.tool.version}: ${runs.length} runs`;
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
      `${total} default-suite runs in ${sets.length} sets the gate would compare (GPU model, driver, settings, protocol loop and harness generation: gpushare's version and the release lead before each window); each set of at least ${MIN_RUNS} is calibrated on its own:`,
      '',
      ...sets.map((s) => `- ${setTitle(s)}${s.length < MIN_RUNS ? ' (too few: not calibrated)' : ''}`),
      '',
    );
  for (const runs of calibrated) lines.push(`### ${setTitle(runs)}`, '', ...calibrate(runs), '');
  const text = `${lines.join('\n').trimEnd()}\n`;
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
