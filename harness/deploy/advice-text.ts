/** The plan's full arithmetic as text (`plan --explain`, and the README of plan's files): every option's verdict, reasons and costs. */

import { gib, MODE_TEXT, type ModeAssessment, type PlanAdvice } from './plan-types.js';

/** An option's verdict as one line: fit and latency target said separately, so neither reads as the other. */
function verdictText(m: ModeAssessment, sloMs: number | null): string {
  const target = `the ${sloMs} ms p99 target`;
  if (m.fits && !m.missesSlo) return m.slo?.kind === 'unmeasured' ? `fits; ${target} ${m.slo.text}` : 'fits';
  if (m.fits) return `fits, but misses ${target}: ${m.slo?.text}`;
  if (m.missesSlo) return `does not fit, and would miss ${target} too: ${m.slo?.text}`;
  return 'does not fit';
}

export function adviceText(a: PlanAdvice): string {
  const r = a.request;
  const lines = [
    `plan: ${r.models} models × ${gib(r.memGiB)}, ${r.smPct}% of the SMs each${r.sloP99Ms !== null ? `, p99 latency target ${r.sloP99Ms} ms` : ''}, on one ${a.gpu.name}`,
    '',
    a.recommendation
      ? `recommendation: ${MODE_TEXT[a.recommendation]} — ${a.why}`
      : `recommendation: none fits — ${a.why}`,
    ...(a.recommendation
      ? [
          a.runnerUp
            ? `runner-up: ${MODE_TEXT[a.runnerUp.mode]} — ${a.runnerUp.why}`
            : 'runner-up: none — no other option fits',
        ]
      : []),
  ];
  for (const m of a.assessments) {
    lines.push('', `${MODE_TEXT[m.mode]}: ${verdictText(m, r.sloP99Ms)}`);
    for (const reason of m.reasons) lines.push(`  - ${reason}`);
    for (const cost of m.breaks) lines.push(`  ! ${cost}`);
  }
  lines.push('', 'assumptions:', ...a.assumptions.map((x) => `  - ${x}`));
  return `${lines.join('\n')}\n`;
}
