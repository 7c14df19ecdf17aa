/** What verify prints of a run: a row per declared limit, a line per case, the limits that did not hold. */
import { termText } from '../core/escape/terminal.js';
import { failedLimits } from './markdown.js';
import type { VerifyRun } from './record.js';

export function verifySummary(run: Pick<VerifyRun, 'rows' | 'cases'>): string {
  const lines = [
    ...run.rows.map((r) => `${r.verdict.padEnd(13)} ${r.id}: ${r.declared}\n${' '.repeat(14)}${r.measured}`),
    ...run.cases.map((c) => `${`case ${c.outcome}`.padEnd(20)} ${c.name}: ${c.evidence}`),
    ...failedLimits(run).map((f) => `did not hold: ${f}`),
  ];
  return lines.flatMap((l) => l.split('\n').map((part) => termText(part))).join('\n');
}
