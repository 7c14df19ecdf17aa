/** The markdown report: a pure function of a run, its verdicts and the names of its chart files. */
import { median } from 'simple-statistics';
import { measuredFromRun } from '../artifacts/bundle.js';
import { gpuAt, type Comparison, type Run } from '../run/schema.js';
import { throughputPerS } from '../stats/measures.js';
import { runMetrics, type Metric } from '../stats/metrics.js';
import { metricStats } from '../stats/summary.js';
import type { MetricVerdict } from '../stats/verdicts.js';

export interface ChartLinks {
  ratios?: string;
  timeline?: string;
  clients?: string;
  scaling?: string;
}

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : x.toFixed(3));
const ci = (c: [number, number] | null) => (c ? `[${f3(c[0])}, ${f3(c[1])}]` : 'n/a');
const modeTitle: Record<string, string> = { streams: 'CUDA streams', timeslice: 'Time-slicing', mps: 'MPS', mig: 'MIG' };

function metricRow(m: Metric): string {
  const s = metricStats(m);
  return `| \`${m.name}\` | ${f3(s.value)} | ${ci(s.ci)} | ${s.halfWidth === null ? 'n/a' : `±${(s.halfWidth * 100).toFixed(2)}%`} | ${s.n} | ${s.outliers.length > 0 ? `rounds ${s.outliers.join(', ')}` : '—'} | ${m.description} |`;
}

function ok(run: Run, comparisonId: string, arm: string) {
  return run.trials.filter((t) => t.comparisonId === comparisonId && t.arm === arm && t.status === 'ok').flatMap((t) => ('clients' in t ? t.clients : []));
}

function clientTable(run: Run, c: Comparison, metrics: Metric[]): string[] {
  const lines = ['| client | alone (it/s) | contended (it/s) | slowdown | 95% CI | p50 / p99 alone (ms) | p50 / p99 contended (ms) |', '|---|---|---|---|---|---|---|'];
  for (const [i] of c.clientEnv.entries()) {
    const solo = ok(run, c.id, `solo-c${i}`).filter((x) => x.client === i);
    const cont = ok(run, c.id, 'contended').filter((x) => x.client === i);
    const med = (xs: number[]) => (xs.length > 0 ? median(xs) : null);
    const lat = (xs: typeof solo) => {
      const p50 = med(xs.flatMap((x) => (x.latency ? [x.latency.p50Ms] : [])));
      const p99 = med(xs.flatMap((x) => (x.latency ? [x.latency.p99Ms] : [])));
      return p50 === null ? 'n/a' : `${p50.toFixed(3)} / ${f3(p99)}`;
    };
    const m = metrics.find((x) => x.comparisonId === c.id && x.name === `slowdown-c${i}`);
    const s = m ? metricStats(m) : null;
    lines.push(`| ${i} | ${f3(med(solo.map(throughputPerS)))} | ${f3(med(cont.map(throughputPerS)))} | ${f3(s?.value)} | ${ci(s?.ci ?? null)} | ${lat(solo)} | ${lat(cont)} |`);
  }
  return lines;
}

function streamsTable(run: Run, c: Comparison): string[] {
  const lines = ['| arm | streams | host memory | GPU time of the fixed work, median (ms) |', '|---|---|---|---|'];
  for (const arm of c.arms) {
    const times = ok(run, c.id, arm.id).map((x) => x.gpuMs);
    const v = arm.clients[0]?.variant;
    lines.push(`| \`${arm.id}\` | ${v?.streams ?? '?'} | ${v?.pinned === undefined ? '—' : v.pinned ? 'pinned' : 'pageable'} | ${times.length > 0 ? median(times).toFixed(2) : 'n/a'} |`);
  }
  return lines;
}

