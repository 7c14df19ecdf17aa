/** The fleet report as markdown: a pure function of the fleet analysis and the name of its chart file. */
import { mdCode, mdText } from '../../core/escape/markdown.js';
import type { FleetAnalysis, FleetGroup, FleetNode, NodeRatio, Software } from './analyze.js';
import { fleetExitCode, outlierText } from './outputs.js';

const f3 = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : x.toFixed(3));
const ciText = (ci: readonly [number, number] | null) => (ci ? `[${f3(ci[0])}, ${f3(ci[1])}]` : 'n/a');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function softwareText(s: Software): string {
  const v = (x: string | null) => x ?? 'mixed';
  return mdText(
    `driver ${v(s.driver)} · CUDA ${v(s.cuda)} · PyTorch ${v(s.torch)} · gpushare ${v(s.gpushare)} · compute mode ${v(s.computeMode)} · MIG ${v(s.mig)}`,
  );
}

/** A node's value of a ratio with its verdict, and the outlier mark. */
function ratioCell(r: NodeRatio | undefined): string {
  if (!r || r.value === null) return 'n/a';
  const verdict = r.verdict === 'none' ? '' : ` ${r.verdict}`;
  const outlier = r.outlier !== null ? ` **${r.outlier === 'above' ? '↑' : '↓'} outlier (${r.direction})**` : '';
  return `${f3(r.value)}${r.halfWidth !== null ? ` ±${pct(r.halfWidth)}` : ''}${verdict}${outlier}`;
}

const verdictCounts = (node: FleetNode) => {
  const counts = new Map<string, number>();
  for (const r of node.ratios) counts.set(r.verdict, (counts.get(r.verdict) ?? 0) + 1);
  return [...counts].map(([v, n]) => `${n} ${v}`).join(', ') || 'no ratio';
};

function groupSection(fleet: FleetAnalysis, g: FleetGroup): string[] {
  const nodes = g.nodes.map((name) => fleet.nodes.find((n) => n.name === name) as FleetNode);
  const lines = [
    `### ${g.id}: ${mdText(g.gpuModel)}, ${g.nodes.length} runs on ${g.gpus} GPU${g.gpus === 1 ? '' : 's'}`,
    '',
    `Settings: ${mdText(g.settings)}.`,
    '',
    `Software: ${softwareText(g.software)}.`,
    '',
    ...(g.untested ? [`Outliers not tested: ${mdText(g.untested)}.`, ''] : []),
    '| ratio | runs | median | min | max | spread | band | outliers |',
    '|---|---|---|---|---|---|---|---|',
    ...g.ratios.map((d) => {
      const out = d.points.filter((p) => p.outlier !== null).map((p) => `${p.node} (${p.outlier})`);
      const band = d.band ? `${ciText([d.band.lo, d.band.hi])}${d.band.floored ? ' (floor)' : ''}` : 'not tested';
      return `| ${mdCode(d.metricId, 'cell')} ${d.better === 'higher' ? '↑' : '↓'} | ${d.n} | ${f3(d.median)} | ${f3(d.min)} | ${f3(d.max)} | ${pct(d.spread)} | ${band} | ${mdText(out.join(', ')) || '—'} |`;
    }),
    '',
    "Each node: median ± CI half-width and the run's own verdict.",
    '',
    `| node | ${g.ratios.map((d) => mdCode(d.metricId, 'cell')).join(' | ')} | checks |`,
    `|---|${g.ratios.map(() => '---|').join('')}---|`,
    ...nodes.map(
      (n) =>
        `| ${mdText(n.name)} | ${g.ratios.map((d) => ratioCell(n.ratios.find((r) => r.metricId === d.metricId))).join(' | ')} | ${n.flags.length > 0 ? mdText(n.flags.map((f) => f.kind).join(', ')) : 'ok'} |`,
    ),
    '',
  ];
  return lines;
}

