/** How a matrix cell reads in a table: its p99 ratio with CI and requests, the throughput kept, or why there is none. */
import type { Cell, Kept, Ratio } from './analysis.js';

/** A ratio to alone with its interval: "×1.64 [1.07, 2.46]". */
export function ratioText(r: Ratio | null): string {
  if (r === null) return '—';
  return `×${r.value.toFixed(2)}${r.ci ? ` [${r.ci[0].toFixed(2)}, ${r.ci[1].toFixed(2)}]` : ' [too few requests]'}`;
}

/** The aggressor's throughput kept with its interval: "0.61 [0.61, 0.62]". */
export function keptText(k: Kept | null): string {
  return k === null ? '—' : `${k.value.toFixed(2)}${k.ci ? ` [${k.ci[0].toFixed(2)}, ${k.ci[1].toFixed(2)}]` : ''}`;
}

/**
 * Why the victim did not keep up, short: the served rate only where too few were served (a victim whose
 * queue climbed may have served all it was offered, and "served 1523 of 1500" would read as no overload).
 * The full reason, with the quarter medians, is in the report's every-cell table.
 */
export function overloadedText(c: Cell): string {
  const why = (c.reason ?? '').replace(/ \(median [^)]*\)$/, '');
  const served = `served ${c.together?.servedQps.toFixed(0)} of ${c.together?.offeredQps.toFixed(0)} req/s`;
  return `overloaded: ${/served \d+ of/.test(why) && !why.startsWith('the victim alone') ? served : why}`;
}

/** A cell in the matrix. */
export function cellText(c: Cell): string {
  if (c.status === 'overloaded') return `${overloadedText(c)}${c.kept ? `; kept ${keptText(c.kept)}` : ''}`;
  if (c.status !== 'measured') return c.status;
  return `${ratioText(c.p99)} (n=${c.together?.requests}); kept ${keptText(c.kept)}`;
}
