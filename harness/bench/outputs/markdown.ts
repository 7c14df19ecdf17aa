/** The markdown report: a pure function of a run, its verdicts and the names of its chart files. */
import { median } from 'simple-statistics';
import { mdCode, mdText } from '../../core/escape/markdown.js';
import { simulatedMarkdown } from '../../record/simulated.js';
import { measuringPct, type TimeAccount, timeAccountText } from '../../session/time-account.js';
import { isInProcess, MODE_SUBJECT, type ModeCost, type SharingMode } from '../../stats/mode-decision.js';
import { cpuListText, usableCpus } from '../../system/cpus.js';
import { type Fingerprint, gpuAt } from '../../system/nvidia/schema.js';
import { LOOP_OVERHEAD_LIMIT_PCT } from '../../workload/protocol.js';
import { workloadText } from '../../workload/spec.js';
import { throughputPerS } from '../analysis/measures.js';
import { armResults } from '../analysis/rounds.js';
import type { Analysis, ComparisonAnalysis, MetricAnalysis } from '../analysis/types.js';
import { measuredFromAnalysis, modeCosts, modeDecision } from '../analysis/which-mode.js';
import { clientCounts, fixedWorkStreams, MODE_NAMES, type Run } from '../record/schema.js';
import { aloneLines } from './alone-table.js';
import { scalingPoints, scalingTable } from './scaling.js';
import { costlierText, decidedText, listText, skippedText, slowedText } from './which-mode-text.js';

export interface ChartLinks {
  ratios?: string;
  timeline?: string;
  clients?: string;
  scaling?: string;
  /** The client sweep's chart. */
  clientScaling?: string;
}

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : x.toFixed(3));
const ci = (c: [number, number] | null) => (c ? `[${f3(c[0])}, ${f3(c[1])}]` : 'n/a');
const modeTitle: Record<string, string> = {
  streams: 'CUDA streams',
  green: 'Green contexts',
  timeslice: 'Time-slicing',
  mps: 'MPS',
  mig: 'MIG',
};

const level = (m: MetricAnalysis) =>
  m.stats.confidence === null
    ? ''
    : ` (${(m.stats.confidence * 100).toFixed(1)}%${m.stats.method === 'bootstrap-ratio-of-medians' ? ', bootstrap' : ''})`;

function metricRow(a: MetricAnalysis): string {
  const { metric: m, stats: s } = a;
  const width = s.halfWidth === null ? 'n/a' : `±${(s.halfWidth * 100).toFixed(2)}%`;
  return `| ${mdCode(m.name, 'cell')} | ${f3(s.value)} | ${ci(s.ci)}${level(a)} | ${width}${a.target !== null ? ` (target ±${(a.target * 100).toFixed(0)}%)` : ''} | ${s.n} | ${s.outliers.length > 0 ? `rounds ${s.outliers.join(', ')}` : '—'} | ${mdText(m.description)} |`;
}

function clientTable(ca: ComparisonAnalysis): string[] {
  const c = ca.comparison;
  const lines = [
    '| client | alone (it/s) | contended (it/s) | slowdown | within-run 95% CI | p50 / p99 alone (ms) | p50 / p99 contended (ms) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const [i] of c.clientEnv.entries()) {
    const solo = armResults(ca.rounds, `solo-c${i}`).filter((x) => x.client === i);
    const cont = armResults(ca.rounds, 'contended').filter((x) => x.client === i);
    const med = (xs: number[]) => (xs.length > 0 ? median(xs) : null);
    const lat = (xs: typeof solo) => {
      const p50 = med(xs.flatMap((x) => (x.latency ? [x.latency.p50Ms] : [])));
      const p99 = med(xs.flatMap((x) => (x.latency ? [x.latency.p99Ms] : [])));
      return p50 === null ? 'n/a' : `${p50.toFixed(3)} / ${f3(p99)}`;
    };
    const s = ca.metrics.find((x) => x.metric.name === `slowdown-c${i}`)?.stats ?? null;
    lines.push(
      `| ${i} | ${f3(med(solo.map(throughputPerS)))} | ${f3(med(cont.map(throughputPerS)))} | ${f3(s?.value)} | ${ci(s?.ci ?? null)} | ${lat(solo)} | ${lat(cont)} |`,
    );
  }
  return lines;
}

