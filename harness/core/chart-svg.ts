/**
 * A vega-lite spec rendered headless to SVG: no scripts, fixed sizes, readable on GitHub. Vega and
 * vega-lite (half a second of loading) are imported when the first chart is drawn, not by every command
 * that only reads runs.
 */
import type { TopLevelSpec } from 'vega-lite';
import { xmlChars } from './escape/xml.js';

/** A chart: a vega-lite spec, a pure function of what it draws. */
export type ChartSpec = TopLevelSpec;

/**
 * The SVG of a chart, the same for the same spec. Vega escapes only markup, so the text in it (GPU and
 * node names) is made XML-safe here; it numbers gradients by a counter of the process, so they are
 * renumbered from 0.
 */
export async function renderSvg(spec: ChartSpec, options: { simulated?: boolean } = {}): Promise<string> {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const ids = new Map<string, string>();
  const stable = svg.replace(/gradient_\d+/g, (id) => {
    if (!ids.has(id)) ids.set(id, `gradient_${ids.size}`);
    return ids.get(id) as string;
  });
  return `${xmlChars(options.simulated ? withSimulatedBanner(stable) : stable)}\n`;
}

/** What a chart of simulated data says above it: the same words as every other output of such a run. */
export const SIMULATED_CHART_TEXT = "SIMULATED: made on gpushare's simulator, not on a GPU";

const BANNER_PX = 22;

/**
 * The SVG made taller by a banner line at its top naming it simulated, the chart moved down under it:
 * the same for every kind of chart, whatever its spec's title.
 */
function withSimulatedBanner(svg: string): string {
  const open = /^<svg[^>]*>/.exec(svg)?.[0];
  const height = Number(/ height="([\d.]+)"/.exec(open ?? '')?.[1]);
  const viewBox = / viewBox="([\d.-]+) ([\d.-]+) ([\d.]+) ([\d.]+)"/.exec(open ?? '');
  if (open === undefined || !Number.isFinite(height) || viewBox === null) return svg;
  const taller = open
    .replace(/ height="[\d.]+"/, ` height="${height + BANNER_PX}"`)
    .replace(viewBox[0], ` viewBox="${viewBox[1]} ${viewBox[2]} ${viewBox[3]} ${Number(viewBox[4]) + BANNER_PX}"`);
  const banner = `<text x="6" y="15" font-family="sans-serif" font-size="12px" font-weight="bold" fill="#b00020">${SIMULATED_CHART_TEXT}</text>`;
  return svg
    .replace(
      open,
      `${taller}<rect width="100%" height="${BANNER_PX}" fill="white"/>${banner}<g transform="translate(0,${BANNER_PX})">`,
    )
    .replace(/<\/svg>\s*$/, '</g></svg>');
}
