/** Writes a run's report: the markdown and its SVG charts, each a pure function of the analysis. */
import path from 'node:path';
import { renderSvg } from '../../core/chart-svg.js';
import { UserError } from '../../core/errors.js';
import { htmlPage, svgDataUrl } from '../../core/escape/html.js';
import { VERSION } from '../../core/version.js';
import { RunIdSchema } from '../../record/record-file.js';
import { writeOutputFile } from '../../record/store.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { analyze } from '../analysis/analyze.js';
import type { Analysis } from '../analysis/types.js';
import type { HostRun } from '../record/host-record.js';
import type { Run } from '../record/schema.js';
import { loadRun } from '../record/store.js';
import { clientScalingChart, clientsChart, ratiosChart, scalingChart, timelineChart } from './charts.js';
import { type HostGpuRun, hostMarkdown } from './host-markdown.js';
import { type ChartLinks, runMarkdown } from './markdown.js';
import { scalingPoints } from './scaling.js';

/**
 * `<dir>/<name><suffix>`, where the name comes from run ids: refused unless it is a safe token, so a
 * run id such as "../../x" can never write outside `dir`.
 */
export function runFile(dir: string, name: string, suffix = ''): string {
  if (!RunIdSchema.safeParse(name).success)
    throw new UserError(
      `refusing to use ${JSON.stringify(name)} as a file name: run ids are letters, digits, ".", "_" and "-"`,
    );
  return path.join(dir, `${name}${suffix}`);
}

/** A run's charts as SVG documents, by the name its report links them under; those with nothing to draw left out. */
async function runCharts(run: Run, analysis: Analysis): Promise<Array<[keyof ChartLinks, string]>> {
  const specs = {
    ratios: ratiosChart(analysis.verdicts),
    timeline: timelineChart(run, analysis),
    clients: clientsChart(analysis),
    scaling: scalingChart(analysis),
    clientScaling: run.config.clientCounts !== undefined ? clientScalingChart(scalingPoints(analysis)) : null,
  };
  const charts: Array<[keyof ChartLinks, string]> = [];
  for (const [name, spec] of Object.entries(specs))
    if (spec)
      charts.push([name as keyof ChartLinks, await renderSvg(spec, { simulated: isSimulated(run.fingerprint) })]);
  return charts;
}

/** Writes `<out>/<run-id>.md` and its charts in `<out>/<run-id>/`; returns the markdown's path. */
export async function writeRunReport(run: Run, analysis: Analysis, out: string): Promise<string> {
  const links: ChartLinks = {};
  const charts = runFile(out, run.id);
  for (const [name, svg] of await runCharts(run, analysis)) {
    await writeOutputFile(path.join(charts, `${name}.svg`), svg);
    links[name] = `${run.id}/${name}.svg`;
  }
  const file = runFile(out, run.id, '.md');
  await writeOutputFile(file, runMarkdown(run, analysis, links, VERSION));
  return file;
}

/** The run's report as one self-contained HTML page, its charts inlined: what a CI job attaches. */
export async function runHtml(run: Run, analysis: Analysis): Promise<string> {
  const links: ChartLinks = {};
  for (const [name, svg] of await runCharts(run, analysis)) links[name] = svgDataUrl(svg);
  return htmlPage(`gpushare run ${run.id}`, runMarkdown(run, analysis, links, VERSION));
}

/** Writes `<out>/<run-id>.html` (runHtml); returns its path. */
export async function writeRunHtml(run: Run, analysis: Analysis, out: string): Promise<string> {
  const file = runFile(out, run.id, '.html');
  await writeOutputFile(file, await runHtml(run, analysis));
  return file;
}

/**
 * Writes a multi-GPU bench's combined report `<out>/<host-id>.md`, and, with `runReports`, each of
 * its runs' own reports beside it; returns the combined report's path.
 */
export async function writeHostReport(
  parent: string,
  host: HostRun,
  out: string,
  runReports: boolean,
): Promise<string> {
  const load = async (dir: string) => {
    const run = await loadRun(path.join(parent, dir)).catch(() => null);
    return run === null ? null : { run, analysis: analyze(run) };
  };
  const gpus: HostGpuRun[] = [];
  for (const gpu of host.gpus) gpus.push({ gpu, ...((await load(gpu.dir)) ?? { run: null, analysis: null }) });
  const cross = host.crossDir === null ? null : await load(host.crossDir);
  if (runReports) {
    for (const r of [...gpus, ...(cross ? [cross] : [])])
      if (r.run && r.analysis) await writeRunReport(r.run, r.analysis, out);
  }
  const file = runFile(out, host.id, '.md');
  await writeOutputFile(
    file,
    hostMarkdown(host, gpus, cross, (run) => `${run.id}.md`, VERSION),
  );
  return file;
}
