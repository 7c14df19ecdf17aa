/**
 * What a run was asked to grade and did not measure. A threshold on a ratio whose comparison was
 * skipped (green contexts this GPU cannot split, a process that could not switch) or measured no
 * complete round has no verdict at all: without this, "no threshold grades these ratios" reads as
 * a pass. bench exits 3 on each, and the gate refuses such a run or baseline.
 */
import { possibleMetricIds } from '../analysis/metrics.js';
import type { Analysis, ComparisonAnalysis } from '../analysis/types.js';
import type { Run } from '../record/schema.js';
import { boundsFor, describeBounds, type Thresholds } from './thresholds.js';

/** Ratios that only exist where both an MPS comparison and its time-sliced partner measured. */
const CROSS_MODE = new Set(['slowdown-vs-plain-solo', 'solo-overhead', 'gain-over-timeslice']);

/** One line per graded ratio the run did not measure, naming its threshold and why; [] when none. */
export function unmeasuredGraded(run: Pick<Run, 'plan'>, analysis: Analysis, thresholds: Thresholds): string[] {
  const measured = new Set(analysis.metrics.filter((m) => m.stats.value !== null).map((m) => m.metric.id));
  const empty = new Map(
    analysis.comparisons.filter((c) => c.completeRounds === 0).map((c) => [c.comparison.id, whyEmpty(c)]),
  );
  if (empty.size === 0) return [];
  const lines: string[] = [];
  for (const id of new Set(possibleMetricIds(run.plan))) {
    const rule = boundsFor(thresholds, id);
    if (rule === null || measured.has(id)) continue;
    const slash = id.lastIndexOf('/');
    const own = empty.get(id.slice(0, slash));
    const why = own ?? (CROSS_MODE.has(id.slice(slash + 1)) ? crossModeWhy(id.slice(0, slash), empty) : undefined);
    if (why === undefined) continue;
    lines.push(`${id} is graded (${rule.pattern}: ${describeBounds(rule.bounds)}) but was not measured: ${why}`);
  }
  return lines;
}

/** Why a run measured nothing at all (every comparison without a complete round), or null. */
export function measuredNothing(analysis: Pick<Analysis, 'comparisons'>): string | null {
  const all = analysis.comparisons;
  if (all.length === 0 || all.some((c) => c.completeRounds > 0)) return null;
  return `nothing was measured: ${all.map(whyEmpty).join('; ')}`;
}

/** The one line of why a comparison has no complete round. */
function whyEmpty(c: ComparisonAnalysis): string {
  if (c.stop?.reason === 'unsupported') return `${c.comparison.id} was skipped: ${c.stop.detail ?? 'unsupported here'}`;
  return `${c.comparison.id} completed no round${c.failure ? ` (${c.failure})` : ''}`;
}

/** Why an MPS comparison's cross-mode ratio is missing: its time-sliced partner measured nothing. */
function crossModeWhy(mpsId: string, empty: Map<string, string>): string | undefined {
  const partner = mpsId.replace(/^mps\//, 'timeslice/');
  return empty.get(partner);
}
