/**
 * Charts as vega-lite specs (pure functions of a run), rendered headless to SVG by vega: no scripts,
 * fixed sizes, readable on GitHub.
 */
import type { ChartSpec } from '../../core/chart-svg.js';
import type { Analysis, MetricAnalysis } from '../analysis/types.js';
import type { Run } from '../record/schema.js';
import type { ScalingPoint } from './scaling.js';

type Spec = ChartSpec;
const WIDTH = 620;
const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
const MODE_COLOR: Record<string, string> = {
  streams: '#4c78a8',
  green: '#f58518',
  timeslice: '#e45756',
  mps: '#54a24b',
  mig: '#b279a2',
};

/** The colour scale for the modes a chart shows: a legend lists only modes that ran, each in its own colour. */
function modeScale(modes: readonly string[]) {
  const domain = Object.keys(MODE_COLOR).filter((m) => modes.includes(m));
  return { domain, range: domain.map((m) => MODE_COLOR[m] as string) };
}

/** A ratio's axis label, with the direction that is better: speedups and slowdowns share the axis. */
const label = (v: MetricAnalysis) => `${v.metric.id} ${v.metric.better === 'higher' ? '↑' : '↓'}`;

/** Above this span (largest ÷ smallest value drawn) a ratio axis is logarithmic: 1.7× and 61.8× both stay readable. */
export const LOG_AXIS_SPAN = 5;

/** Characters of a ratio's label: the label column is sized to the longest, not to a fixed width. */
const LABEL_PX_PER_CHAR = 8;

/**
 * Headline ratios as a dot (the median) with its 95% CI as a whisker with end caps, one row each,
 * thresholds as ticks, 1× as a dashed rule; a log axis when the values span more than LOG_AXIS_SPAN×.
 * The caption names only what is drawn.
 */
export function ratiosChart(verdicts: readonly MetricAnalysis[]): Spec {
  const rows = verdicts
    .filter((v) => v.stats.value !== null)
    .map((v) => ({
      metric: label(v),
      mode: v.metric.mode,
      value: v.stats.value as number,
      lo: v.stats.ci?.[0] ?? (v.stats.value as number),
      hi: v.stats.ci?.[1] ?? (v.stats.value as number),
      verdict: v.verdict,
    }));
  const bounds = verdicts.flatMap((v) =>
    [v.threshold?.bounds.min, v.threshold?.bounds.max]
      .filter((b) => b !== undefined && b !== null)
      .map((bound) => ({ metric: label(v), bound: bound as number })),
  );
  const drawn = [1, ...rows.flatMap((r) => [r.lo, r.hi]), ...bounds.map((b) => b.bound)].filter((x) => x > 0);
  const log = Math.max(...drawn) / Math.min(...drawn) > LOG_AXIS_SPAN;
  const colors = modeScale(rows.map((r) => r.mode));
  const labelWidth = Math.ceil(Math.max(40, ...rows.map((r) => r.metric.length)) * LABEL_PX_PER_CHAR);
  const y = {
    field: 'metric',
    type: 'nominal' as const,
    sort: null,
    title: null,
    axis: { labelLimit: labelWidth, labelFontSize: 11 },
  };
  const x = {
    type: 'quantitative' as const,
    scale: log ? { type: 'log' as const, nice: false } : { zero: false, nice: true },
    title: log ? 'ratio (×, log scale)' : 'ratio (×)',
  };
  const directions = [
    ...(rows.some((r) => r.metric.endsWith('↑')) ? ['↑ higher is better'] : []),
    ...(rows.some((r) => r.metric.endsWith('↓')) ? ['↓ lower is better'] : []),
  ];
  const marks = [
    'dot: median · line: within-run 95% CI',
    ...(bounds.length > 0 ? ['orange ticks: thresholds'] : []),
    'dashed: 1×',
  ];
  return {
    $schema: SCHEMA,
    title: {
      text: 'Headline ratios (median, within-run 95% CI)',
      subtitle: [directions.join(' · '), marks.join(' · ')].filter((line) => line !== ''),
      anchor: 'start',
    },
    width: 360,
    height: { step: 22 },
    layer: [
      {
        data: { values: [{ x: 1 }] },
        mark: { type: 'rule', color: '#888', strokeDash: [3, 3] },
        encoding: { x: { field: 'x', ...x } },
      },
      {
        data: { values: rows },
        mark: { type: 'rule', strokeWidth: 2 },
        encoding: {
          y,
          x: { field: 'lo', ...x },
          x2: { field: 'hi' },
          color: {
            field: 'mode',
            type: 'nominal',
            scale: colors,
            legend: { orient: 'bottom', direction: 'horizontal', title: 'mode' },
          },
        },
      },
      ...(['lo', 'hi'] as const).map((end) => ({
        data: { values: rows },
        mark: { type: 'tick' as const, thickness: 2, size: 10 },
        encoding: {
          y,
          x: { field: end, ...x },
          color: { field: 'mode', type: 'nominal' as const, scale: colors },
        },
      })),
      {
        data: { values: rows },
        mark: { type: 'point', filled: true, size: 50, opacity: 1 },
        encoding: {
          y,
          x: { field: 'value', ...x },
          color: { field: 'mode', type: 'nominal', scale: colors },
          tooltip: [{ field: 'value', format: '.3f' }],
        },
      },
      {
        data: { values: rows },
        mark: { type: 'text', align: 'left', dx: 6, fontSize: 10 },
        encoding: { y, x: { field: 'hi', ...x }, text: { field: 'value', format: '.2f' } },
      },
      ...(bounds.length > 0
        ? [
            {
              data: { values: bounds },
              mark: { type: 'tick' as const, color: '#f58518', thickness: 3 },
              encoding: { y, x: { field: 'bound', ...x } },
            },
          ]
        : []),
    ],
  };
}

