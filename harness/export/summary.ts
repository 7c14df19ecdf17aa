/** The console summary: a pure function from a run and its metrics to text. */
import type { Metric } from '../stats/metrics.js';
import { metricStats } from '../stats/summary.js';
import type { MetricVerdict } from '../stats/verdicts.js';
import { gpuAt, type Run } from '../run/schema.js';

export function summaryText(run: Run, metrics: readonly Metric[], verdicts: readonly MetricVerdict[], dir: string): string {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const lines = [
    `run ${run.id} (${run.status}) on ${gpu?.name ?? 'unknown GPU'}, driver ${run.fingerprint.driverVersion ?? '?'}, CUDA ${run.fingerprint.cudaVersion ?? '?'}`,
  ];
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  lines.push(`trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`);
  for (const mode of run.modes) if (mode.status !== 'ran') lines.push(`${mode.mode}: ${mode.status} — ${mode.reason}`);
  if (metrics.length > 0) {
    const verdictOf = new Map(verdicts.map((v) => [v.metric.id, v]));
    const width = Math.max(...metrics.map((m) => m.id.length));
    lines.push('', `  ${'metric'.padEnd(width)}    median  95% CI             ±%     rounds  verdict`);
    for (const m of metrics) {
      const s = metricStats(m);
      const v = verdictOf.get(m.id);
      const ci = s.ci ? `[${s.ci[0].toFixed(3)}, ${s.ci[1].toFixed(3)}]` : 'n/a';
      const hw = s.halfWidth === null ? 'n/a' : `${(s.halfWidth * 100).toFixed(2)}%`;
      const verdict = v ? (v.threshold ? `${v.verdict} (${v.threshold.text})` : v.verdict === 'invalid' ? 'invalid' : '') : '';
      lines.push(`${m.headline ? '*' : ' '} ${m.id.padEnd(width)}  ${s.value === null ? '     n/a' : `${s.value.toFixed(3)}×`.padStart(8)}  ${ci.padEnd(17)}  ${hw.padStart(6)}  ${String(s.n).padStart(6)}  ${verdict}`.trimEnd());
    }
    lines.push('(* headline: the primary ratio of each comparison)');
    for (const v of verdicts) for (const reason of [...v.reasons, ...v.warnings]) lines.push(`${v.metric.id}: ${reason}`);
  }
  for (const warning of run.warnings) lines.push(`warning: ${warning}`);
  if (run.sampler.error) lines.push(`warning: ${run.sampler.error}`);
  lines.push(`results: ${dir}`);
  return `${lines.join('\n')}\n`;
}
