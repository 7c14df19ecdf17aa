/** The mix report (markdown, a heat map and a frontier chart) and the console summary: pure functions of the run, and their writing. */
import path from 'node:path';
import { renderSvg } from '../core/chart-svg.js';
import { mdCode, mdText } from '../core/escape/markdown.js';
import { termText } from '../core/escape/terminal.js';
import { VERSION } from '../core/version.js';
import { simulatedMarkdown } from '../record/simulated.js';
import { writeOutputFile } from '../record/store.js';
import { QUANTILE_LEVEL, requestsForInterval } from '../stats/quantile.js';
import { gpuAt, isSimulated } from '../system/nvidia/schema.js';
import { workloadText } from '../workload/spec.js';
import { analyzeStep, capacityOf } from '../workload/verdicts.js';
import { type Cell, LEGACY_GREEN_ALONE, mixCells, protections } from './analysis.js';
import { cellText, keptText, ratioText } from './cell-text.js';
import { frontierChart, heatmapChart } from './charts.js';
import { mixClaims } from './claims.js';
import { publishedComparison } from './published.js';
import type { MixRun } from './record.js';
import { CLIMB_FACTOR, type Protection, SERVED_SHARE } from './verdicts.js';

const pct = (load: number) => `${Math.round(load * 100)}%`;

/** The victim's capacity alone, as the run found or was given it, req/s. */
export function victimCapacityQps(run: MixRun): number | null {
  const s = run.settings;
  if (s.victimQps !== null) return s.victimQps;
  return capacityOf(run.capacitySteps.map((st) => analyzeStep(st, s.sloP99Ms as number))).capacityQps;
}

export function mixMarkdown(run: MixRun, charts: { heatmap: string | null; frontier: string | null }): string {
  const s = run.settings;
  const gpu = gpuAt(run.fingerprint, run.gpuIndex);
  const cells = mixCells(run);
  const found = protections(run, cells);
  const capacity = victimCapacityQps(run);
  const columns = [...new Set(cells.map((c) => c.column))];
  const tally = publishedComparison(cells, mdText(gpu?.name ?? 'GPU ?'));
  const mig =
    (gpu?.migDevices.length ?? 0) === 0
      ? 'MIG: skipped: MIG is disabled on this GPU (no MIG devices), and mix runs its tenants on the GPU itself.'
      : 'MIG: skipped: mix runs its tenants on the GPU itself, not on MIG instances (bench --modes mig measures those).';
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare mix ${mdText(run.id)}`,
    '',
    `${mdText(gpu?.name ?? 'GPU ?')} (GPU ${run.gpuIndex}), driver ${mdText(run.fingerprint.driverVersion ?? '?')}, CUDA ${mdText(run.fingerprint.cudaVersion ?? '?')}; ${mdText(run.createdAt.slice(0, 10))}; status ${mdText(run.status)}; gpushare ${VERSION}.`,
    '',
    `Victim ${mdCode(workloadText(s.victim))}, driven open-loop (${s.arrivals} arrivals) at ${s.loads.map(pct).join(' and ')} of its capacity alone, ${capacity === null ? 'which was not found' : `${capacity.toFixed(0)} req/s`} (${s.victimQps !== null ? 'given' : `the highest rate whose p99 ≤ ${s.sloP99Ms} ms held at 95%, by capacity's search, ${run.capacitySteps.length} steps`}); latency counts from each request's scheduled time. Aggressors, each flat out (closed loop): ${s.aggressors.map((a) => `${mdText(a.name)} (${mdCode(workloadText(a.workload))})`).join(', ')}.`,
    '',
    `Each round measures, in windows of ${s.windowMs} ms released at one time: the victim alone at each load, each aggressor alone, and the victim beside each aggressor (under MPS also beside the aggressor capped at ${s.threadPcts.join(', ')}% threads, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE in its own environment); odd rounds in reverse order; ${s.rounds} rounds. A cell merges the victim's latencies of every round whose two windows passed bench's result checks into one HdrHistogram per arm. Each quantile's interval is distribution-free (order statistics of the merged requests, ${QUANTILE_LEVEL * 100}% each, so a ratio's interval, from the bounds' quotients, holds at ≥ 95%): the p99's needs ${requestsForInterval(0.99)} requests, the p99.9's ${requestsForInterval(0.999)}. A victim that serves under ${SERVED_SHARE * 100}% of the requests offered, drops any, or whose last quarter of requests waits over ${CLIMB_FACTOR}× its first quarter's (median) is \`overloaded\`, reported with the rate it served, not a p99 ratio. The aggressor's throughput kept is its iterations per second beside the victim ÷ alone, uncapped, in the same round: the mean over rounds with a Student-t 95% interval.`,
    '',
    ...s.loads.flatMap((load) => [
      `## Interference matrix: victim at ${pct(load)} of capacity`,
      '',
      "Victim p99 ÷ alone [95% CI] (requests behind it); the aggressor's throughput kept [95% CI]. Alone is on the whole GPU in every mode.",
      '',
      ...(cells.some((c) => c.column === 'green' && c.reason?.includes(LEGACY_GREEN_ALONE))
        ? [`**green** in this run: ${LEGACY_GREEN_ALONE}.`, '']
        : []),
      `| aggressor | ${columns.map(mdText).join(' | ')} |`,
      `|---|${columns.map(() => '---').join('|')}|`,
      ...s.aggressors.map(
        (a) =>
          `| ${mdText(a.name)} | ${columns.map((col) => mdText(cellText(cells.find((c) => c.load === load && c.aggressor === a.name && c.column === col) as Cell))).join(' | ')} |`,
      ),
      '',
    ]),
    ...(charts.heatmap ? [`![interference matrix](${charts.heatmap})`, ''] : []),
    '## Protection',
    '',
    found.length === 0
      ? 'Not searched: it needs the mps mode.'
      : `The setting of the aggressor's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (100: uncapped) that keeps the victim's p99 within ${s.protect.kind === 'ms' ? `${s.protect.value} ms` : `${s.protect.value}× its p99 alone`} at 95% confidence (capacity's binomial test of the merged requests, never an overloaded cell) while keeping the most aggressor throughput; every setting tried is a valid measurement of the matrix.`,
    '',
    ...(found.length > 0
      ? [
          '| aggressor | load | victim p99 target ms | setting found | victim p99 ms there | aggressor throughput kept | why |',
          '|---|---|---|---|---|---|---|',
          ...found.map(
            (p: Protection) =>
              `| ${mdText(p.aggressor)} | ${pct(p.load)} | ${p.targetMs?.toFixed(3) ?? '—'} | ${p.threadPct === null ? 'none' : `${p.threadPct}%`} | ${p.p99Ms?.toFixed(3) ?? '—'} | ${keptText(p.kept)} | ${mdText(p.reason)} |`,
          ),
          '',
        ]
      : []),
    ...(charts.frontier ? [`![protection frontier](${charts.frontier})`, ''] : []),
    ...(tally ? ['## Beside published numbers (other hardware)', '', ...tally, ''] : []),
    '## Claims',
    '',
    '| claim | source | measured | verdict | rule |',
    '|---|---|---|---|---|',
    ...mixClaims(run, cells).map(
      (c) =>
        `| ${mdText(c.claim)} | ${mdText(c.source)} | ${mdText(c.measured)} | **${c.verdict}** | ${mdText(c.rule)} |`,
    ),
    '',
    '## Every cell',
    '',
    '| load | aggressor | mode | status | rounds | victim p99 alone ms (n) | beside ms (n) | p50 × | p99 × | p99.9 × | served / offered req/s | aggressor kept |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...cells.map(
      (c) =>
        `| ${pct(c.load)} | ${mdText(c.aggressor)} | ${mdText(c.column)} | ${mdText(c.status)}${c.reason ? `: ${mdText(c.reason)}` : ''} | ${c.rounds} | ${c.alone ? `${c.alone.p99.ms.toFixed(3)} (${c.alone.requests})` : '—'} | ${c.together ? `${c.together.p99.ms.toFixed(3)} (${c.together.requests})` : '—'} | ${ratioText(c.p50)} | ${ratioText(c.p99)} | ${ratioText(c.p999)} | ${c.together ? `${c.together.servedQps.toFixed(0)} / ${c.together.offeredQps.toFixed(0)}` : '—'} | ${keptText(c.kept)} |`,
    ),
    '',
    '## Modes not measured',
    '',
    ...run.outcomes.map((o) => `- ${mdText(o.mode)}: ${mdText(o.status)}: ${mdText(o.reason)}`),
    `- ${mig}`,
    ...(run.warnings.length > 0 ? ['', '## Warnings', '', ...run.warnings.map((w) => `- ${mdText(w)}`)] : []),
    '',
  ];
  return lines.join('\n');
}