/** Memory by cause and host time per request, where the workload reported them (protocol 3). */
function causeLines(ca: ComparisonAnalysis): string[] {
  const m = ca.memory;
  const lines: string[] = [];
  if (m?.reservedPerProcessMiB != null) {
    const tenants = m.tenantsPerProcess > 1 ? ` (${m.tenantsPerProcess} tenants: ${mib(m.risePerTenantMiB)} each)` : '';
    lines.push(
      `Memory per process: nvidia-smi rose ${mib(m.risePerProcessMiB)}${tenants}; the workload's allocator held ${mib(m.reservedPerProcessMiB)}${m.graphPoolPerProcessMiB != null ? ` (${mib(m.graphPoolPerProcessMiB)} in CUDA-graph pools)` : ''}; overhead (context and runtime) ${m.overheadPerProcessMiB === null ? 'not separable: nvidia-smi rose less than the allocator holds' : mib(m.overheadPerProcessMiB)}.${m.switchedFrom !== null ? ` These processes were started for ${mdText(m.switchedFrom)} and switched to this workload: the rise includes what earlier workloads left outside the allocator (\`--fresh-clients\` measures fresh processes).` : ''}`,
    );
  }
  const h = ca.stepHost;
  if (h.soloUs !== null || h.contendedUs !== null)
    lines.push(
      `Host time per request (step() call, mean): ${us(h.soloUs)} alone, ${us(h.contendedUs)} contended${ca.comparison.tenants !== undefined ? ' (tenants are threads of one process: the rise is the wait for the GIL)' : ''}.`,
    );
  return lines.length > 0 ? [...lines, ''] : [];
}

const mib = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(0)} MiB`);
const us = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(1)} µs`);

/** Each process's check of gpushare's own loop (a bare loop of its step against the protocol's, back to back, where it ran alone). */
function loopLines(ca: ComparisonAnalysis): string[] {
  const { checks, flagged } = ca.loopCheck;
  if (checks.length === 0) return [];
  const each = checks.map(
    ({ client, overhead: o }) =>
      `client ${client} ${o.bareUsPerRequest.toFixed(1)} µs bare, ${o.loopUsPerRequest.toFixed(1)} µs in the loop (${signedPct(o.overheadPct)}${o.overheadPctLow !== undefined && o.overheadPctHigh !== undefined ? `; pairs ${signedPct(o.overheadPctLow)} to ${signedPct(o.overheadPctHigh)}` : ''})`,
  );
  return [
    `Protocol loop, per request, against a bare loop of the same step in the same process: ${each.join('; ')}${flagged ? ` — **over the ${LOOP_OVERHEAD_LIMIT_PCT}% limit**` : ''}.`,
    '',
  ];
}

const signedPct = (pct: number) => `${pct >= 0 ? '+' : ''}${pct.toFixed(2)}%`;

function streamsTable(ca: ComparisonAnalysis): string[] {
  const lines = ['| arm | streams | host memory | GPU time of the fixed work, median (ms) |', '|---|---|---|---|'];
  for (const arm of ca.comparison.arms) {
    const times = armResults(ca.rounds, arm.id).map((x) => x.gpuMs);
    const v = arm.clients[0]?.variant;
    lines.push(
      `| ${mdCode(arm.id, 'cell')} | ${v?.streams ?? '?'} | ${v?.pinned === undefined ? '—' : v.pinned ? 'pinned' : 'pageable'} | ${times.length > 0 ? median(times).toFixed(2) : 'n/a'} |`,
    );
  }
  return lines;
}

/** Each mode's costs in a fixed order (time-slicing first), in the words of earlier reports. */
function costsText(compared: readonly ModeCost[]): string {
  const costs = (['timeslice', 'mps', 'streams', 'green', 'mig'] as const).flatMap((mode) => {
    const c = compared.find((x) => x.mode === mode);
    if (!c) return [];
    const s = f3(c.slowdown?.value);
    const a = f3(c.aggregate?.value);
    if (mode === 'timeslice')
      return [`Time-sliced, each client slowed ${s}× and together they did ${a}× the work of one client alone`];
    const how = {
      mps: 'under MPS',
      streams: 'as tenants on streams of one process',
      green: 'as tenants in green contexts of one process',
      mig: 'on MIG slices',
    }[mode];
    return [`${how} they slowed ${s}× and did ${a}×`];
  });
  return `${costs.join('; ').replace(/^./, (x) => x.toUpperCase())}.`;
}

/** "Which mode for many small services, and what breaks in each" — answered from this run's numbers. */
function answer(run: Run, analysis: Analysis): string[] {
  // A run of the streams mode alone measured no sharing between processes: nothing to answer.
  if (
    run.plan.every((c) => c.mode === 'streams') &&
    run.modes.every((m) => m.mode === 'streams' || m.status === 'skipped')
  )
    return [];
  const measured = measuredFromAnalysis(run, analysis);
  const ts = measured.timeslice;
  const mig = run.modes.find((m) => m.mode === 'mig');
  const value = (id: string) => analysis.metrics.find((m) => m.metric.id === id)?.stats.value ?? null;
  const lines = ['## Which mode for many small inference services on this GPU?', ''];
  const d = modeDecision(measured);
  lines.push(...decisionLines(d, measured));
  // What breaks in each mode the run measured on a contention workload, whatever the decision.
  const shown = modeCosts(measured)
    .filter((c) => c.slowdown !== null)
    .map((c) => c.mode);
  const breaks = breakLines(measured, shown);
  if (d.kind === 'none' && breaks.length > 0) lines.push('');
  lines.push(...breaks);
  lines.push(migLine(mig, value(`mig/${ts?.workload ?? 'infer'}/slowdown`)));
  return lines;
}

/** The decision's paragraph: the mode that shared this GPU better, the modes that measured the same, or why there is no answer. */
function decisionLines(
  d: ReturnType<typeof modeDecision>,
  measured: ReturnType<typeof measuredFromAnalysis>,
): string[] {
  if (d.kind === 'none') {
    const costs = modeCosts(measured);
    return [
      d.skipped.length > 0
        ? `This run does not say which sharing mode is cheaper${costs.some((c) => c.workload === 'custom') ? ' for your own command' : ''}: ${mdText(d.reason)}. ${costsText(costs.filter((c) => c.slowdown !== null))}`
        : 'This run did not measure two sharing modes on a contention workload, so it cannot compare them.',
    ];
  }
  const weighed = d.compared.map((c) => c.mode);
  const probe = d.workload === 'custom' ? 'your own command' : 'the small-inference probe';
  const said = costsText(d.compared);
  const head = `Measured with ${d.clients} ${mdCode(d.workload)} clients (${probe})`;
  const skipped = d.skipped.length > 0 ? ` ${mdText(skippedText(d).replace(/^; n/, 'N'))}.` : '';
  if (d.kind === 'cheaper') {
    const others = weighed.filter((m) => m !== d.mode).map((m) => MODE_SUBJECT[m]);
    const below =
      weighed.length > 2
        ? ` Its 95% interval of the slowdown lies below every other mode's (${listText(others)}).`
        : '';
    return [`${head}: **${cheaperName(d.mode)}** shared this GPU better. ${said}${below}${skipped}`, ''];
  }
  const costlier = d.costlier.length > 0 ? ` ${mdText(costlierText(d))}` : '';
  return [
    `${head}: ${mdText(listText(d.tied.map((m) => MODE_SUBJECT[m])))} **measured the same here**: their 95% intervals of the slowdown overlap (${mdText(slowedText(d, d.tied, true))}). ${mdText(decidedText(d))}${costlier} ${said}${skipped}`,
    '',
  ];
}

