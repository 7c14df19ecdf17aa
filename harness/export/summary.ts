/** The console summary: a pure function from a run and its metrics to text. */
import type { Metric } from '../stats/metrics.js';
import type { Run } from '../run/schema.js';

export function summaryText(run: Run, metrics: readonly Metric[], dir: string): string {
  const gpu = run.fingerprint.gpus.find((g) => g.index === run.config.gpuIndex);
  const lines = [
    `run ${run.id} (${run.status}) on ${gpu?.name ?? 'unknown GPU'}, driver ${run.fingerprint.driverVersion ?? '?'}, CUDA ${run.fingerprint.cudaVersion ?? '?'}`,
  ];
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  lines.push(`trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`);
  for (const mode of run.modes) if (mode.status !== 'ran') lines.push(`${mode.mode}: ${mode.status} — ${mode.reason}`);
  if (metrics.length > 0) {
    const width = Math.max(...metrics.map((m) => m.id.length));
    lines.push('', `${'metric'.padEnd(width)}  median  rounds`);
    for (const m of metrics) {
      lines.push(`${m.id.padEnd(width)}  ${m.value === null ? '   n/a' : `${m.value.toFixed(3)}×`.padStart(6)}  ${String(m.perRound.length).padStart(6)}${m.headline ? '  *' : ''}`);
    }
    lines.push('(* headline ratio)');
  }
  for (const warning of run.warnings) lines.push(`warning: ${warning}`);
  if (run.sampler.error) lines.push(`warning: ${run.sampler.error}`);
  lines.push(`results: ${dir}`);
  return `${lines.join('\n')}\n`;
}