/** Writes the report to `file` and its charts beside it, named after it (`<name>-heatmap.svg`); returns `file`. */
export async function writeMixReport(file: string, run: MixRun): Promise<string> {
  const base = path.basename(file, '.md');
  const cells = mixCells(run);
  const charts: { heatmap: string | null; frontier: string | null } = { heatmap: null, frontier: null };
  for (const [key, spec] of [
    ['heatmap', heatmapChart(cells)],
    ['frontier', frontierChart(cells)],
  ] as const) {
    if (spec === null) continue;
    const name = `${base}-${key}.svg`;
    await writeOutputFile(
      path.join(path.dirname(file), name),
      await renderSvg(spec, { simulated: isSimulated(run.fingerprint) }),
    );
    charts[key] = name;
  }
  await writeOutputFile(file, mixMarkdown(run, charts));
  return file;
}

/** The console's summary: a header, a line per cell, then each protection found. */
export function mixSummary(run: MixRun, cells: readonly Cell[]): string {
  const found = protections(run, cells);
  return [
    ...(cells.length > 0
      ? [`load ${'aggressor'.padEnd(10)} ${'mode'.padEnd(12)} victim p99 ÷ alone [95% CI] (n); aggressor's kept\n`]
      : []),
    ...cells.map(
      (c) =>
        `${pct(c.load).padStart(4)} ${c.aggressor.padEnd(10)} ${c.column.padEnd(12)} ${termText(c.status === 'measured' || c.status === 'overloaded' ? cellText(c) : `${c.status}: ${c.reason ?? ''}`)}\n`,
    ),
    ...found.map(
      (p) =>
        `protect from ${p.aggressor} at ${pct(p.load)}: ${p.threadPct === null ? termText(`none: ${p.reason}`) : `${p.threadPct}% threads, kept ${keptText(p.kept)}`}\n`,
    ),
  ].join('');
}
