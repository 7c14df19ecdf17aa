/** verify's report: the declared-vs-measured table, the named cases, and every limit that did not hold. */
import { mdCode, mdText } from '../core/escape/markdown.js';
import { simulatedMarkdown } from '../record/simulated.js';
import { CASES } from './cases.js';
import type { VerifyRun } from './record.js';
import { verifyExitCode } from './verdicts.js';

/** The report's verdict, by verifyExitCode's code: a pass only where a limit was measured. */
export function verdictLine(rows: VerifyRun['rows']): string {
  switch (verifyExitCode(rows)) {
    case 0:
      return 'PASS (exit 0): every declared limit measured holds on this node';
    case 1:
      return 'FAIL (exit 1): a declared limit did not hold';
    default:
      return rows.some((r) => r.verdict === 'not measured')
        ? 'INCONCLUSIVE (exit 3): a declared limit could not be measured'
        : 'NOTHING MEASURED (exit 3): no declared limit was checked on this node (every row skipped, or none)';
  }
}

/** The limits that did not hold, one line each: what the report and `plan` name. */
export function failedLimits(run: Pick<VerifyRun, 'rows'>): string[] {
  return run.rows
    .filter((r) => r.verdict === 'not enforced' || r.verdict === 'partly')
    .map((r) => `${r.id} (${r.declared}): ${r.verdict}: ${r.measured}${r.change ? `; ${r.change}` : ''}`);
}

export function verifyMarkdown(run: VerifyRun, version: string): string {
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.gpuIndex) ?? run.fingerprint.gpus[0];
  const failed = failedLimits(run);
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare verify ${mdText(run.id)}`,
    '',
    `Declared vs enforced: what the files in ${mdCode(run.artifacts)} declare${run.declared.source ? ` (generated from ${mdText(run.declared.source)})` : ''}, checked on ${mdText(gpu?.name ?? `GPU ${run.gpuIndex}`)}, driver ${mdText(run.fingerprint.driverVersion ?? 'unknown')}, ${mdText(run.createdAt)}. Status: ${mdText(run.status)}.`,
    '',
    `**${verdictLine(run.rows)}**`,
    '',
    '| limit | declared | measured | verdict | tolerance | what to change |',
    '|---|---|---|---|---|---|',
    ...run.rows.map(
      (r) =>
        `| ${mdCode(r.id, 'cell')} | ${mdText(r.declared)} | ${mdText(r.measured)} | ${mdText(r.verdict)} | ${mdText(r.tolerance)} | ${mdText(r.change ?? '')} |`,
    ),
    '',
    ...(failed.length > 0
      ? ['## Declared limits that did not hold', '', ...failed.map((f) => `- ${mdText(f)}`), '']
      : []),
    ...(run.cases.length > 0
      ? [
          '## Known silent failures, run on this node',
          '',
          '| case | what | needs | outcome | evidence |',
          '|---|---|---|---|---|',
          ...run.cases.map(
            (c) =>
              `| ${mdCode(c.name, 'cell')} | ${mdText(CASES[c.name]?.what ?? '')} | ${mdText(c.needs)} | ${mdText(c.outcome)} | ${mdText(c.evidence)} |`,
          ),
          '',
        ]
      : []),
    ...(run.warnings.length > 0 ? ['## Warnings', '', ...run.warnings.map((w) => `- ${mdText(w)}`), ''] : []),
    `Every MPS daemon here was gpushare's own, with a private pipe and log directory, stopped at the end; compute mode, clocks and persistence were left as they were. gpushare ${mdText(version)}.`,
    '',
  ];
  return lines.join('\n');
}
