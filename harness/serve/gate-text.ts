/** The server gate's outputs, each a pure function of its result: console text and JSON. */
import { termJson, termText } from '../core/escape/terminal.js';
import { TERMINAL_COLUMNS, wrapLine } from '../core/wrap.js';
import type { ServeGateResult } from './gate.js';
import { SERVE_BETWEEN_FLOOR, SERVE_NOISE_BAND, type ServeChange } from './verdicts.js';

const pct = (x: number) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)}%`;
const fmt = (x: number) => x.toFixed(3);

const RATIO_TEXT: Record<string, string> = { throughput: 'throughput', ttftP99: 'TTFT p99' };
const signed = (x: number) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)}`;

/** One row, within 80 columns: group, ratio, before→now, change, its CI, band, status. */
function row(c: ServeChange): string {
  const ci = c.ci ? `[${signed(c.ci[0])}, ${signed(c.ci[1])}]` : 'no CI';
  const band = c.band === null ? 'no band' : `±${(c.band * 100).toFixed(1)}%`;
  return `  ${c.group.padEnd(13)} ${(RATIO_TEXT[c.ratio] ?? c.ratio).padEnd(10)} ${`${fmt(c.baselineValue)}→${fmt(c.value)}`.padEnd(11)} ${pct(c.change).padStart(6)} ${ci.padEnd(14)} ${band.padEnd(7)} ${c.status}`;
}

/** The console text: one row per group and ratio, the notes folded at `columns`. */
export function serveGateText(result: ServeGateResult, columns = TERMINAL_COLUMNS): string {
  const lines = [
    termText(`gate ${result.runId} (server run) against baseline ${result.baselineId}`),
    ...wrapLine(
      `ratios of N shared copies ÷ the dedicated copy at equal requests resident; change = now ÷ before; its 95% CI adds the two runs' order-statistic CIs (round-to-round spread) in quadrature; band = that CI ⊕ ±${(SERVE_BETWEEN_FLOOR * 100).toFixed(1)}% between runs (no server-run calibration: bench's widest floor), at least ±${(SERVE_NOISE_BAND * 100).toFixed(1)}%`,
      columns,
    ),
    `  ${'group'.padEnd(13)} ${'ratio'.padEnd(10)} ${'before→now'.padEnd(11)} ${'change'.padStart(6)} ${'95% CI, %'.padEnd(14)} ${'band'.padEnd(7)} status`,
    ...result.changes.map((c) => termText(row(c))),
    ...result.mismatches.flatMap((m) => wrapLine(termText(`measured differently: ${m}`), columns)),
    ...result.problems.flatMap((p) => wrapLine(termText(`problem: ${p}`), columns)),
    `exit ${result.exitCode}: ${result.exitCode === 0 ? 'pass' : result.exitCode === 1 ? 'regression' : 'inconclusive'}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** The result as JSON, for CI. */
export function serveGateJson(result: ServeGateResult): string {
  return termJson(result);
}