/** "Which mode for many small services, and what breaks in each" — answered from this run's numbers. */
function answer(run: Run, metrics: Metric[]): string[] {
  const measured = measuredFromRun(run);
  const ts = measured.timeslice;
  const mps = measured.mps;
  const mig = run.modes.find((m) => m.mode === 'mig');
  const value = (id: string) => metrics.find((m) => m.id === id)?.value ?? null;
  const lines = ['## Which mode for many small inference services on this GPU?', ''];
  if (ts && mps && ts.slowdown !== null && mps.slowdown !== null) {
    const better = mps.slowdown < ts.slowdown ? 'MPS' : 'time-slicing';
    lines.push(
      `Measured with ${ts.clients} \`${ts.workload}\` clients (the small-inference probe): **${better}** shared this GPU better. Time-sliced, each client slowed ${f3(ts.slowdown)}× and together they did ${f3(ts.aggregate)}× the work of one client alone; under MPS they slowed ${f3(mps.slowdown)}× and did ${f3(mps.aggregate)}×.`,
      '',
      `- **Time-slicing** breaks latency. The p99 request latency grew ${f3(ts.p99Ratio)}× (median contended p99 ${f3(ts.contendedP99Ms)} ms), because each process waits while the others hold the GPU. It also gives no memory isolation or limits.`,
      `- **MPS** kept p99 at ${f3(mps.p99Ratio)}× of a client alone, but it isolates neither memory nor faults: one client's fatal fault can end the others, and one daemon serves every client. Set \`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT\` when you cannot trust the workload mix.`,
    );
  } else {
    lines.push('This run did not measure both time-slicing and MPS on a contention workload, so it cannot compare them.');
  }
  if (mig?.status === 'ran') {
    const slow = value(`mig/${ts?.workload ?? 'infer'}/slowdown`);
    lines.push(`- **MIG** ran here: each client on its own slice slowed ${f3(slow)}×. Slices come in fixed shapes (at most 7), and changing them needs the GPU drained and reset.`);
  } else {
    const profiles = mig?.mig?.profiles.map((p) => p.name).join(', ');
    lines.push(`- **MIG** was not measured: ${mig?.reason ?? 'not part of this run'}.${profiles ? ` This GPU offers ${profiles}: at most 7 fixed-shape slices, each with its own memory and compute, and changing them needs the GPU drained and reset.` : ''}`);
  }
  return lines;
}