export function fleetMarkdown(
  fleet: FleetAnalysis,
  meta: { name: string; dir: string; version: string },
  chart: string | null,
): string {
  const compared = fleet.groups.filter((g) => g.setAside === null);
  const setAside = fleet.groups.filter((g) => g.setAside !== null);
  const failing = fleet.nodes.filter((n) => !n.pass && !n.apart);
  const exit = fleetExitCode(fleet);
  const lines = [
    `# gpushare fleet report: ${mdText(meta.name)}`,
    '',
    `${fleet.nodes.length} bench runs under ${mdCode(meta.dir)} on ${fleet.gpus} GPUs (${mdText(fleet.gpuModels.join(', '))}) · ${compared.length} group${compared.length === 1 ? '' : 's'} compared · ${setAside.length} run${setAside.length === 1 ? '' : 's'} set aside · ${fleet.notCompared.length} other record${fleet.notCompared.length === 1 ? '' : 's'} not compared · gpushare ${meta.version}`,
    '',
    exit === 0
      ? '**Exit 0: no outlier and no failing node.**'
      : `**Exit 1: ${fleet.outlierNodes.length} outlier node${fleet.outlierNodes.length === 1 ? '' : 's'}${fleet.outlierNodes.length > 0 ? ` (${mdText(fleet.outlierNodes.join(', '))})` : ''}, ${failing.length} failing node${failing.length === 1 ? '' : 's'} in all${fleet.notCompared.some((x) => x.fails) ? ', and unreadable runs' : ''}.**`,
    '',
    '## How nodes are compared',
    '',
    "- **Groups.** Runs are compared only with runs on the same GPU model measured with the same settings: the same comparisons, clients, window, CPU pinning, MPS limits and workload parameters (what `gpushare gate` refuses to compare across). A group of one run is set aside, with the nearest run and how it differs. Where no settings are shared by most of a GPU model's runs (a directory of experiments, not a fleet), such a run is a measurement of its own: its checks are listed and do not decide the exit code.",
    `- **Outliers.** ${fleet.rule.text}`,
    "- **A node also fails** when its run was contaminated (the GPU busy at the start), throttled (a thermal or hardware slowdown reason in any sample taken during its trials; the power cap alone is how a GPU at full load runs, and each run already checks that its arms agree), incomplete (not `complete`, a mode that failed to start, a comparison without a complete round), has an invalid or failing verdict, ran software that differs from its group's majority of GPUs (GPU model, driver, MIG mode and compute mode as the gate compares them; CUDA, PyTorch, gpushare), or ran settings other than those a majority of its model's GPUs ran.",
    "- An unfinished run with a later complete run of the same GPU (by UUID), as a fleet job's retry leaves it, is not compared and does not fail the fleet.",
    '- Exit code: 0 when no node fails, 1 when any node is an outlier or fails (or a run.json cannot be read), 2 for a usage error.',
    '',
    '## Outliers and failing nodes',
    '',
    ...(failing.length === 0
      ? ['None.']
      : [
          '| node | group | why |',
          '|---|---|---|',
          ...failing.map((n) => {
            const why = [
              ...n.ratios.filter((r) => r.outlier !== null).map((r) => `outlier: ${outlierText(fleet, n, r)}`),
              ...n.flags.map((f) => `${f.kind}: ${f.text}`),
            ];
            return `| ${mdText(n.name)} | ${n.group} | ${mdText(why.join('; '))} |`;
          }),
        ]),
    '',
    '## Groups',
    '',
    ...(compared.length > 0 && compared.every((g) => g.untested !== null)
      ? [
          `No group has ${fleet.rule.minRuns} runs or more, so no outlier is tested: the groups below give each ratio's spread, and each node's checks and verdicts still count.`,
          '',
        ]
      : []),
    ...(compared.length === 0
      ? ['No two runs share a GPU model and settings: nothing to compare.', '']
      : compared.flatMap((g) => groupSection(fleet, g))),
    ...(chart ? [`![Each headline ratio per node with its within-run 95% CI and its group's band](${chart})`, ''] : []),
    ...(setAside.length > 0
      ? [
          '## Set aside',
          '',
          'Runs no other run compares with; their own verdicts and checks still count.',
          '',
          '| run | GPU | settings | verdicts | why set aside |',
          '|---|---|---|---|---|',
          ...setAside.map((g) => {
            const n = fleet.nodes.find((x) => x.name === g.nodes[0]) as FleetNode;
            return `| ${mdText(n.name)} | ${mdText(g.gpuModel)} | ${mdText(g.settings)} | ${verdictCounts(n)} | ${mdText(g.setAside ?? '')} |`;
          }),
          '',
        ]
      : []),
    ...(fleet.notCompared.length > 0
      ? [
          '## Not compared',
          '',
          '| path | why |',
          '|---|---|',
          ...fleet.notCompared.map((x) => `| ${mdText(x.path)} | ${mdText(x.reason)} |`),
          '',
        ]
      : []),
    '## Nodes',
    '',
    '| node | host | GPU | UUID | run | status | group | software | verdicts |',
    '|---|---|---|---|---|---|---|---|---|',
    ...fleet.nodes.map(
      (n) =>
        `| ${mdText(n.name)} | ${mdText(n.host ?? '—')} | ${n.gpuIndex}: ${mdText(n.gpuName)} | ${mdCode(n.gpuUuid ?? '?', 'cell')} | ${mdCode(n.runId, 'cell')} | ${n.runStatus} | ${n.group} | ${mdText(`driver ${n.software.driver ?? '?'}, CUDA ${n.software.cuda ?? '?'}, PyTorch ${n.software.torch ?? '?'}`)} | ${verdictCounts(n)} |`,
    ),
  ];
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}
