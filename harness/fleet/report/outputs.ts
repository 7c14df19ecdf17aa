/** The fleet report's console text, JUnit XML and JSON: pure functions of the fleet analysis. */

import { termJson, termText } from '../../core/escape/terminal.js';
import { type JunitCase, junitDocument } from '../../core/junit.js';
import type { FleetAnalysis, FleetNode, NodeRatio } from './analyze.js';

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : x.toFixed(3));
const ciText = (ci: readonly [number, number] | null) => (ci ? `[${f3(ci[0])}, ${f3(ci[1])}]` : 'n/a');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** Exit codes of `fleet report`: 0 no node fails, 1 an outlier or a failing node (or an unreadable run). */
export function fleetExitCode(fleet: FleetAnalysis): number {
  return fleet.pass ? 0 : 1;
}

/** One outlier ratio of a node, in words. */
export function outlierText(fleet: FleetAnalysis, node: FleetNode, r: NodeRatio): string {
  const band = fleet.groups.find((g) => g.id === node.group)?.ratios.find((d) => d.metricId === r.metricId)?.band;
  return `${r.metricId} = ${f3(r.value)} CI ${ciText(r.ci)} lies wholly ${r.outlier} the group's band ${band ? `[${f3(band.lo)}, ${f3(band.hi)}]` : ''} (${r.direction})`;
}

export function fleetText(fleet: FleetAnalysis, reportFile: string | null): string {
  const runs = fleet.nodes.length;
  const lines = [
    `fleet: ${runs} bench run(s) on ${fleet.gpus} GPU(s) (${fleet.gpuModels.join(', ')}) in ${fleet.groups.length} group(s) of like settings`,
    ...fleet.groups.flatMap(groupLines),
  ];
  for (const x of fleet.notCompared) lines.push(`${x.fails ? 'unreadable' : 'not compared'}: ${x.path}: ${x.reason}`);
  for (const node of fleet.nodes.filter((n) => !n.pass)) {
    for (const r of node.ratios.filter((x) => x.outlier !== null))
      lines.push(`outlier: ${node.name}: ${outlierText(fleet, node, r)}`);
    const apart = node.apart ? ' (set aside: not counted)' : '';
    for (const flag of node.flags) lines.push(`${flag.kind}${apart}: ${node.name}: ${flag.text}`);
  }
  if (reportFile) lines.push(`report: ${reportFile}`);
  const code = fleetExitCode(fleet);
  lines.push(
    `exit ${code}: ${code === 0 ? 'no outlier and no failing node' : `${fleet.outlierNodes.length} outlier node(s), ${fleet.failingNodes.length} failing node(s)${fleet.notCompared.some((x) => x.fails) ? ', unreadable runs' : ''}`}`,
  );
  // Each line shown escaped: node names, GPU models, reasons and paths are the runs' text.
  return `${lines.map(termText).join('\n')}\n`;
}

/** A group of like runs: its head, and why it was set aside or each ratio's spread, band and outliers. */
function groupLines(g: FleetAnalysis['groups'][number]): string[] {
  const head = `${g.id} ${g.gpuModel}, ${g.nodes.length} run(s) on ${g.gpus} GPU(s): ${g.settings}`;
  if (g.setAside) return [head, `  set aside: ${g.setAside}`];
  const lines = [head];
  if (g.untested) lines.push(`  outliers not tested: ${g.untested}`);
  for (const d of g.ratios) {
    const out = d.points.filter((p) => p.outlier !== null).map((p) => p.node);
    lines.push(
      `  ${d.metricId}: n ${d.n}, median ${f3(d.median)}, ${f3(d.min)}–${f3(d.max)} (spread ${pct(d.spread)})${d.band ? `, band [${f3(d.band.lo)}, ${f3(d.band.hi)}]` : ''}${out.length > 0 ? `, outliers: ${out.join(', ')}` : ''}`,
    );
  }
  return lines;
}

/** One testcase per node and ratio, and one per node for its checks, so CI systems list each failing node. */
export function fleetJunit(fleet: FleetAnalysis, name: string, simulated = false): string {
  const cases: JunitCase[] = [];
  for (const node of fleet.nodes) {
    const classname = `gpushare.fleet.${node.name}`;
    if (node.apart) {
      // A measurement of its own: listed, its checks named, failing nothing.
      const flags = node.flags.map((f) => `${f.kind}: ${f.text}`).join('; ');
      cases.push({ classname, name: 'node checks', outcome: 'skipped', message: `set aside: ${flags || 'ok'}` });
      continue;
    }
    for (const r of node.ratios) {
      const summary = `${node.name} ${r.metricId} = ${f3(r.value)} CI ${ciText(r.ci)}, threshold ${r.threshold ?? 'none'}, verdict ${r.verdict}`;
      const detail = r.reasons.join('\n');
      const at = { classname, name: r.metricId };
      if (r.outlier !== null)
        cases.push({
          ...at,
          outcome: 'failure',
          type: 'outlier',
          message: `${node.name}: ${outlierText(fleet, node, r)}`,
          detail,
        });
      else if (r.verdict === 'fail')
        cases.push({ ...at, outcome: 'failure', type: 'threshold', message: `${summary}: fail`, detail });
      else if (r.verdict === 'invalid')
        cases.push({ ...at, outcome: 'error', type: 'invalid', message: summary, detail });
      else if (r.verdict === 'inconclusive') cases.push({ ...at, outcome: 'skipped', message: summary });
      else cases.push({ ...at, outcome: 'passed' });
    }
    const flags = node.flags;
    const checks = { classname, name: 'node checks' };
    cases.push(
      flags.length > 0
        ? {
            ...checks,
            outcome: 'failure',
            type: [...new Set(flags.map((f) => f.kind))].join(','),
            message: flags.map((f) => `${f.kind}: ${f.text}`).join('; '),
            detail: null,
          }
        : { ...checks, outcome: 'passed' },
    );
  }
  for (const x of fleet.notCompared.filter((n) => n.fails))
    cases.push({
      classname: 'gpushare.fleet',
      name: x.path,
      outcome: 'error',
      type: 'unreadable',
      message: x.reason,
      detail: null,
    });
  return junitDocument('gpushare fleet', `${simulated ? 'SIMULATED ' : ''}gpushare fleet ${name}`, cases);
}

/** The fleet analysis as `fleet report --json` prints it, with the exit code (and `simulated`, over simulated runs). */
export function fleetJson(fleet: FleetAnalysis, simulated = false): string {
  return termJson({ ...(simulated ? { simulated: true } : {}), exitCode: fleetExitCode(fleet), ...fleet });
}