export function runMarkdown(run: Run, verdicts: readonly MetricVerdict[], charts: ChartLinks, version: string): string {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const metrics = runMetrics(run);
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const wall = run.finishedAt ? ((Date.parse(run.finishedAt) - Date.parse(run.createdAt)) / 1000).toFixed(0) : null;
  const p = run.fingerprint.python;
  const lines = [
    `# gpushare report: ${run.id}`,
    '',
    `${gpu?.name ?? 'GPU'} · driver ${run.fingerprint.driverVersion ?? '?'} · CUDA ${run.fingerprint.cudaVersion ?? '?'} · ${run.createdAt.slice(0, 10)} · run ${run.status}${wall ? ` in ${wall} s` : ''} · trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')} · gpushare ${version}`,
    '',
    '## Verdicts',
    '',
    '| metric | value | 95% CI | threshold | verdict |',
    '|---|---|---|---|---|',
    ...verdicts.map((v) => `| \`${v.metric.id}\` | ${f3(v.stats.value)} | ${ci(v.stats.ci)} | ${v.threshold?.text ?? '—'} | ${v.verdict} |`),
    '',
    ...verdicts.flatMap((v) => [...v.reasons.map((r) => `- \`${v.metric.id}\` (${v.verdict}): ${r}`), ...v.warnings.map((w) => `- \`${v.metric.id}\` (note): ${w}`)]),
    ...(charts.ratios ? ['', `![Headline ratios with 95% CIs](${charts.ratios})`] : []),
    '',
    ...answer(run, metrics),
    '',
    '## Environment',
    '',
    '| | |',
    '|---|---|',
    `| GPU ${gpu?.index ?? '?'} | ${gpu?.name ?? '?'}, ${gpu?.memoryTotalMiB ?? '?'} MiB, compute mode ${gpu?.computeMode ?? '?'}, persistence ${gpu?.persistenceMode ?? '?'}, MIG ${gpu?.migModeCurrent ?? '?'} |`,
    `| driver / CUDA | ${run.fingerprint.driverVersion ?? '?'} / ${run.fingerprint.cudaVersion ?? '?'} |`,
    `| Python | ${p.status === 'ok' ? `${p.version}, torch ${p.torch ?? '—'} (CUDA ${p.torchCuda ?? '—'}), triton ${p.triton ?? '—'}` : p.error} |`,
    `| MPS | control ${run.fingerprint.mps.controlPath ?? 'not found'}; ${run.fingerprint.mps.runningPids.length > 0 ? 'another daemon was running' : 'no other daemon running'} |`,
    `| host | ${run.fingerprint.host.platform} ${run.fingerprint.host.kernel}, ${run.fingerprint.host.cpus} CPUs, Node ${run.fingerprint.host.nodeVersion} |`,
    `| settings | ${run.config.clients} clients, ${run.config.rounds}–${run.config.maxRounds} rounds (CI target ±${(run.config.ciTarget * 100).toFixed(1)}%), ${run.config.windowMs} ms windows, sampling every ${run.config.sampleIntervalMs} ms |`,
    ...(run.contamination.length > 0 ? [`| contaminated | ${run.contamination.join('; ')} |`] : []),
  ];
  for (const mode of ['streams', 'timeslice', 'mps', 'mig'] as const) {
    const record = run.modes.find((m) => m.mode === mode);
    if (!record) continue;
    lines.push('', `## ${modeTitle[mode]}`, '');
    if (record.status !== 'ran') {
      lines.push(`${record.status}: ${record.reason}`);
      if (record.mig && record.mig.profiles.length > 0) {
        lines.push('', '| profile | id | SMs | memory (GiB) | instances | placements |', '|---|---|---|---|---|---|');
        for (const prof of record.mig.profiles) {
          const place = record.mig.placements.find((pl) => pl.profileId === prof.profileId);
          lines.push(`| ${prof.name} | ${prof.profileId} | ${prof.smCount} | ${prof.memoryGiB} | ${prof.instancesFree}/${prof.instancesTotal} | ${place ? `{${place.starts.join(',')}}:${place.size}` : '?'} |`);
        }
      }
      continue;
    }
    if (record.mps) lines.push(`MPS daemon ${record.mps.controlPid ?? '?'} (servers ${record.mps.serverPids.join(', ') || 'none'}), shut down: ${record.mps.shutdown}. Logs: ${record.mps.logFiles.map((l) => `\`${l}\``).join(', ') || 'none'}.`, '');
    for (const c of run.plan.filter((x) => x.mode === mode)) {
      const stop = run.stops.find((s) => s.comparisonId === c.id);
      lines.push(`### ${c.id}`, '', `\`${c.workload.argv.slice(1).join(' ')}\` · ${stop ? `${stop.rounds} rounds, stopped: ${stop.reason}` : 'not finished'}`, '');
      lines.push(...(mode === 'streams' ? streamsTable(run, c) : clientTable(run, c, metrics)), '');
      lines.push('| ratio | median | 95% CI | half-width | rounds | outliers | meaning |', '|---|---|---|---|---|---|---|', ...metrics.filter((m) => m.comparisonId === c.id).map(metricRow), '');
    }
    if (mode === 'streams' && charts.scaling) lines.push(`![Speedup against streams](${charts.scaling})`, '');
    if (mode !== 'streams' && charts.clients && mode === 'timeslice') lines.push(`![Per-client slowdown](${charts.clients})`, '');
  }
  if (charts.timeline) lines.push('## Timeline', '', `![GPU utilization, SM clock and power with trial windows](${charts.timeline})`, '');
  for (const w of [...run.warnings, ...(run.sampler.error ? [run.sampler.error] : [])]) lines.push(`- warning: ${w}`);
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