/** How the decision names the cheaper mode in bold. */
function cheaperName(mode: SharingMode): string {
  if (mode === 'mps') return 'MPS';
  return mode === 'timeslice' ? 'time-slicing' : MODE_SUBJECT[mode];
}

/** What breaks in each mode `shown` (measured on a contention workload). */
function breakLines(measured: ReturnType<typeof measuredFromAnalysis>, shown: readonly SharingMode[]): string[] {
  const { timeslice: ts, mps } = measured;
  const breaks: string[] = [];
  if (ts && shown.includes('timeslice'))
    breaks.push(
      `- **Time-slicing** breaks latency. The p99 request latency grew ${f3(ts.p99Ratio)}× (median contended p99 ${f3(ts.contendedP99Ms)} ms), because each process waits while the others hold the GPU. It also gives no memory isolation or limits.`,
    );
  if (mps && shown.includes('mps'))
    breaks.push(
      `- **MPS** kept p99 at ${f3(mps.p99Ratio)}× of a client alone, but it isolates neither memory nor faults: one client's fatal fault can end the others, and one daemon serves every client. Set \`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT\` when you cannot trust the workload mix.`,
    );
  const inProcess = shown.filter(isInProcess);
  if (inProcess.length > 0)
    breaks.push(
      `- **${listText(inProcess.map((m) => MODE_SUBJECT[m])).replace(/^./, (x) => x.toUpperCase())}** run every tenant in one process: one CUDA context for all of them, but a fault in one tenant ends them all, and their requests share one Python interpreter.`,
    );
  return breaks;
}

