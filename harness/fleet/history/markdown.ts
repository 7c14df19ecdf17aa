/** `fleet history`'s report as markdown: a pure function of the history and the names of its charts. */

import { BETWEEN_RUN_LEVEL } from '../../bench/gate/bands.js';
import { mdCode, mdText } from '../../core/escape/markdown.js';
import { SIMULATED_TEXT } from '../../record/simulated.js';
import { DEFAULT_BOOTSTRAP } from '../../stats/bootstrap.js';
import { firstPassLevel } from '../../stats/change-points.js';
import { type HeadlineHistory, type HistoryAnalysis, type HistoryGroup, MIN_RUNS_TO_TEST } from './analyze.js';
import { changeText, exitText, f3, keyText, pText, signedPct, spanText, timeText } from './outputs.js';

/** How a change is found and reported, with the constants the history used. */
function methodText(history: HistoryAnalysis): string[] {
  return [
    '## How changes are found',
    '',
    'Runs are one series only when the gate would compare them (the same GPU model, driver, MIG and compute mode, protocol loop, windows, clients, CPU pinning, MPS limits and workload parameters) and they also ran the same comparisons with the same release lead and the same gpushare version: a harness generation moves launch-bound headlines by 1–1.5%, so a new one starts a new group rather than a change. Each group is ordered by the runs’ creation time; unfinished runs, and a ratio a run marks invalid, are left out of the series.',
    '',
    `For each headline ratio, on the log of each run’s median: E-divisive (Matteson & James 2014, the split Apache Otava/Hunter makes) proposes the split that maximises the energy distance between the two sides, with at least ${history.minSegmentRuns} runs a side; a proposal is kept as a candidate when Welch’s t-test between the two sides it compared gives p < ${firstPassLevel(history.level)} (Otava’s first pass, looser than the level, so that the merge decides), and the search goes on in the segments it leaves. Then each candidate is tested again between its neighbouring candidates, and while one has Welch p ≥ ${history.level}, or a size under the headline’s floor, the weakest is removed (Otava’s merge). A series needs ${MIN_RUNS_TO_TEST} runs to be tested.`,
    '',
    `The size of a change is the median of the segment after it ÷ the median of the segment before (the neighbouring changes bound both). Its 95% interval is a percentile bootstrap of that ratio (${DEFAULT_BOOTSTRAP.resamples.toLocaleString('en-US')} resamples, each segment’s runs resampled on its own, seeded). The floor is the gate’s default between-run band of the headline: the ${BETWEEN_RUN_LEVEL * 100}% prediction interval of one run against one other, learned from the H100 runs of 2026-11-24 (docs/statistics-and-gate.md); a change under it is within what runs on different GPUs of one model differ by.`,
    '',
  ];
}

