/** The mix report's charts as vega-lite specs (pure functions of the analysis), rendered headless to SVG. */
import type { ChartSpec } from '../core/chart-svg.js';
import type { Cell } from './analysis.js';

type Spec = ChartSpec;
const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

/** An overloaded cell's fill: beyond the darkest red of the p99 scale (orangered), since it is worse than any ratio. */
export const OVERLOADED_FILL = '#3d0000';

const loadText = (load: number) => `victim at ${Math.round(load * 100)}% of capacity`;

/**
 * The interference matrix as a heat map, one panel per load: rows the aggressor, columns the mode,
 * colour the victim's p99 ratio to alone (log scale), the text in each cell that ratio and the
 * aggressor's throughput kept; an overloaded cell, the worst outcome, is darker than the scale's
 * worst colour and says so in white. (Its ratio is null, which a log scale drops: it needs a layer.)
 */
export function heatmapChart(cells: readonly Cell[]): Spec | null {
  const rows = cells
    .filter((c) => c.status === 'measured' || c.status === 'overloaded')
    .map((c) => ({
      load: loadText(c.load),
      aggressor: c.aggressor,
      column: c.column,
      ratio: c.status === 'measured' ? (c.p99?.value ?? null) : null,
      label:
        c.status === 'overloaded'
          ? 'overloaded'
          : `×${(c.p99?.value ?? 0).toFixed(2)}${c.kept ? ` · kept ${c.kept.value.toFixed(2)}` : ''}`,
    }));
  if (rows.length === 0) return null;
  const columns = [...new Set(cells.map((c) => c.column))];
  return {
    $schema: SCHEMA,
    title: "Victim p99 ÷ alone (colour), with the aggressor's throughput kept",
    data: { values: rows },
    facet: { row: { field: 'load', type: 'nominal', title: null } },
    spec: {
      width: 90 * columns.length,
      height: { step: 34 },
      encoding: {
        x: { field: 'column', type: 'ordinal', sort: columns, title: 'mode', axis: { labelAngle: 0 } },
        y: { field: 'aggressor', type: 'nominal', title: 'aggressor' },
      },
      layer: [
        {
          mark: 'rect',
          encoding: {
            color: {
              field: 'ratio',
              type: 'quantitative',
              scale: { type: 'log', scheme: 'orangered', domainMin: 1 },
              title: 'p99 ×',
            },
          },
        },
        { transform: [{ filter: 'datum.ratio === null' }], mark: { type: 'rect', color: OVERLOADED_FILL } },
        {
          mark: { type: 'text', fontSize: 10 },
          encoding: {
            text: { field: 'label', type: 'nominal' },
            color: { condition: { test: 'datum.ratio === null', value: 'white' }, value: 'black' },
          },
        },
      ],
    },
  } as Spec;
}

/**
 * The protection frontier, one panel per load: the victim's p99 ratio (↓) against the aggressor's
 * throughput kept (→) at each MPS setting, a line per aggressor through its caps, each point labelled by its thread %.
 */
export function frontierChart(cells: readonly Cell[]): Spec | null {
  const rows = cells
    .filter((c) => c.mode === 'mps' && c.status === 'measured' && c.kept !== null && c.p99 !== null)
    .map((c) => ({
      load: loadText(c.load),
      aggressor: c.aggressor,
      threads: c.threadPct ?? 100,
      kept: c.kept?.value as number,
      ratio: c.p99?.value as number,
    }));
  if (rows.length === 0) return null;
  return {
    $schema: SCHEMA,
    title: "Protection frontier under MPS: victim p99 ÷ alone against the aggressor's throughput kept, per thread %",
    data: { values: rows },
    facet: { column: { field: 'load', type: 'nominal', title: null } },
    spec: {
      width: 300,
      height: 240,
      encoding: {
        x: { field: 'kept', type: 'quantitative', title: 'aggressor throughput kept →', scale: { domain: [0, 1.05] } },
        y: { field: 'ratio', type: 'quantitative', title: 'victim p99 ÷ alone ↓', scale: { type: 'log' } },
        color: { field: 'aggressor', type: 'nominal' },
      },
      layer: [
        { mark: { type: 'line', point: true }, encoding: { order: { field: 'threads', type: 'quantitative' } } },
        { mark: { type: 'text', dy: -8, fontSize: 9 }, encoding: { text: { field: 'threads', type: 'quantitative' } } },
      ],
    },
  } as Spec;
}
