/** The console summary: a pure function of a run's analysis. */

import { termText } from '../../core/escape/terminal.js';
import { SIMULATED_TEXT } from '../../record/simulated.js';
import { gpuAt, isSimulated } from '../../system/nvidia/schema.js';
import { type Analysis, type MetricAnalysis, REPORT_HALF_WIDTH } from '../analysis/types.js';
import { verdictsJson } from '../gate/outputs.js';
import type { Run } from '../record/schema.js';
import { metricsJson } from './metrics-table.js';

const row = (m: MetricAnalysis, width: number) => {
  const s = m.stats;
  const ci = s.ci ? `[${s.ci[0].toFixed(3)}, ${s.ci[1].toFixed(3)}]` : 'n/a';
  const hw = s.halfWidth === null ? 'n/a' : `${(s.halfWidth * 100).toFixed(2)}%`;
  const verdict = m.threshold ? `${m.verdict} (${m.threshold.text})` : m.verdict === 'invalid' ? 'invalid' : '';
  return `${m.metric.headline ? '*' : ' '} ${m.metric.id.padEnd(width)}  ${s.value === null ? '     n/a' : `${s.value.toFixed(3)}×`.padStart(8)}  ${ci.padEnd(17)}  ${hw.padStart(6)}  ${String(s.n).padStart(6)}  ${verdict}`.trimEnd();
};

/** `all`: every ratio; otherwise the headline and graded ratios, with the rest one flag or the report away. */
export function summaryText(run: Run, analysis: Analysis, dir: string, all = false): string {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const lines = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT] : []),
    `run ${run.id} (${run.status}) on ${gpu?.name ?? 'unknown GPU'}, driver ${run.fingerprint.driverVersion ?? '?'}, CUDA ${run.fingerprint.cudaVersion ?? '?'}`,
  ];
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  lines.push(`trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`);
  for (const mode of run.modes) if (mode.status !== 'ran') lines.push(`${mode.mode}: ${mode.status} — ${mode.reason}`);
  const shown = all ? analysis.metrics : analysis.verdicts;
  if (shown.length > 0) {
    const width = Math.max(...shown.map((m) => m.metric.id.length));
    lines.push('', `  ${'metric'.padEnd(width)}    median  95% CI             ±%     rounds  verdict`);
    lines.push(...shown.map((m) => row(m, width)));
    lines.push(
      `(* headline: the primary ratio of each comparison${all ? '' : `; ${analysis.metrics.length - shown.length} more ratios in the report and in gpushare show --all`})`,
    );
    for (const c of analysis.comparisons)
      if (c.stop) lines.push(`${c.comparison.id}: ${c.stop.rounds} rounds, stopped: ${c.stop.reason}`);
    for (const v of shown) for (const reason of [...v.reasons, ...v.warnings]) lines.push(`${v.metric.id}: ${reason}`);
    for (const v of shown)
      if (v.diagnosis.length > 0)
        lines.push(
          `${v.metric.id}: wider than ±${((v.target ?? REPORT_HALF_WIDTH) * 100).toFixed(0)}%: ${v.diagnosis.join('; ')}`,
        );
  }
  for (const warning of run.warnings) lines.push(`warning: ${warning}`);
  if (run.sampler.error) lines.push(`warning: ${run.sampler.error}`);
  lines.push(`results: ${dir}`);
  // Each line shown escaped: the GPU's name, reasons and warnings are the run's text.
  return `${lines.map(termText).join('\n')}\n`;
}

/** A run's analysis as JSON: `report --format json` and `show --json` print this. */
export function summaryJson(run: Run, analysis: Analysis) {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  return {
    run: {
      id: run.id,
      status: run.status,
      createdAt: run.createdAt,
      finishedAt: run.finishedAt,
      gpu: gpu?.name ?? null,
      driver: run.fingerprint.driverVersion,
      cuda: run.fingerprint.cudaVersion,
    },
    verdicts: verdictsJson(analysis.verdicts),
    metrics: metricsJson(analysis),
    modes: run.modes.map((m) => ({ mode: m.mode, status: m.status, reason: m.reason })),
    stops: run.stops,
  };
}
