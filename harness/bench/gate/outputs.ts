/** The gate's outputs, each a pure function of its result: console text, JUnit XML, markdown, JSON. */

import { mdCode, mdText } from '../../core/escape/markdown.js';
import { termJson, termText } from '../../core/escape/terminal.js';
import { type JunitCase, junitDocument } from '../../core/junit.js';
import { TERMINAL_COLUMNS, wrapLine } from '../../core/wrap.js';
import { SIMULATED_TEXT } from '../../record/simulated.js';
import { POWER } from '../../stats/power.js';
import type { MetricAnalysis } from '../analysis/types.js';
import { type Band, BETWEEN_RUN_LEVEL, logToRelative, sourceText, worseChange } from './bands.js';
import type { GateResult } from './gate.js';
import type { Change } from './verdicts.js';

const fmt = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? 'n/a' : x.toFixed(digits));
const ciText = (ci: [number, number] | null) => (ci ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : 'n/a');
const pct = (change: number) => `${change >= 1 ? '+' : ''}${((change - 1) * 100).toFixed(1)}%`;
const halfWidthText = (band: Band) => `±${(logToRelative(band.halfWidthLog) * 100).toFixed(1)}%`;
const bandText = (band: Band | null) => (band ? `${halfWidthText(band)} (${sourceText(band.source)})` : 'no band');
/** The smallest change the band catches in 95% of runs, as the ratio moves the worse way (+x% or −x%). */
const caughtText = (c: Change) => (c.band ? pct(1 + worseChange(c.band.caughtLog, c.better)) : '—');
const POWER_TEXT = `${POWER * 100}%`;
/** What a band says about its change: its width and source, and the smallest change it catches. */
const powerText = (c: Change) =>
  c.band ? `band ${bandText(c.band)}, catches ${caughtText(c)} at ${POWER_TEXT}` : 'no band';

/** "against baseline X" or "against N baseline runs", with the noise band. */
function againstText(result: GateResult): string {
  if (!result.baselineId) return '';
  const what =
    result.baselineIds.length === 1 ? `baseline ${result.baselineId}` : `${result.baselineIds.length} baseline runs`;
  return ` against ${what} (noise band ±${(result.noiseBand * 100).toFixed(1)}%)`;
}

/** Where each band came from, in one line: learned from which runs, or the default floors. */
function bandsLine(result: GateResult): string | null {
  if (!result.baselineId) return null;
  const learned = result.historyIds.length >= 3;
  const between = learned
    ? `learned from ${result.historyIds.length} runs (${(BETWEEN_RUN_LEVEL * 100).toFixed(1)}% prediction interval)`
    : 'the default floor per ratio (fewer than 3 baseline runs; docs/gate-calibration.md)';
  return `bands: between-run part ${between} ⊕ the change's within-run 95% CI; a change outside its band is a regression or an improvement; "catches": the smallest change the band calls a regression in ${POWER_TEXT} of runs (band + z(${POWER}) × the change's spread)`;
}

/** A change's cells in the console's table: how much with its CI, its band and where from, what it catches, its status. */
const changeCells = (c: Change) => [
  `${pct(c.change)} ${ciText(c.ci)}`,
  c.band
    ? `${halfWidthText(c.band)} (${c.band.source.kind === 'learned' ? `${c.band.source.runs} runs` : 'floor'})`
    : 'no band',
  caughtText(c),
  c.status,
];

function rows(result: GateResult): Array<{ v: MetricAnalysis; change: Change | undefined }> {
  const changes = new Map(result.changes.map((c) => [c.metricId, c]));
  return result.verdicts.map((v) => ({ v, change: changes.get(v.metric.id) }));
}