/** MIG's line: its slowdown where it ran (`slow`), else why not and what this GPU offers. */
function migLine(mig: Run['modes'][number] | undefined, slow: number | null): string {
  if (mig?.status === 'ran')
    return `- **MIG** ran here: each client on its own slice slowed ${f3(slow)}×. Slices come in fixed shapes (at most 7), and changing them needs the GPU drained and reset.`;
  const profiles = mig?.mig?.profiles.map((p) => p.name).join(', ');
  return `- **MIG** was not measured: ${mdText(mig?.reason ?? 'not part of this run')}.${profiles ? ` This GPU offers ${mdText(profiles)}: at most 7 fixed-shape slices, each with its own memory and compute, and changing them needs the GPU drained and reset.` : ''}`;
}

/** Where each comparison's time went: its windows, its clients' start-up and warm-up, the harness between trials. */
function timeTable(account: TimeAccount): string[] {
  const s = (x: number) => x.toFixed(1);
  return [
    '## Where the time went',
    '',
    `Of ${s(account.wallS)} s of wall time, ${s(account.windowsS)} s (${measuringPct(account).toFixed(0)}%) inside measurement windows; ${s(account.outsideS)} s outside every comparison (fingerprint, MPS daemons, report). Seconds:`,
    '',
    '| comparison | span | windows | start-up and warm-up | harness between trials |',
    '|---|---|---|---|---|',
    ...account.parts.map(
      (p) => `| ${mdCode(p.id, 'cell')} | ${s(p.spanS)} | ${s(p.windowsS)} | ${s(p.startupS)} | ${s(p.harnessS)} |`,
    ),
    '',
  ];
}

export function runMarkdown(run: Run, analysis: Analysis, charts: ChartLinks, version: string): string {
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    ...headLines(run, version),
    ...verdictLines(analysis, charts),
    '',
    ...answer(run, analysis),
    '',
    ...environmentLines(run),
  ];
  for (const mode of MODE_NAMES) {
    const record = run.modes.find((m) => m.mode === mode);
    if (record) lines.push(...modeLines(mode, record, analysis, charts));
  }
  if (run.config.clientCounts !== undefined) {
    lines.push(
      '## Scaling with the number of clients',
      '',
      `Each point is a comparison of its own (rounds, CI); one solo arm stands for every client beyond 2 (identical processes). Memory per client: memory.used while the trials ran, less before the clients started, over the clients (context and workload; under MPS with the server's share).`,
      '',
    );
    lines.push(...scalingTable(scalingPoints(analysis)), '');
    if (charts.clientScaling) lines.push(`![Scaling with the number of clients](${charts.clientScaling})`, '');
  }
  lines.push(...aloneLines(analysis));
  if (run.timeAccount) lines.push(...timeTable(run.timeAccount));
  if (charts.timeline)
    lines.push('## Timeline', '', `![GPU utilization, SM clock and power with trial windows](${charts.timeline})`, '');
  for (const w of [...run.warnings, ...(run.sampler.error ? [run.sampler.error] : [])])
    lines.push(`- warning: ${mdText(w)}`);
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

/** The report's title and the line under it: GPU, driver, date, status, wall time, trials. */
function headLines(run: Run, version: string): string[] {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const wall = run.finishedAt ? ((Date.parse(run.finishedAt) - Date.parse(run.createdAt)) / 1000).toFixed(0) : null;
  return [
    `# gpushare report: ${run.id}`,
    '',
    `${mdText(gpu?.name ?? 'GPU')} · driver ${mdText(run.fingerprint.driverVersion ?? '?')} · CUDA ${mdText(run.fingerprint.cudaVersion ?? '?')} · ${mdText(run.createdAt.slice(0, 10))} · run ${run.status}${wall ? ` in ${wall} s` : ''} · trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')} · gpushare ${version}`,
    '',
    ...(run.timeAccount ? [mdText(timeAccountText(run.timeAccount)), ''] : []),
  ];
}

