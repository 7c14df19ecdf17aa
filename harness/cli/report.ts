/** `gpushare report <run> [<run>]`: markdown with charts, CSV or JSON; two runs side by side. */

import { stat } from 'node:fs/promises';
import path from 'node:path';
import { analyze } from '../bench/analysis/analyze.js';
import { checkPatterns, loadThresholds, type Thresholds } from '../bench/gate/thresholds.js';
import { actionBenchmarkResults, bencherMetrics } from '../bench/outputs/ci-exports.js';
import { compareRuns, comparisonMarkdown } from '../bench/outputs/compare.js';
import { metricsCsv } from '../bench/outputs/metrics-table.js';
import { summaryJson } from '../bench/outputs/summary.js';
import { runFile, writeHostReport, writeRunHtml, writeRunReport } from '../bench/outputs/write.js';
import { loadHostRun } from '../bench/record/host-record.js';
import type { Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { capacityMarkdown } from '../capacity/markdown.js';
import { type CapacityRun, loadCapacityRun } from '../capacity/record.js';
import { capacityTable } from '../capacity/table.js';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { htmlPage } from '../core/escape/html.js';
import { argText, termJson } from '../core/escape/terminal.js';
import { reportsDir } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { mixCells, protections } from '../mix/analysis.js';
import { mixClaims } from '../mix/claims.js';
import { loadMixRun, type MixRun } from '../mix/record.js';
import { mixMarkdown, writeMixReport } from '../mix/report.js';
import { claimsLedger } from '../probe/claims.js';
import { probeMarkdown } from '../probe/markdown.js';
import { loadProbeRun, type ProbeRun } from '../probe/record.js';
import { openRun } from '../record/evidence.js';
import { simulatedJson } from '../record/simulated.js';
import { writeOutputFile } from '../record/store.js';
import { analyzeServe, serveAnswer } from '../serve/analysis.js';
import { fleetRunReport } from '../serve/fleet/fleet-report.js';
import { serveMarkdown } from '../serve/markdown.js';
import { loadServeRun, type ServeRun } from '../serve/record.js';
import type { Fingerprint } from '../system/nvidia/schema.js';
import { verifyMarkdown } from '../verify/markdown.js';
import { loadVerifyRun, type VerifyRun } from '../verify/record.js';

export type ReportFormat = 'md' | 'html' | 'csv' | 'json' | 'bencher' | 'github-action-benchmark';

/** The formats continuous-benchmarking tools ingest: a bench run's ratios only. */
const CI_EXPORTS: readonly ReportFormat[] = ['bencher', 'github-action-benchmark'];

export interface ReportOptions {
  runs: string[];
  format: ReportFormat;
  out?: string;
  config?: string;
}

const REPORT_POSITIONALS = {
  run: { type: 'string', demandOption: true, describe: 'run directory' },
  other: { type: 'string', describe: 'a second run directory to compare with the first' },
} as const;
const REPORT_FLAGS = {
  format: {
    type: 'string',
    choices: ['md', 'html', 'csv', 'json', 'bencher', 'github-action-benchmark'],
    default: 'md',
    describe:
      "output format: md (with SVG charts beside it) and html (one self-contained file) are written to --out; csv and bencher (Bencher's metric format) are printed; github-action-benchmark writes smaller-is-better.json and bigger-is-better.json (its customSmallerIsBetter and customBiggerIsBetter files) to --out (json: deprecated, use --json)",
    renamedChoices: { json: 'json' },
  },
  json: { type: 'boolean', describe: "the run's analysis as JSON on stdout (as show --json prints it)" },
  out: { type: 'string', describe: 'directory for md and html reports', defaultDescription: 'runs/reports/' },
  config: { type: 'string', describe: 'thresholds file (YAML or JSON)' },
} as const;

/** `gpushare report`: any run directory (bench, probe, capacity, multi-GPU), rendered by the product that made it. */
export const reportCommand = defineCommand({
  flags: REPORT_FLAGS,
  positionals: REPORT_POSITIONALS,
  resolve: (args): ReportOptions => {
    if (args.json && args.format !== 'md')
      throw new UserError(`--json and --format ${args.format}: give one (--json prints the run's analysis as JSON)`);
    return {
      runs: [args.run, ...(args.other !== undefined ? [args.other] : [])],
      format: args.json ? 'json' : args.format,
      ...(args.out !== undefined ? { out: args.out } : {}),
      ...(args.config !== undefined ? { config: args.config } : {}),
    };
  },
  run: report,
});

/** A refusal of --format bencher or github-action-benchmark for a run that is not one bench run. */
function benchOnly(options: ReportOptions, what: string): void {
  if (CI_EXPORTS.includes(options.format))
    throw new UserError(
      `--format ${options.format} exports one bench run's ratios, and ${options.runs.join(' and ')} ${what}: give one bench run directory`,
    );
}

/** A run is a directory (a stored run is unpacked into one first): a file given for one (its run.json) is refused naming the directory to give. */
async function refuseFiles(runs: readonly string[]): Promise<void> {
  for (const run of runs) {
    const found = await stat(run).catch(() => null);
    if (found !== null && !found.isDirectory())
      throw new UserError(
        `${argText(run)} is a file, not a run directory: give the directory that holds it (gpushare report ${argText(path.dirname(run))})`,
      );
  }
}

async function report(given: ReportOptions, deps: AppDeps): Promise<number> {
  const options = { ...given, runs: await Promise.all(given.runs.map(openRun)) };
  await refuseFiles(options.runs);
  if (options.runs.length > 1) benchOnly(options, 'are two runs');
  const product = options.runs.length === 1 ? await productReport(options.runs[0] as string, options, deps) : null;
  if (product !== null) return product;
  const runs = await Promise.all(options.runs.map((dir) => loadRun(dir)));
  const [first, second] = runs;
  if (!first || runs.length > 2) throw new UserError('report takes one run directory, or two to compare');
  const thresholds = options.config ? await loadThresholds(options.config) : first.config.thresholds;
  const out = options.out ?? reportsDir(deps.cwd);
  if (second) return compareReport(first, second, thresholds, options, out, deps);
  return benchReport(first, thresholds, options, out, deps);
}

/** The run in `dir` reported by the product that made it, where that is not one bench run (a multi-GPU run included); null: a bench run. */
async function productReport(dir: string, options: ReportOptions, deps: AppDeps): Promise<number | null> {
  const probe = await loadProbeRun(dir);
  if (probe !== null) benchOnly(options, 'is a probe run');
  if (probe !== null) return probeReport(probe, options, deps);
  const capacity = await loadCapacityRun(dir);
  if (capacity !== null) benchOnly(options, 'is a capacity run');
  if (capacity !== null) return capacityReport(capacity, options, deps);
  const mix = await loadMixRun(dir);
  if (mix !== null) benchOnly(options, 'is a mix run');
  if (mix !== null) return mixReport(mix, options, deps);
  const verify = await loadVerifyRun(dir);
  if (verify !== null) return verifyReport(verify, options, deps);
  const served = await loadServeRun(dir);
  if (served !== null) return serveReport(served, options, deps);
  const host = await loadHostRun(dir);
  if (host === null) return null;
  benchOnly(options, 'is a multi-GPU run (give one of its run directories)');
  if (options.format !== 'md')
    throw new UserError(
      `${dir} is a multi-GPU run: --format ${options.format} describes one run, so give one of its run directories (${host.gpus.map((g) => g.dir).join(', ')})`,
    );
  deps.out(`${await writeHostReport(dir, host, options.out ?? reportsDir(deps.cwd), true)}\n`);
  return ExitCode.ok;
}

/** Two bench runs side by side: markdown or html written to `out`, or JSON printed. */
async function compareReport(
  first: Run,
  second: Run,
  thresholds: Thresholds,
  options: ReportOptions,
  out: string,
  deps: AppDeps,
): Promise<number> {
  if (options.format === 'csv')
    throw new UserError('--format csv describes one run: compare two with --format md or html, or --json');
  if (options.format === 'json') {
    deps.out(
      termJson({
        a: first.id,
        b: second.id,
        noiseBand: thresholds.noiseBand,
        metrics: compareRuns(first, second, thresholds.noiseBand),
      }),
    );
    return ExitCode.ok;
  }
  const name = `compare-${first.id}-vs-${second.id}`;
  const markdown = comparisonMarkdown(first, second, thresholds.noiseBand);
  const html = options.format === 'html';
  const file = runFile(out, name, html ? '.html' : '.md');
  await writeOutputFile(file, html ? htmlPage(`gpushare ${name}`, markdown) : markdown);
  deps.out(`${file}\n`);
  return ExitCode.ok;
}

/** One bench run in `options.format`. */
async function benchReport(
  first: Run,
  thresholds: Thresholds,
  options: ReportOptions,
  out: string,
  deps: AppDeps,
): Promise<number> {
  const analysis = analyze(first, thresholds);
  if (options.config)
    checkPatterns(
      thresholds,
      analysis.metrics.map((m) => m.metric.id),
      options.config,
    );
  switch (options.format) {
    case 'csv':
      deps.out(metricsCsv(analysis));
      return ExitCode.ok;
    case 'json':
      deps.out(termJson(summaryJson(first, analysis)));
      return ExitCode.ok;
    case 'md':
      deps.out(`${await writeRunReport(first, analysis, out)}\n`);
      return ExitCode.ok;
    case 'html':
      deps.out(`${await writeRunHtml(first, analysis, out)}\n`);
      return ExitCode.ok;
    case 'bencher':
      deps.out(`${JSON.stringify(bencherMetrics(first, analysis), null, 2)}\n`);
      return ExitCode.ok;
    case 'github-action-benchmark': {
      const results = actionBenchmarkResults(first, analysis);
      // Fixed names in a directory of their own, so a workflow can name them before the run exists.
      const dir = options.out ?? runFile(reportsDir(deps.cwd), `${first.id}-github-action-benchmark`);
      for (const [kind, entries] of [
        ['smaller-is-better', results.smallerIsBetter],
        ['bigger-is-better', results.biggerIsBetter],
      ] as const) {
        const file = path.join(dir, `${kind}.json`);
        await writeOutputFile(file, `${JSON.stringify(entries, null, 2)}\n`);
        deps.out(`${file}\n`);
      }
      return ExitCode.ok;
    }
  }
}

/**
 * The report of a run that is one markdown file (probe, verify, server and capacity runs): the file, or
 * with --format html one HTML page of it, or with --json its id, status and `json()`. CSV describes a
 * bench run's trials, so it is refused naming `noun`.
 */
async function oneFileReport(
  run: { id: string; status: string; fingerprint: Fingerprint },
  noun: string,
  report: { json(): Record<string, unknown>; markdown(): string },
  options: ReportOptions,
  deps: AppDeps,
): Promise<number> {
  if (options.format === 'csv')
    throw new UserError(`--format csv describes a bench run: a ${noun} has --format md or html, or --json`);
  if (options.format === 'json')
    deps.out(termJson({ ...simulatedJson(run.fingerprint), runId: run.id, status: run.status, ...report.json() }));
  else await writeReportFile(run.id, report.markdown(), options, deps);
  return ExitCode.ok;
}

/** A probe run's report: its markdown, or its claims ledger as JSON (CSV has no table to give). */
function probeReport(run: ProbeRun, options: ReportOptions, deps: AppDeps): Promise<number> {
  const report = {
    json: () => ({ claims: claimsLedger(run), cleanup: run.cleanup }),
    markdown: () => probeMarkdown(run, VERSION),
  };
  return oneFileReport(run, 'probe run', report, options, deps);
}

function verifyReport(run: VerifyRun, options: ReportOptions, deps: AppDeps): Promise<number> {
  const report = { json: () => ({ rows: run.rows, cases: run.cases }), markdown: () => verifyMarkdown(run, VERSION) };
  return oneFileReport(run, 'verify run', report, options, deps);
}

/** A server run's report: a fleet's (bench's or capacity's search) as its run wrote it, else the copies'. */
function serveReport(run: ServeRun, options: ReportOptions, deps: AppDeps): Promise<number> {
  const fleet = fleetRunReport(run);
  if (fleet !== null) {
    const { markdown, analysis, search } = fleet;
    // The JSON `bench --serve --fleet --json` and `capacity --serve --fleet --json` give.
    const json = () => ({ analysis, ...(search === null ? {} : { search }) });
    return oneFileReport(run, 'fleet run', { json, markdown: () => markdown }, options, deps);
  }
  const analysis = analyzeServe(run);
  const report = {
    json: () => ({ analysis, plan: serveAnswer(run, analysis) }),
    markdown: () => serveMarkdown(run, analysis, VERSION),
  };
  return oneFileReport(run, 'server run', report, options, deps);
}

/** A markdown report written to --out, or with --format html as one HTML page of it. */
async function writeReportFile(id: string, markdown: string, options: ReportOptions, deps: AppDeps): Promise<void> {
  const html = options.format === 'html';
  const file = runFile(options.out ?? reportsDir(deps.cwd), id, html ? '.html' : '.md');
  await writeOutputFile(file, html ? htmlPage(`gpushare ${id}`, markdown) : markdown);
  deps.out(`${file}\n`);
}

/** A mix run's report: its markdown with the heat map and frontier beside it, as one HTML page, or its cells as JSON. */
async function mixReport(run: MixRun, options: ReportOptions, deps: AppDeps): Promise<number> {
  if (options.format === 'csv')
    throw new UserError('--format csv describes a bench run: a mix run has --format md or html, or --json');
  const cells = mixCells(run);
  if (options.format === 'json') {
    deps.out(
      termJson({
        ...simulatedJson(run.fingerprint),
        runId: run.id,
        status: run.status,
        cells,
        protections: protections(run, cells),
        claims: mixClaims(run, cells),
      }),
    );
    return ExitCode.ok;
  }
  if (options.format === 'html') {
    await writeReportFile(run.id, mixMarkdown(run, { heatmap: null, frontier: null }), options, deps);
    return ExitCode.ok;
  }
  deps.out(`${await writeMixReport(runFile(options.out ?? reportsDir(deps.cwd), run.id, '.md'), run)}\n`);
  return ExitCode.ok;
}

/** A capacity run's report: its markdown, or its capacity table as JSON. */
function capacityReport(run: CapacityRun, options: ReportOptions, deps: AppDeps): Promise<number> {
  const report = {
    json: () => ({ settings: run.settings, rows: capacityTable(run).map(({ steps: _steps, ...row }) => row) }),
    markdown: () => capacityMarkdown(run, VERSION),
  };
  return oneFileReport(run, 'capacity run', report, options, deps);
}