/** The gate's console text; its notes of how the runs differ folded at `columns` (Infinity: not folded). */
export function gateText(result: GateResult, columns = TERMINAL_COLUMNS): string {
  const lines = [
    ...(result.simulated ? wrapLine(SIMULATED_TEXT, columns) : []),
    `gate: run ${result.runId}${againstText(result)}`,
  ];
  if (result.baselineIds.length > 1)
    lines.push(...wrapLine(`baseline runs: ${result.baselineIds.join(', ')}`, columns));
  for (const s of result.setAside) lines.push(...wrapLine(termText(`set aside: ${s}`), columns));
  const bands = bandsLine(result);
  if (bands) lines.push(...wrapLine(bands, columns));
  // Each difference on lines of its own, folded to the terminal's width.
  for (const m of result.mismatches) lines.push(...wrapLine(termText(`warning: measured differently: ${m}`), columns));
  for (const p of result.problems) lines.push(`inconclusive: ${termText(p)}`);
  const table = rows(result).map(({ v, change }) => ({
    cells: [termText(v.metric.id), fmt(v.stats.value), ciText(v.stats.ci), v.threshold?.text ?? '—', v.verdict],
    change: change ? changeCells(change) : null,
  }));
  const header = ['metric', 'value', 'within-run 95% CI', 'threshold', 'verdict'];
  // The change against the baseline on a line of its own under each ratio: both fit 80 columns.
  const changeHeader = ['change [within-run 95% CI]', 'band (from)', `catches at ${POWER_TEXT}`, 'status'];
  const widthsOf = (cells: ReadonlyArray<readonly string[]>) =>
    (cells[0] ?? []).map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const widths = widthsOf([header, ...table.map((r) => r.cells)]);
  const changeWidths = widthsOf([changeHeader, ...table.flatMap((r) => (r.change ? [r.change] : []))]);
  const line = (cells: readonly string[], w: readonly number[], indent = '') =>
    `${indent}${cells
      .map((cell, i) => cell.padEnd(w[i] ?? 0))
      .join('  ')
      .trimEnd()}`;
  lines.push(line(header, widths));
  if (result.baselineId) lines.push(line(changeHeader, changeWidths, '  '));
  for (const row of table) {
    lines.push(line(row.cells, widths));
    if (row.change) lines.push(line(row.change, changeWidths, '  '));
  }
  for (const { v } of rows(result)) {
    for (const reason of v.reasons) lines.push(`${v.metric.id}: ${v.verdict}: ${reason}`);
    for (const warning of v.warnings) lines.push(`${v.metric.id}: note: ${warning}`);
  }
  lines.push(
    `exit ${result.exitCode}: ${result.exitCode === 0 ? 'pass' : result.exitCode === 1 ? 'a threshold failed or a ratio regressed' : 'inconclusive or invalid measurements'}`,
  );
  // Each line shown escaped: run ids, metric ids, reasons and mismatches are the runs' text.
  return `${lines.map(termText).join('\n')}\n`;
}

/** One testcase per metric, so CI systems list each failing ratio. */
export function gateJunit(result: GateResult): string {
  const cases = rows(result).map(({ v, change }): JunitCase => {
    const summary = `${v.metric.id} = ${fmt(v.stats.value)} within-run 95% CI ${ciText(v.stats.ci)}, threshold ${v.threshold?.text ?? 'none'}`;
    const detail = [
      ...v.reasons,
      ...v.warnings,
      change
        ? `change vs baseline ${pct(change.change)} within-run 95% CI ${ciText(change.ci)}, ${powerText(change)}: ${change.status}`
        : '',
    ]
      .filter(Boolean)
      .join('\n');
    const [mode, workload] = v.metric.id.split('/');
    const at = { classname: `gpushare.${mode ?? ''}.${workload ?? ''}`, name: v.metric.id };
    if (v.verdict === 'fail')
      return { ...at, outcome: 'failure', type: 'threshold', message: `${summary}: fail`, detail };
    if (change?.status === 'regression')
      return {
        ...at,
        outcome: 'failure',
        type: 'regression',
        message: `${v.metric.id} regressed ${pct(change.change)} within-run 95% CI ${ciText(change.ci)}, outside its ${powerText(change)}`,
        detail,
      };
    if (v.verdict === 'invalid')
      return { ...at, outcome: 'error', type: 'invalid', message: `${summary}: ${v.verdict}`, detail };
    if (v.verdict === 'inconclusive') return { ...at, outcome: 'skipped', message: `${summary}: ${v.verdict}` };
    return { ...at, outcome: 'passed' };
  });
  // A run that cannot be graded as a whole is an error of its own, so no CI system reads it as green.
  cases.push(
    ...result.problems.map(
      (p): JunitCase => ({
        classname: 'gpushare.run',
        name: result.runId,
        outcome: 'error',
        type: 'inconclusive',
        message: p,
        detail: null,
      }),
    ),
  );
  return junitDocument('gpushare gate', `${result.simulated ? 'SIMULATED ' : ''}gpushare gate ${result.runId}`, cases);
}