function changesTable(history: HistoryAnalysis): string[] {
  const rows = history.groups.flatMap((g) =>
    g.headlines.flatMap((h) =>
      h.changes.map(
        (c) =>
          `| ${g.id} | ${mdCode(h.metricId, 'cell')} ${h.better === 'higher' ? '↑' : '↓'} | ${c.run} of ${g.runs.length}: ${mdCode(c.runId, 'cell')} | ×${f3(c.ratio)} [${f3(c.ci[0])}, ${f3(c.ci[1])}] (${signedPct(c.ratio)}, ${c.direction}) | ${pText(c.p)} | ${c.before} / ${c.after} |`,
      ),
    ),
  );
  if (rows.length === 0) return [];
  return [
    '## Changes',
    '',
    '| group | headline | first changed run | median after ÷ before [95% CI] | Welch p | runs before / after |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ];
}

function headlineRow(g: HistoryGroup, h: HeadlineHistory): string {
  const found = !h.tested
    ? `too few to test (${MIN_RUNS_TO_TEST} needed)`
    : h.changes.length === 0
      ? 'no change'
      : h.changes.map((c) => mdText(changeText(g, c))).join('<br>');
  // A candidate removed at p ≥ the level shows its p; one under the floor says so.
  const removed = h.removed
    .map((r) => `run ${r.run} ×${f3(r.ratio)}, p ${pText(r.p)}${r.failed === 'floor' ? ', under the floor' : ''}`)
    .join('; ');
  const leftOut = h.leftOut.map((x) => `run ${x.run}: ${x.reason}`).join('; ');
  return `| ${mdCode(h.metricId, 'cell')} ${h.better === 'higher' ? '↑' : '↓'} | ${h.points.length} | ±${(h.floor * 100).toFixed(1)}% | ${found} | ${mdText(removed) || '—'} | ${mdText(leftOut) || '—'} |`;
}

function groupSection(g: HistoryGroup, chart: string | null): string[] {
  return [
    `### ${g.id}: ${mdText(g.gpuModel)}, ${g.runs.length} runs, ${spanText(g)}`,
    '',
    `${mdText(keyText(g))}.`,
    '',
    '| headline | runs | floor | change | candidates removed | left out |',
    '|---|---|---|---|---|---|',
    ...g.headlines.map((h) => headlineRow(g, h)),
    '',
    ...(chart ? [`![${g.id}](${chart})`, ''] : []),
    ...runsTable(g),
  ];
}

/** The group's runs by number, with their GPU; where each lies only when some path is not just its id (a stored run's). */
function runsTable(g: HistoryGroup): string[] {
  const where = g.runs.some((r) => r.path !== r.id);
  const cells = (r: HistoryGroup['runs'][number]) => [
    String(r.number),
    mdCode(r.id, 'cell'),
    r.gpuUuid === null ? 'not recorded' : mdCode(r.gpuUuid, 'cell'),
    timeText(r.createdAt),
    ...(where ? [mdCode(r.path, 'cell')] : []),
  ];
  return [
    `| run | id | GPU | created (UTC)${where ? ' | where' : ''} |`,
    `|---|---|---|---|${where ? '---|' : ''}`,
    ...g.runs.map((r) => `| ${cells(r).join(' | ')} |`),
    '',
  ];
}

export function historyMarkdown(
  history: HistoryAnalysis,
  meta: { name: string; dir: string; version: string; simulated?: boolean },
  charts: ReadonlyMap<string, string>,
): string {
  const runs = history.groups.reduce((n, g) => n + g.runs.length, 0);
  const tested = history.groups.filter((g) => g.headlines.some((h) => h.tested));
  const small = history.groups.filter((g) => !tested.includes(g));
  const lines = [
    `# gpushare fleet history: ${mdText(meta.name)}`,
    '',
    ...(meta.simulated ? [`**${SIMULATED_TEXT}.**`, ''] : []),
    `${runs} bench runs under ${mdCode(meta.dir)} in ${history.groups.length} group${history.groups.length === 1 ? '' : 's'} of like runs · ${history.testedSeries} headline series tested · changes kept at Welch p < ${history.level} and at least the headline’s floor · gpushare ${meta.version}`,
    '',
    `**${mdText(exitText(history).replace(/^exit (\d)/, 'Exit $1'))}.**`,
    '',
    ...changesTable(history),
    ...methodText(history),
    '## Groups tested',
    '',
    ...(tested.length === 0 ? ['None: no group has the runs a test needs.', ''] : []),
    ...tested.flatMap((g) => groupSection(g, charts.get(g.id) ?? null)),
    ...(small.length > 0
      ? [
          `## Groups too small to test (fewer than ${MIN_RUNS_TO_TEST} runs)`,
          '',
          '| group | GPU | runs | measured alike in |',
          '|---|---|---|---|',
          ...small.map(
            (g) =>
              `| ${g.id} | ${mdText(g.gpuModel)} | ${g.runs.map((r) => mdCode(r.id, 'cell')).join(', ')} | ${mdText(keyText(g))} |`,
          ),
          '',
        ]
      : []),
    ...(history.notCompared.length > 0
      ? [
          '## Not in any series',
          '',
          ...history.notCompared.map(
            (x) => `- ${mdCode(x.path)}: ${mdText(x.reason)}${x.fails ? ' (unreadable)' : ''}`,
          ),
          '',
        ]
      : []),
  ];
  return `${lines.join('\n')}\n`;
}
