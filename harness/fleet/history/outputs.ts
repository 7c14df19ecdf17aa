/** `fleet history`'s console text and JSON, and the words both and the markdown use: pure functions of the history. */
import { termJson, termText } from '../../core/escape/terminal.js';
import {
  type HeadlineChange,
  type HeadlineHistory,
  type HistoryAnalysis,
  type HistoryGroup,
  historyExitCode,
  MIN_RUNS_TO_TEST,
} from './analyze.js';

export const f3 = (x: number) => x.toFixed(3);
/** A ratio's change as a signed percentage: ×1.048 → +4.8%. */
export const signedPct = (ratio: number) => `${ratio >= 1 ? '+' : '−'}${(Math.abs(ratio - 1) * 100).toFixed(1)}%`;
/** A p-value to two significant digits (0.0010, not 0.001, for a p just over the default level). */
export function pText(p: number): string {
  if (p === 0) return '≈ 0';
  if (p < 0.001) return p.toExponential(1);
  return p < 0.1 ? p.toPrecision(2) : p.toFixed(2);
}
const arrow = (h: HeadlineHistory) => (h.better === 'higher' ? '↑' : '↓');

/** A UTC time as the outputs print it: 2026-11-24 10:12. */
export const timeText = (iso: string) => iso.slice(0, 16).replace('T', ' ');

/** A group's runs' span of creation. */
export function spanText(g: HistoryGroup): string {
  const first = timeText(g.runs[0]?.createdAt ?? '');
  const last = timeText(g.runs.at(-1)?.createdAt ?? '');
  return first === last ? `${first} UTC` : `${first} to ${last} UTC`;
}

/** What the runs of a group share, besides the GPU model. */
export const keyText = (g: HistoryGroup) =>
  `driver ${g.driver} · protocol loop ${g.protocolLoop} · release lead ${g.releaseLeadMs} ms · gpushare ${g.gpushare} · ${g.settings}`;

/** A kept change in words: where, how large with its interval, which way, how sure, over how many runs. */
export function changeText(g: HistoryGroup, c: HeadlineChange): string {
  return `changed at run ${c.run} of ${g.runs.length}, ${c.runId}: median after ÷ before ×${f3(c.ratio)} [95% CI ${f3(c.ci[0])}, ${f3(c.ci[1])}] (${signedPct(c.ratio)}, ${c.direction}), Welch p ${pText(c.p)}, ${c.before} runs before, ${c.after} after`;
}

/** The candidates the merge removed, counted by why. */
function removedText(h: HeadlineHistory, level: number): string {
  const floor = h.removed.filter((r) => r.failed === 'floor').length;
  const p = h.removed.filter((r) => r.failed === 'p').length;
  return [
    floor > 0 ? `${floor} candidate(s) under its ±${(h.floor * 100).toFixed(1)}% floor` : '',
    p > 0 ? `${p} candidate(s) at Welch p ≥ ${level}` : '',
  ]
    .filter(Boolean)
    .join(', ');
}

/** The exit code in words. */
export function exitText(history: HistoryAnalysis): string {
  const code = historyExitCode(history);
  if (code === 1) {
    const series = history.groups.flatMap((g) => g.headlines).filter((h) => h.changes.length > 0).length;
    return `exit 1: ${history.changes} change(s) in ${series} series`;
  }
  if (code === 3) return `exit 3: no series had the ${MIN_RUNS_TO_TEST} runs a test needs`;
  return `exit 0: no change in the ${history.testedSeries} series tested`;
}

function headlineLine(g: HistoryGroup, h: HeadlineHistory, level: number): string[] {
  const head = `  ${h.metricId} ${arrow(h)} ${h.points.length} runs`;
  if (!h.tested) return [`${head}: too few to test (${MIN_RUNS_TO_TEST} needed)`];
  if (h.changes.length === 0) {
    const removed = removedText(h, level);
    return [`${head}: no change${removed ? ` (${removed})` : ''}`];
  }
  return h.changes.map((c) => `${head}: ${changeText(g, c)}`);
}

export function historyText(history: HistoryAnalysis, reportFile: string | null): string {
  const runs = history.groups.reduce((n, g) => n + g.runs.length, 0);
  const lines = [
    `history: ${runs} bench run(s) in ${history.groups.length} group(s) of like runs; ${history.testedSeries} headline series of ${MIN_RUNS_TO_TEST}+ runs tested; a change is kept at Welch p < ${history.level} and at least the headline's floor`,
  ];
  for (const g of history.groups) {
    const head = `${g.id} ${g.gpuModel}, ${g.runs.length} run(s), ${spanText(g)}`;
    if (g.headlines.every((h) => !h.tested)) {
      lines.push(`${head}: too few to test (${MIN_RUNS_TO_TEST} needed)`);
      continue;
    }
    lines.push(head, `  ${keyText(g)}`, ...g.headlines.flatMap((h) => headlineLine(g, h, history.level)));
  }
  for (const x of history.notCompared) lines.push(`${x.fails ? 'unreadable' : 'not compared'}: ${x.path}: ${x.reason}`);
  if (reportFile) lines.push(`report: ${reportFile}`);
  lines.push(exitText(history));
  // Each line shown escaped: run ids, paths, GPU models and reasons are the runs' text.
  return `${lines.map(termText).join('\n')}\n`;
}

/** The history as `fleet history --json` prints it, with the exit code. */
export function historyJson(history: HistoryAnalysis): string {
  return termJson({ exitCode: historyExitCode(history), ...history });
}
