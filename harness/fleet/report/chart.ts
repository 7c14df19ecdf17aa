/** The fleet report's chart: each headline ratio per node with its CI, the group's band, outliers marked. A pure function of the fleet analysis. */
import type * as vl from 'vega-lite';
import type { FleetAnalysis, FleetGroup, RatioDistribution } from './analyze.js';

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
const STATUS = { domain: ['within the band', 'outlier', 'not tested'], range: ['#4c78a8', '#e45756', '#9d9d9d'] };

/** One ratio of one group: the band shaded, the median dashed, each node's CI as a bar and its median as a dot. */
function panel(g: FleetGroup, d: RatioDistribution, floor: number) {
  const rows = d.points.map((p) => ({
    node: p.node,
    value: p.value,
    lo: p.ci?.[0] ?? p.value,
    hi: p.ci?.[1] ?? p.value,
    status: p.outlier !== null ? 'outlier' : d.band ? 'within the band' : 'not tested',
  }));
  const y = { field: 'node', type: 'nominal' as const, sort: null, title: null, axis: { labelLimit: 260 } };
  const x = { type: 'quantitative' as const, scale: { zero: false }, title: null };
  const color = { field: 'status', type: 'nominal' as const, scale: STATUS, title: null };
  return {
    title: {
      text: `${g.id} ${g.gpuModel}: ${d.metricId} ${d.better === 'higher' ? '↑' : '↓'}`,
      anchor: 'start' as const,
      fontSize: 11,
    },
    width: 380,
    height: { step: 18 },
    layer: [
      // The axis spans at least the floor's reach either side of the median, so agreement to 0.01% does not look like a spread.
      {
        data: { values: [{ x: d.median * (1 - floor) }, { x: d.median * (1 + floor) }] },
        mark: { type: 'point' as const, opacity: 0 },
        encoding: { x: { field: 'x', ...x } },
      },
      ...(d.band
        ? [
            {
              data: { values: [{ lo: d.band.lo, hi: d.band.hi }] },
              mark: { type: 'rect' as const, color: '#e6e6e6' },
              encoding: { x: { field: 'lo', ...x }, x2: { field: 'hi' } },
            },
          ]
        : []),
      {
        data: { values: [{ median: d.median }] },
        mark: { type: 'rule' as const, color: '#777', strokeDash: [3, 3] },
        encoding: { x: { field: 'median', ...x } },
      },
      {
        data: { values: rows },
        mark: { type: 'rule' as const, strokeWidth: 2 },
        encoding: { y, x: { field: 'lo', ...x }, x2: { field: 'hi' }, color },
      },
      {
        data: { values: rows },
        mark: { type: 'point' as const, filled: true, size: 45 },
        encoding: {
          y,
          x: { field: 'value', ...x },
          color,
          tooltip: [{ field: 'node' }, { field: 'value', format: '.3f' }],
        },
      },
    ],
  };
}

/**
 * A panel per group (of 2 or more runs) and ratio, two panels a row so the page stays readable; the
 * caption names only what some panel draws.
 */
export function fleetChart(fleet: FleetAnalysis): vl.TopLevelSpec | null {
  const shown = fleet.groups.filter((g) => g.setAside === null);
  const panels = shown.flatMap((g) => g.ratios.map((d) => panel(g, d, fleet.rule.floor)));
  if (panels.length === 0) return null;
  const ratios = shown.flatMap((g) => g.ratios);
  const caption = [
    ...(ratios.some((d) => d.band)
      ? ["grey: the group's band (its median ± the outlier margin the report states)"]
      : []),
    "dashed: the group's median",
    ...(ratios.some((d) => d.points.some((p) => p.outlier !== null))
      ? ['red: a CI wholly outside the band (an outlier)']
      : []),
    ...(ratios.some((d) => !d.band) ? ['grey dots: a group too small to test'] : []),
    '↑ higher is better, ↓ lower',
  ];
  return {
    $schema: SCHEMA,
    title: {
      text: 'Each headline ratio per node (median, within-run 95% CI)',
      subtitle: [caption.slice(0, 2).join(' · '), caption.slice(2).join(' · ')].filter((line) => line !== ''),
      anchor: 'start',
    },
    concat: panels,
    columns: 2,
    spacing: 16,
  } as vl.TopLevelSpec;
}
