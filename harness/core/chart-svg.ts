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
export async function renderSvg(spec: ChartSpec): Promise<string> {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const ids = new Map<string, string>();
  const stable = svg.replace(/gradient_\d+/g, (id) => {
    if (!ids.has(id)) ids.set(id, `gradient_${ids.size}`);
    return ids.get(id) as string;
  });
  return `${xmlChars(stable)}\n`;
}
