/**
 * `fleet history`'s chart of one group: each headline's series in order of creation (each run's median
 * and within-run 95% CI), the median of each segment between kept changes, and each change marked
 * before its first changed run. A pure function of the history.
 */

import { median } from 'simple-statistics';
import type * as vl from 'vega-lite';
import type { HeadlineHistory, HistoryGroup } from './analyze.js';

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
/** The run axis: run numbers 1…runs, half a run of margin either side. */
const runAxis = (runs: number) => ({
  type: 'quantitative' as const,
  title: 'run, in order of creation',
  scale: { domain: [0.5, runs + 0.5], nice: false },
  axis: { tickMinStep: 1 },
});
const VALUE_AXIS = { type: 'quantitative' as const, scale: { zero: false }, title: null };

/** The series cut at its changes: each segment's first and last run and its median. */
function segments(h: HeadlineHistory): Array<{ from: number; to: number; median: number }> {
  const cuts = [0, ...h.changes.map((c) => h.points.findIndex((p) => p.run === c.run)), h.points.length];
  return cuts.slice(1).map((end, i) => {
    const part = h.points.slice(cuts[i], end);
    return {
      from: (part[0]?.run ?? 0) - 0.3,
      to: (part.at(-1)?.run ?? 0) + 0.3,
      median: median(part.map((p) => p.value)),
    };
  });
}

function panel(h: HeadlineHistory, runs: number) {
  const runX = runAxis(runs);
  const rows = h.points.map((p) => ({
    run: p.run,
    value: p.value,
    lo: p.ci?.[0] ?? p.value,
    hi: p.ci?.[1] ?? p.value,
  }));
  return {
    title: { text: `${h.metricId} ${h.better === 'higher' ? '↑' : '↓'}`, anchor: 'start' as const, fontSize: 11 },
    width: 380,
    height: 160,
    layer: [
      {
        data: { values: rows },
        mark: { type: 'rule' as const, color: '#9ecae9' },
        encoding: { x: { field: 'run', ...runX }, y: { field: 'lo', ...VALUE_AXIS }, y2: { field: 'hi' } },
      },
      {
        data: { values: rows },
        mark: { type: 'point' as const, filled: true, size: 30, color: '#4c78a8' },
        encoding: {
          x: { field: 'run', ...runX },
          y: { field: 'value', ...VALUE_AXIS },
          tooltip: [{ field: 'run' }, { field: 'value', format: '.3f' }],
        },
      },
      {
        data: { values: segments(h) },
        mark: { type: 'rule' as const, color: '#555', strokeWidth: 2 },
        encoding: { x: { field: 'from', ...runX }, x2: { field: 'to' }, y: { field: 'median', ...VALUE_AXIS } },
      },
      ...(h.changes.length > 0
        ? [
            {
              data: { values: h.changes.map((c) => ({ at: c.run - 0.5 })) },
              mark: { type: 'rule' as const, color: '#e45756', strokeDash: [4, 3], strokeWidth: 2 },
              encoding: { x: { field: 'at', ...runX } },
            },
          ]
        : []),
    ],
  };
}

/** A panel per headline of the group that had enough runs to test; null when none had. */
export function historyChart(g: HistoryGroup): vl.TopLevelSpec | null {
  const shown = g.headlines.filter((h) => h.tested);
  if (shown.length === 0) return null;
  return {
    $schema: SCHEMA,
    title: {
      text: `${g.id} ${g.gpuModel}: each headline ratio per run (median, within-run 95% CI)`,
      subtitle: [
        'grey: the median of each segment between changes · red dashed: a change, before its first changed run',
        '↑ higher is better, ↓ lower',
      ],
      anchor: 'start',
    },
    concat: shown.map((h) => panel(h, g.runs.length)),
    columns: 2,
    spacing: 16,
  } as vl.TopLevelSpec;
}
