/** The mix heat map draws an overloaded cell, the worst outcome, darker than any ratio, not blank. */
import { describe, expect, it } from 'vitest';
import { renderSvg } from '../../harness/core/chart-svg.js';
import type { Cell } from '../../harness/mix/analysis.js';
import { heatmapChart, OVERLOADED_FILL } from '../../harness/mix/charts.js';

function cell(aggressor: string, status: 'measured' | 'overloaded', p99: number | null): Cell {
  return {
    mode: 'timeslice',
    column: 'timeslice',
    aggressor,
    threadPct: null,
    load: 0.5,
    status,
    reason: null,
    alone: null,
    together: null,
    p50: null,
    p99: p99 === null ? null : ({ value: p99 } as Cell['p99']),
    p999: null,
    kept: null,
    rounds: 3,
  };
}

describe('the mix heat map', () => {
  it('fills an overloaded cell with the dark overloaded colour and labels it in white', async () => {
    const spec = heatmapChart([cell('compute', 'measured', 2.5), cell('bandwidth', 'overloaded', null)]);
    const svg = await renderSvg(spec as NonNullable<typeof spec>);
    expect(svg).toContain(`fill="${OVERLOADED_FILL}"`);
    expect(svg).toMatch(/<text[^>]*fill="white"[^>]*>overloaded<\/text>/);
  });

  it('draws no overloaded fill where every cell was measured', async () => {
    const spec = heatmapChart([cell('compute', 'measured', 2.5)]);
    expect(await renderSvg(spec as NonNullable<typeof spec>)).not.toContain(`fill="${OVERLOADED_FILL}"`);
  });
});