/** The verdicts' table, their reasons and notes, why some intervals are wide, and the ratios' chart. */
function verdictLines(analysis: Analysis, charts: ChartLinks): string[] {
  const verdicts = analysis.verdicts;
  const diagnosed = analysis.metrics.filter((m) => m.diagnosis.length > 0);
  return [
    '## Verdicts',
    '',
    "Each within-run CI is an exact order-statistic interval of the median over this run's rounds; its coverage is in brackets. It says how well this run pins the median, not how far a run on another GPU may differ: the gate's band adds that (docs/statistics-and-gate.md). Every slowdown and aggregate throughput is against one client (tenant) alone on the whole GPU, in every mode (under MIG, alone on its own slice); green contexts' in-slice ratios are named so.",
    '',
    '| metric | value | within-run CI (coverage) | half-width | rounds | threshold | verdict |',
    '|---|---|---|---|---|---|---|',
    ...verdicts.map(
      (v) =>
        `| ${mdCode(v.metric.id, 'cell')} | ${f3(v.stats.value)} | ${ci(v.stats.ci)}${level(v)} | ${v.stats.halfWidth === null ? 'n/a' : `±${(v.stats.halfWidth * 100).toFixed(2)}%`} | ${v.stats.n} | ${v.threshold?.text ?? '—'} | ${v.verdict} |`,
    ),
    '',
    ...verdicts.flatMap((v) => [
      ...v.reasons.map((r) => `- ${mdCode(v.metric.id)} (${v.verdict}): ${mdText(r)}`),
      ...v.warnings.map((w) => `- ${mdCode(v.metric.id)} (note): ${mdText(w)}`),
    ]),
    ...(diagnosed.length > 0
      ? [
          '',
          '### Why some intervals are wide',
          '',
          ...diagnosed.map(
            (m) =>
              `- ${mdCode(m.metric.id)} ±${m.stats.halfWidth === null ? 'n/a' : `${(m.stats.halfWidth * 100).toFixed(1)}%`}: ${mdText(m.diagnosis.join('; '))}`,
          ),
        ]
      : []),
    ...(charts.ratios ? ['', `![Headline ratios with within-run 95% CIs](${charts.ratios})`] : []),
  ];
}

/** The environment's table: GPU, driver, Python, MPS, host, settings. */
function environmentLines(run: Run): string[] {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const p = run.fingerprint.python;
  return [
    '## Environment',
    '',
    '| | |',
    '|---|---|',
    `| GPU ${gpu?.index ?? '?'} | ${mdText(`${gpu?.name ?? '?'}, ${gpu?.memoryTotalMiB ?? '?'} MiB, compute mode ${gpu?.computeMode ?? '?'}, persistence ${gpu?.persistenceMode ?? '?'}, MIG ${gpu?.migModeCurrent ?? '?'}`)} |`,
    `| driver / CUDA | ${mdText(`${run.fingerprint.driverVersion ?? '?'} / ${run.fingerprint.cudaVersion ?? '?'}`)} |`,
    `| Python | ${mdText(p.status === 'ok' ? `${p.version}, torch ${p.torch ?? '—'} (CUDA ${p.torchCuda ?? '—'}), triton ${p.triton ?? '—'}` : p.error)} |`,
    `| MPS | control ${mdText(run.fingerprint.mps.controlPath ?? 'not found')}; ${run.fingerprint.mps.runningPids.length > 0 ? 'another daemon was running' : 'no other daemon running'} |`,
    `| host | ${mdText(`${run.fingerprint.host.platform} ${run.fingerprint.host.kernel}, ${cpusText(run.fingerprint.host)}, Node ${run.fingerprint.host.nodeVersion}`)} |`,
    `| settings | ${clientCounts(run.config).join(', ')} clients, ${run.config.roundPolicy.minRounds}–${run.config.roundPolicy.maxRounds} rounds (CI targets: headline ±${(run.config.roundPolicy.ciTarget * 100).toFixed(1)}%, graded ±${(run.config.roundPolicy.gradedCiTarget * 100).toFixed(1)}%; ${run.config.roundPolicy.timeBudgetS} s for extra rounds), ${run.config.windowMs} ms windows, CPU pinning ${run.config.cpuPin}, sampling every ${run.config.sampleIntervalMs} ms |`,
    ...(run.contamination.length > 0 ? [`| contaminated | ${mdText(run.contamination.join('; '))} |`] : []),
  ];
}

