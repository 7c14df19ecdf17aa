/** The combined report of a multi-GPU bench (bench --gpus): a pure function of its runs' analyses. */

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
    `# gpushare bench on ${gpus.length} GPUs: ${host.id}`,
    '',
    `${f?.host.hostname ?? 'host'}: ${gpus.map((g) => `GPU ${g.gpu.index} ${g.gpu.name ?? '?'}`).join(', ')}; driver ${f?.driverVersion ?? '?'}, CUDA ${f?.cudaVersion ?? '?'}, PyTorch ${f?.python.status === 'ok' ? (f.python.torch ?? '?') : '?'}; ${host.createdAt.slice(0, 10)}; status ${host.status}; gpushare ${version}.`,
    '',
    '## Do the GPUs interfere?',
    '',
  ];
  if (cross === null) {
    lines.push(host.gpus.length < 2 ? 'One GPU: there is no neighbour to check.' : 'The cross-GPU check did not run.');
  } else {
    const results = crossGpuResults(cross.analysis);
    lines.push(
      'Each GPU ran one client alone, and again while time-sliced clients of the same workload loaded every other GPU (paired ABBA rounds, the window released to all clients together). The ratio is its throughput alone ÷ loaded: 1 means a busy neighbour costs nothing (host CPU, PCIe, NVLink and power shared on this host included).',
      '',
      `Workloads: ${[...new Map(cross.run.plan.map((c) => [c.workload.name, c.workload])).values()].map((w) => `\`${workloadText(w)}\``).join('; ')}; run [\`${cross.run.id}\`](${reportOf(cross.run)}).`,
      '',
      '| GPU | workload | loaded neighbours | cross-GPU slowdown | 95% CI | half-width | rounds | stopped | valid |',
      '|---|---|---|---|---|---|---|---|---|',
      ...results.map((r) => {
        const s = r.metric.stats;
        const { victimGpu, loadedGpus, loadersPerGpu } = r.crossGpu;
        return `| ${victimGpu} | ${r.metric.metric.workload} | GPU ${loadedGpus.join(', ')} × ${loadersPerGpu} clients | ${f3(s.value)} | ${s.ci ? `[${f3(s.ci[0])}, ${f3(s.ci[1])}]` : 'n/a'} | ${width(s.halfWidth)} | ${s.n} | ${r.comparison.stop?.reason ?? '—'} | ${r.metric.verdict === 'invalid' ? `no: ${r.metric.reasons.join('; ')}` : 'yes'} |`;
      }),
    );
  }
  if (host.schedule) lines.push('', `Schedule: ${host.schedule.reason}.`);
  lines.push('', '## Headline ratios per GPU', '');
  const measured = gpus.filter(
    (g): g is HostGpuRun & { run: Run; analysis: Analysis } => g.run !== null && g.analysis !== null,
  );
  const names = [...new Set(measured.flatMap((g) => g.analysis.verdicts.map((v) => v.metric.id)))];
  if (names.length === 0) lines.push('No GPU measured a headline ratio.');
  else {
    lines.push(
      "Each cell: the median ratio over the GPU's rounds and its 95% CI half-width. Spread: largest ÷ smallest median across the GPUs, less 1.",
      '',
      `| ratio | ${measured.map((g) => `GPU ${g.gpu.index}`).join(' | ')} | spread |`,
      `|---|${measured.map(() => '---|').join('')}---|`,
    );
    for (const id of names) {
      const values = measured.map((g) => g.analysis.verdicts.find((v) => v.metric.id === id) ?? null);
      const points = values.flatMap((v) => (v?.stats.value != null ? [v.stats.value] : []));
      const spread =
        points.length > 1 ? `${((Math.max(...points) / Math.min(...points) - 1) * 100).toFixed(1)}%` : 'n/a';
      lines.push(
        `| \`${id}\` | ${values.map((v) => (v === null ? '—' : `${f3(v.stats.value)} ${width(v.stats.halfWidth)}${v.verdict === 'fail' || v.verdict === 'invalid' ? ` (${v.verdict})` : ''}`)).join(' | ')} | ${spread} |`,
      );
    }
  }
  lines.push('', '## Runs', '', '| GPU | name | UUID | run | status | exit code |', '|---|---|---|---|---|---|');
  for (const g of gpus) {
    const gpu = g.run ? gpuAt(g.run.fingerprint, g.gpu.index) : null;
    lines.push(
      `| ${g.gpu.index} | ${g.gpu.name ?? '?'} | ${g.gpu.uuid}${gpu?.busId ? ` (${gpu.busId})` : ''} | ${g.run ? `[\`${g.run.id}\`](${reportOf(g.run)})` : `\`${g.gpu.dir}\` (no run)`} | ${g.run?.status ?? 'missing'} | ${g.gpu.exitCode ?? '—'} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