/** GPU utilization, SM clock and power over the run, with each trial's window shaded by mode. */
export function timelineChart(run: Pick<Run, 'samples'>, analysis: Analysis): Spec | null {
  if (run.samples.length === 0) return null;
  const t0 = run.samples[0]?.tUs ?? 0;
  const samples = run.samples.map((s) => ({
    t: (s.tUs - t0) / 1e6,
    util: s.utilGpuPct,
    sm: s.smClockMHz,
    power: s.powerW,
  }));
  const windows = analysis.comparisons.flatMap(({ comparison, rounds }) =>
    rounds.flatMap((r) =>
      [...r.trials.values()].flatMap((t) =>
        'clients' in t && t.clients.length > 0
          ? [
              {
                start: (Math.min(...t.clients.map((c) => c.windowStartUs)) - t0) / 1e6,
                end: (Math.max(...t.clients.map((c) => c.windowEndUs)) - t0) / 1e6,
                mode: comparison.mode,
                comparison: comparison.id,
              },
            ]
          : [],
      ),
    ),
  );
  // Each comparison named where its first window starts, so the shading says which workload ran.
  const starts = [...new Set(windows.map((w) => w.comparison))].map((id) => ({
    comparison: id,
    start: Math.min(...windows.filter((w) => w.comparison === id).map((w) => w.start)),
  }));
  const colors = modeScale(windows.map((w) => w.mode));
  const panel = (field: string, title: string, named: boolean) => ({
    width: WIDTH - 80,
    height: 110,
    layer: [
      {
        data: { values: windows },
        mark: { type: 'rect' as const, opacity: 0.18 },
        encoding: {
          x: { field: 'start', type: 'quantitative' as const, title: 'seconds since the first sample' },
          x2: { field: 'end' },
          color: { field: 'mode', type: 'nominal' as const, scale: colors, title: 'trial windows' },
        },
      },
      ...(named
        ? [
            {
              data: { values: starts },
              mark: {
                type: 'text' as const,
                angle: 270,
                align: 'left' as const,
                baseline: 'middle' as const,
                dx: 4,
                fontSize: 9,
                y: -4,
              },
              encoding: {
                x: { field: 'start', type: 'quantitative' as const },
                text: { field: 'comparison', type: 'nominal' as const },
              },
            },
          ]
        : []),
      {
        data: { values: samples },
        mark: { type: 'line' as const, color: '#333', strokeWidth: 1 },
        encoding: {
          x: { field: 't', type: 'quantitative' as const },
          y: { field, type: 'quantitative' as const, title },
        },
      },
    ],
  });
  return {
    $schema: SCHEMA,
    title: { text: 'nvidia-smi samples over the run', anchor: 'start' },
    vconcat: [
      panel('util', 'GPU utilization (%)', true),
      panel('sm', 'SM clock (MHz)', false),
      panel('power', 'power (W)', false),
    ],
  };
}

