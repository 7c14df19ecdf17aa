/** The ratio chart: a log axis only when its values span more than 5×, and a caption naming only what it draws. */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import type { MetricAnalysis } from '../../harness/bench/analysis/types.js';
import { ratiosChart } from '../../harness/bench/outputs/charts.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { renderSvg } from '../../harness/core/chart-svg.js';
import { H100_RUN } from '../helpers.js';

const verdicts = async () => analyze(await loadRun(H100_RUN)).verdicts;
const scaled = (v: MetricAnalysis, factor: number): MetricAnalysis => ({
  ...v,
  stats: {
    ...v.stats,
    value: (v.stats.value as number) * factor,
    ci: v.stats.ci ? [v.stats.ci[0] * factor, v.stats.ci[1] * factor] : null,
  },
});
const subtitle = (spec: ReturnType<typeof ratiosChart>) =>
  ((spec as { title: { subtitle: string[] } }).title.subtitle as string[]).join(' · ');

describe('the ratio chart', () => {
  it('a linear axis for the default suite (1.0× to 2.7×), a log axis once the values span more than 5×', async () => {
    const all = await verdicts();
    expect(JSON.stringify(ratiosChart(all))).not.toContain('"type":"log"');
    const sweep = all.map((v, i) => (i === all.length - 1 ? scaled(v, 30) : v));
    const spec = ratiosChart(sweep);
    expect(JSON.stringify(spec)).toContain('"type":"log"');
    expect(await renderSvg(spec)).toContain('log scale');
  });

  it('names threshold ticks and each direction only where the chart draws them', async () => {
    const all = await verdicts();
    expect(subtitle(ratiosChart(all))).toContain('orange ticks: thresholds');
    expect(subtitle(ratiosChart(all))).toContain('↑ higher is better · ↓ lower is better');
    const ungraded = all.filter((v) => v.threshold === null && v.metric.better === 'lower');
    expect(subtitle(ratiosChart(ungraded))).not.toContain('thresholds');
    expect(subtitle(ratiosChart(ungraded))).not.toContain('↑');
  });
});