/** A mode's section: why it was skipped (with MIG's profiles), or its daemon, its comparisons and its chart. */
function modeLines(
  mode: (typeof MODE_NAMES)[number],
  record: Run['modes'][number],
  analysis: Analysis,
  charts: ChartLinks,
): string[] {
  const lines = ['', `## ${modeTitle[mode]}`, ''];
  if (record.status !== 'ran') return [...lines, ...skippedModeLines(record)];
  if (record.mps)
    lines.push(
      `MPS daemon ${record.mps.controlPid ?? '?'} (servers ${record.mps.serverPids.join(', ') || 'none'}), shut down: ${mdText(record.mps.shutdown)}. Logs: ${record.mps.logFiles.map((l) => mdCode(l)).join(', ') || 'none'}.`,
      '',
    );
  for (const ca of analysis.comparisons.filter((x) => x.comparison.mode === mode)) lines.push(...comparisonLines(ca));
  if (mode === 'streams' && charts.scaling) lines.push(`![Speedup against streams](${charts.scaling})`, '');
  if (mode !== 'streams' && charts.clients && mode === 'timeslice')
    lines.push(`![Per-client slowdown](${charts.clients})`, '');
  return lines;
}

/** A mode that did not run: why, and for MIG the profiles this GPU offers. */
function skippedModeLines(record: Run['modes'][number]): string[] {
  const lines = [`${record.status}: ${mdText(String(record.reason))}`];
  if (record.mig && record.mig.profiles.length > 0) {
    lines.push('', '| profile | id | SMs | memory (GiB) | instances | placements |', '|---|---|---|---|---|---|');
    for (const prof of record.mig.profiles) {
      const place = record.mig.placements.find((pl) => pl.profileId === prof.profileId);
      lines.push(
        `| ${mdText(prof.name)} | ${prof.profileId} | ${prof.smCount} | ${prof.memoryGiB} | ${prof.instancesFree}/${prof.instancesTotal} | ${place ? `{${place.starts.join(',')}}:${place.size}` : '?'} |`,
      );
    }
  }
  return lines;
}

/** One comparison's section: its workload and stop, its clients' table, causes, loop check and ratios. */
function comparisonLines(ca: ComparisonAnalysis): string[] {
  const c = ca.comparison;
  const stop = ca.stop;
  const pinned = c.clientEnv.map((e) => e.GPUSHARE_CPUS).filter(Boolean);
  const lines = [
    `### ${mdText(c.id)}`,
    '',
    `${mdCode(workloadText(c.workload))} · ${stop ? `${stop.rounds} rounds, stopped: ${stop.reason}` : 'not finished'}${pinned.length > 0 ? ` · clients pinned to CPUs ${mdText(pinned.join(', '))}` : ''}`,
    '',
  ];
  if (stop?.reason === 'unsupported') return [...lines, `skipped: ${mdText(stop.detail ?? 'unsupported here')}`, ''];
  return [
    ...lines,
    ...(fixedWorkStreams(c) ? streamsTable(ca) : clientTable(ca)),
    '',
    ...causeLines(ca),
    ...loopLines(ca),
    '| ratio | median | within-run CI (coverage) | half-width | rounds | outliers | meaning |',
    '|---|---|---|---|---|---|---|',
    ...ca.metrics.map(metricRow),
    '',
  ];
}

/** "16 CPUs", or what a cpuset and a quota left the run: "64 CPUs, of which the run could use 8-11 and had a quota of 2.5 CPUs: 2 at once". */
function cpusText(host: Fingerprint['host']): string {
  const usable = usableCpus(host);
  const quota = host.cpuQuota ?? null;
  const limits = [
    ...(usable.ids.length < host.cpus ? [`could use ${cpuListText(usable.ids)}`] : []),
    ...(quota !== null && usable.count < usable.ids.length
      ? [`had a quota of ${Number(quota.toFixed(2))} CPUs: ${usable.count} at once`]
      : []),
  ];
  return limits.length > 0 ? `${host.cpus} CPUs, of which the run ${limits.join(' and ')}` : `${host.cpus} CPUs`;
}
