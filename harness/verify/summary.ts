/** What verify prints of a run: a row per declared limit, a line per case, the limits that did not hold. */
import { termText } from '../core/escape/terminal.js';
import { failedLimits } from './markdown.js';
import type { VerifyRun } from './record.js';

export function verifySummary(run: Pick<VerifyRun, 'rows' | 'cases'>): string {
  // Each value on its line: a line break in one (a crafted record) shows escaped, never as a line of its own.
  const t = termText;
  return [
    ...run.rows.map(
      (r) => `${t(r.verdict).padEnd(13)} ${t(r.id)}: ${t(r.declared)}\n${' '.repeat(14)}${t(r.measured)}`,
    ),
    ...run.cases.map((c) => `${`case ${t(c.outcome)}`.padEnd(20)} ${t(c.name)}: ${t(c.evidence)}`),
    ...failedLimits(run).map((f) => `did not hold: ${t(f)}`),
  ].join('\n');
}
