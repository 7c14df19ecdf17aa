/** The combined report of a multi-GPU bench (bench --gpus): a pure function of its runs' analyses. */

import { mdCode, mdText } from '../../core/escape/markdown.js';
import { gpuAt } from '../../system/nvidia/schema.js';
import { workloadText } from '../../workload/spec.js';
import { crossGpuResults } from '../analysis/cross-gpu.js';
import type { Analysis } from '../analysis/types.js';
import type { HostGpu, HostRun } from '../record/host-record.js';
import type { Run } from '../record/schema.js';

/** One GPU's run, analysed; run and analysis are null where the run directory is missing or unreadable. */
export interface HostGpuRun {
  gpu: HostGpu;
  run: Run | null;
  analysis: Analysis | null;
}

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : x.toFixed(3));
const width = (hw: number | null) => (hw === null ? 'n/a' : `±${(hw * 100).toFixed(2)}%`);
/** host.json is read as it is (no schema): every value from it is text to escape, numbers included. */
const hostValue = (value: unknown) => mdText(String(value));

/** `reportOf(run)`: the link to a run's own report, relative to the combined one. */
export function hostMarkdown(
  host: HostRun,
  gpus: readonly HostGpuRun[],
  cross: { run: Run; analysis: Analysis } | null,
  reportOf: (run: Run) => string,
  version: string,
): string {
  const any = gpus.find((g) => g.run !== null)?.run ?? cross?.run ?? null;
  const f = any?.fingerprint;
  const lines = [
    `# gpushare bench on ${gpus.length} GPUs: ${hostValue(host.id)}`,
    '',
    `${mdText(f?.host.hostname ?? 'host')}: ${gpus.map((g) => `GPU ${hostValue(g.gpu.index)} ${hostValue(g.gpu.name ?? '?')}`).join(', ')}; driver ${mdText(f?.driverVersion ?? '?')}, CUDA ${mdText(f?.cudaVersion ?? '?')}, PyTorch ${mdText(f?.python.status === 'ok' ? (f.python.torch ?? '?') : '?')}; ${hostValue(String(host.createdAt).slice(0, 10))}; status ${hostValue(host.status)}; gpushare ${version}.`,
    '',
    '## Do the GPUs interfere?',
    '',
  ];
  lines.push(...crossGpuSection(host, cross, reportOf));
  if (host.schedule) lines.push('', `Schedule: ${hostValue(host.schedule.reason)}.`);
  lines.push('', '## Headline ratios per GPU', '');
  const measured = gpus.filter(
    (g): g is HostGpuRun & { run: Run; analysis: Analysis } => g.run !== null && g.analysis !== null,
  );
  const names = [...new Set(measured.flatMap((g) => g.analysis.verdicts.map((v) => v.metric.id)))];
  if (names.length === 0) lines.push('No GPU measured a headline ratio.');
  else {
    lines.push(
      "Each cell: the median ratio over the GPU's rounds and its within-run 95% CI half-width. Spread: largest ÷ smallest median across the GPUs, less 1.",
      '',
      `| ratio | ${measured.map((g) => `GPU ${hostValue(g.gpu.index)}`).join(' | ')} | spread |`,
      `|---|${measured.map(() => '---|').join('')}---|`,
    );
    for (const id of names) {
      const values = measured.map((g) => g.analysis.verdicts.find((v) => v.metric.id === id) ?? null);
      const points = values.flatMap((v) => (v?.stats.value != null ? [v.stats.value] : []));
      const spread =
        points.length > 1 ? `${((Math.max(...points) / Math.min(...points) - 1) * 100).toFixed(1)}%` : 'n/a';
      lines.push(
        `| ${mdCode(id, 'cell')} | ${values.map((v) => (v === null ? '—' : `${f3(v.stats.value)} ${width(v.stats.halfWidth)}${v.verdict === 'fail' || v.verdict === 'invalid' ? ` (${v.verdict})` : ''}`)).join(' | ')} | ${spread} |`,
      );
    }
  }
  lines.push('', '## Runs', '', '| GPU | name | UUID | run | status | exit code |', '|---|---|---|---|---|---|');
  for (const g of gpus) {
    const gpu = g.run ? gpuAt(g.run.fingerprint, g.gpu.index) : null;
    lines.push(
      `| ${hostValue(g.gpu.index)} | ${hostValue(g.gpu.name ?? '?')} | ${hostValue(g.gpu.uuid)}${gpu?.busId ? ` (${mdText(gpu.busId)})` : ''} | ${g.run ? `[\`${g.run.id}\`](${reportOf(g.run)})` : `${mdCode(String(g.gpu.dir), 'cell')} (no run)`} | ${g.run?.status ?? 'missing'} | ${hostValue(g.gpu.exitCode ?? '—')} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The cross-GPU check's section: each GPU's slowdown beside loaded neighbours, or why there is none. */
function crossGpuSection(
  host: HostRun,
  cross: { run: Run; analysis: Analysis } | null,
  reportOf: (run: Run) => string,
): string[] {
  if (cross === null)
    return [host.gpus.length < 2 ? 'One GPU: there is no neighbour to check.' : 'The cross-GPU check did not run.'];
  const results = crossGpuResults(cross.analysis);
  return [
    'Each GPU ran one client alone, and again while time-sliced clients of the same workload loaded every other GPU (paired ABBA rounds, the window released to all clients together). The ratio is its throughput alone ÷ loaded: 1 means a busy neighbour costs nothing (host CPU, PCIe, NVLink and power shared on this host included).',
    '',
    `Workloads: ${[...new Map(cross.run.plan.map((c) => [c.workload.name, c.workload])).values()].map((w) => mdCode(workloadText(w))).join('; ')}; run [\`${cross.run.id}\`](${reportOf(cross.run)}).`,
    '',
    '| GPU | workload | loaded neighbours | cross-GPU slowdown | within-run 95% CI | half-width | rounds | stopped | valid |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map((r) => {
      const s = r.metric.stats;
      const { victimGpu, loadedGpus, loadersPerGpu } = r.crossGpu;
      return `| ${victimGpu} | ${mdText(r.metric.metric.workload)} | GPU ${loadedGpus.join(', ')} × ${loadersPerGpu} clients | ${f3(s.value)} | ${s.ci ? `[${f3(s.ci[0])}, ${f3(s.ci[1])}]` : 'n/a'} | ${width(s.halfWidth)} | ${s.n} | ${r.comparison.stop?.reason ?? '—'} | ${r.metric.verdict === 'invalid' ? `no: ${mdText(r.metric.reasons.join('; '))}` : 'yes'} |`;
    }),
  ];
}