/** Per-client slowdown of every contention comparison, with CIs. */
export function clientsChart(analysis: Analysis): Spec | null {
  const rows = analysis.metrics
    .filter(({ metric: m }) => /^slowdown-c\d+$/.test(m.name))
    .map(({ metric: m, stats: s }) => ({
      comparison: m.comparisonId,
      client: `client ${m.name.slice('slowdown-c'.length)}`,
      value: s.value,
      lo: s.ci?.[0] ?? s.value,
      hi: s.ci?.[1] ?? s.value,
      mode: m.mode,
    }))
    .filter((r) => r.value !== null);
  if (rows.length === 0) return null;
  const y = { field: 'comparison', type: 'nominal' as const, sort: null, title: null };
  return {
    $schema: SCHEMA,
    title: { text: 'Per-client slowdown: throughput alone ÷ contended (median, within-run 95% CI)', anchor: 'start' },
    width: WIDTH - 200,
    height: { step: 36 },
    data: { values: rows },
    encoding: { y, yOffset: { field: 'client', type: 'nominal' } },
    layer: [
      {
        mark: { type: 'bar', height: { band: 0.8 } },
        encoding: {
          x: { field: 'value', type: 'quantitative', title: 'slowdown (×)' },
          color: { field: 'client', type: 'nominal', title: null },
        },
      },
      {
        mark: { type: 'rule', color: 'black' },
        encoding: { x: { field: 'lo', type: 'quantitative' }, x2: { field: 'hi' } },
      },
    ],
  };
}

/** Stream-count sweeps: speedup against the number of streams, with the ideal (K×) dashed. */
export function scalingChart(analysis: Analysis): Spec | null {
  const rows = analysis.metrics
    .map((a) => a.metric)
    .filter((m) => m.mode === 'streams' && /speedup-k\d+$/.test(m.name) && m.value !== null)
    .map((m) => ({
      series: `${m.workload}${m.name.startsWith('speedup') ? '' : ` (${m.name.split('-')[0]})`}`,
      streams: Number(/k(\d+)$/.exec(m.name)?.[1]),
      speedup: m.value,
    }));
  const series = [...new Set(rows.map((r) => r.series))];
  if (new Set(rows.map((r) => r.streams)).size < 2) return null;
  const withOne = [...series.map((s) => ({ series: s, streams: 1, speedup: 1 })), ...rows];
  const ks = [...new Set(withOne.map((r) => r.streams))].sort((a, b) => a - b);
  const ideal = ks.map((k) => ({ streams: k, speedup: k }));
  return {
    $schema: SCHEMA,
    title: { text: 'Speedup against the number of streams (median)', anchor: 'start' },
    width: WIDTH - 200,
    height: 240,
    layer: [
      {
        data: { values: ideal },
        mark: { type: 'line', color: '#aaa', strokeDash: [4, 3] },
        encoding: {
          x: {
            field: 'streams',
            type: 'quantitative',
            scale: { type: 'log', base: 2 },
            axis: { values: ks, format: 'd' },
            title: 'streams (dashed: ideal, K×)',
          },
          y: { field: 'speedup', type: 'quantitative' },
        },
      },
      {
        data: { values: withOne },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'streams', type: 'quantitative' },
          y: { field: 'speedup', type: 'quantitative', title: 'speedup (×)' },
          color: { field: 'series', type: 'nominal', title: null },
        },
      },
    ],
  };
}

/**
 * A client sweep: per-client slowdown (left) and aggregate throughput (right) against the number of
 * clients, one line per mode and workload; dashed, what a fair time split would give (N× and 1×).
 */
export function clientScalingChart(points: readonly ScalingPoint[]): Spec | null {
  const measured = points.filter((p) => p.slowdown !== null);
  const counts = [...new Set(measured.map((p) => p.clients))].sort((a, b) => a - b);
  if (counts.length < 2) return null;
  const rows = measured.flatMap((p) => [
    {
      panel: 'per-client slowdown (×, lower is better)',
      series: `${p.mode}/${p.workload}`,
      clients: p.clients,
      value: p.slowdown,
    },
    {
      panel: 'aggregate throughput (GPUs of work, higher is better)',
      series: `${p.mode}/${p.workload}`,
      clients: p.clients,
      value: p.aggregate,
    },
  ]);
  const fair = counts.flatMap((n) => [
    { panel: 'per-client slowdown (×, lower is better)', clients: n, value: n },
    { panel: 'aggregate throughput (GPUs of work, higher is better)', clients: n, value: 1 },
  ]);
  const xAxis = {
    field: 'clients',
    type: 'quantitative' as const,
    scale: { type: 'log' as const, base: 2 },
    axis: { values: counts, format: 'd' },
    title: 'clients (dashed: a fair time split)',
  };
  return {
    $schema: SCHEMA,
    title: { text: 'Scaling with the number of clients (medians)', anchor: 'start' },
    data: { values: [...rows, ...fair.map((r) => ({ ...r, series: 'fair split' }))] },
    facet: { column: { field: 'panel', type: 'nominal', title: null, sort: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 280,
      height: 220,
      mark: { type: 'line', point: true },
      encoding: {
        x: xAxis,
        y: { field: 'value', type: 'quantitative', scale: { type: 'log', base: 2 }, title: null },
        color: { field: 'series', type: 'nominal', title: null },
        strokeDash: { condition: { test: "datum.series === 'fair split'", value: [4, 3] }, value: [1, 0] },
      },
    },
  } as Spec;
}