/** Markdown for $GITHUB_STEP_SUMMARY. */
export function gateMarkdown(result: GateResult): string {
  const lines = [
    ...(result.simulated ? [`> **${SIMULATED_TEXT}**`, ''] : []),
    `### gpushare gate: ${result.exitCode === 0 ? 'pass' : result.exitCode === 1 ? 'FAIL' : 'inconclusive'}`,
    '',
    `Run ${mdCode(result.runId)}${result.baselineId ? ` against ${result.baselineIds.length === 1 ? `baseline ${mdCode(result.baselineId)}` : `${result.baselineIds.length} baseline runs`}` : ''}.`,
    '',
    ...(bandsLine(result) ? [mdText(bandsLine(result) as string), ''] : []),
    ...result.setAside.map((s) => `- set aside: ${mdText(s)}`),
    ...(result.setAside.length > 0 ? [''] : []),
    ...result.problems.map((p) => `- **inconclusive:** ${mdText(p)}`),
    ...(result.problems.length > 0 ? [''] : []),
    `| metric | value | within-run 95% CI | threshold | verdict |${result.baselineId ? ` change vs baseline [within-run 95% CI] | band (from) | catches at ${POWER_TEXT} | status |` : ''}`,
    `|---|---|---|---|---|${result.baselineId ? '---|---|---|---|' : ''}`,
    ...rows(result).map(
      ({ v, change }) =>
        `| ${mdCode(v.metric.id, 'cell')} | ${fmt(v.stats.value)} | ${ciText(v.stats.ci)} | ${v.threshold?.text ?? '—'} | ${v.verdict} |${result.baselineId ? ` ${change ? `${pct(change.change)} ${ciText(change.ci)} | ${mdText(bandText(change.band))} | ${caughtText(change)} | ${change.status}` : '— | — | — | —'} |` : ''}`,
    ),
    '',
  ];
  return `${lines.join('\n')}\n`;
}

/** The machine-readable verdicts, as `gpushare report --json` and `gate --json` print them. */
export function verdictsJson(verdicts: readonly MetricAnalysis[]) {
  return verdicts.map((v) => ({
    metric: v.metric.id,
    value: v.stats.value,
    ci: v.stats.ci,
    threshold: v.threshold ? { ...v.threshold.bounds, pattern: v.threshold.pattern } : null,
    verdict: v.verdict,
    reasons: v.reasons,
    warnings: v.warnings,
    confidence: v.stats.confidence,
    ciMethod: v.stats.method,
    rounds: v.stats.n,
    halfWidth: v.stats.halfWidth,
    target: v.target,
    diagnosis: v.diagnosis,
    mad: v.stats.mad,
    cv: v.stats.cv,
    outlierRounds: v.stats.outliers,
    better: v.metric.better,
  }));
}

export function gateJson(result: GateResult): string {
  return termJson({
    ...(result.simulated ? { simulated: true } : {}),
    run: result.runId,
    baseline: result.baselineId,
    baselines: result.baselineIds,
    setAside: result.setAside,
    history: result.historyIds,
    exitCode: result.exitCode,
    noiseBand: result.noiseBand,
    mismatches: result.mismatches,
    problems: result.problems,
    verdicts: verdictsJson(result.verdicts),
    changes: result.changes.map(({ band, ...c }) => ({
      ...c,
      band: band && {
        source: band.source.kind,
        runs: band.source.kind === 'learned' ? band.source.runs : null,
        between: logToRelative(band.betweenLog),
        betweenSd: logToRelative(band.betweenSdLog),
        within: logToRelative(band.withinLog),
        halfWidth: logToRelative(band.halfWidthLog),
        // The ratio's change (−0.05: 5% lower) the band calls a regression in `power` of runs.
        smallestCaught: {
          power: POWER,
          change: worseChange(band.caughtLog, c.better),
        },
      },
    })),
  });
}
