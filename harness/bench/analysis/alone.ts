/**
 * The plain alone every mode divides by (ALONE_ARM), read across a run's comparisons: what it measured at
 * each workload and client count in each mode, and whether the modes' slowdown ratios then say what their
 * throughputs say. With one denominator, mode A's slowdown ÷ mode B's equals B's contended throughput per
 * client ÷ A's; each comparison measures the plain process in its own rounds, so the two agree within the
 * slowdowns' intervals, and a run whose modes divided by different alones (before 2026-12-06) need not.
 */
import { mean, median } from 'simple-statistics';
import { type ClientResult, measuresPlainAlone } from '../record/schema.js';
import { throughputPerS } from './measures.js';
import { contentionRounds } from './metrics.js';
import { isComplete } from './rounds.js';
import type { Analysis, ComparisonAnalysis } from './types.js';

/** One comparison's alone and contended throughput per client, medians over its complete rounds, per s. */
export interface ModeThroughput {
  comparisonId: string;
  mode: string;
  /** The denominator its slowdown used: the plain process alone, or its own alone in a run before it. */
  alonePerS: number;
  contendedPerS: number;
  /** Its slowdown (the headline ratio) and the 95% CI's half-width on the log scale; null without a CI. */
  slowdown: number;
  halfWidthLog: number | null;
}

/** Every mode measured at one workload and client count. */
export interface ModesAt {
  workload: string;
  clients: number;
  modes: ModeThroughput[];
  /** Whether every mode there divided by the plain process. */
  plain: boolean;
}

/** Two modes' slowdown ratio against their throughput ratio: equal but for the alone each measured. */
export interface Agreement {
  a: string;
  b: string;
  /** log(slowdown a ÷ slowdown b) − log(contended b ÷ contended a): the log of alone a ÷ alone b. */
  differenceLog: number;
  /** What the slowdowns' 95% intervals allow: their log half-widths added; null where one has no interval (not checked). */
  allowedLog: number | null;
  agree: boolean;
}

function modeThroughput(c: ComparisonAnalysis): ModeThroughput | null {
  const slowdown = c.metrics.find((m) => m.metric.name === 'slowdown');
  const complete = c.rounds.filter((r) => isComplete(c.comparison, r));
  const rounds = contentionRounds(c.comparison, complete);
  if (!slowdown || slowdown.stats.value === null || rounds.length === 0) return null;
  const [lo, hi] = slowdown.stats.ci ?? [null, null];
  return {
    comparisonId: c.comparison.id,
    mode: c.comparison.mode,
    alonePerS: median(rounds.map((r) => throughputPerS(r.alone ?? (r.solo[0] as ClientResult)))),
    // The harmonic mean over clients: a round's slowdown is its alone ÷ exactly this (a mean of alone ÷ each).
    contendedPerS: median(rounds.map((r) => 1 / mean(r.contended.map((x) => 1 / throughputPerS(x))))),
    slowdown: slowdown.stats.value,
    halfWidthLog: lo !== null && hi !== null && lo > 0 ? Math.log(hi / lo) / 2 : null,
  };
}

/** The contention comparisons of a run (not MIG, not a cross-GPU check) by workload and client count. */
export function modesAt(analysis: Analysis): ModesAt[] {
  const out: ModesAt[] = [];
  for (const c of analysis.comparisons) {
    const cmp = c.comparison;
    if (cmp.mode === 'mig' || cmp.crossGpu || cmp.arms.every((a) => a.id !== 'contended')) continue;
    const t = modeThroughput(c);
    if (t === null) continue;
    const clients = cmp.clientEnv.length;
    let at = out.find((x) => x.workload === cmp.workload.name && x.clients === clients);
    if (!at) {
      at = { workload: cmp.workload.name, clients, modes: [], plain: true };
      out.push(at);
    }
    at.modes.push(t);
    at.plain &&= measuresPlainAlone(cmp);
  }
  return out;
}

/** Every pair of modes at one workload and client count: does the slowdown ratio say what the throughput ratio says? */
export function agreements(at: ModesAt): Agreement[] {
  const out: Agreement[] = [];
  for (const [i, a] of at.modes.entries())
    for (const b of at.modes.slice(i + 1)) {
      const differenceLog = Math.log(a.slowdown / b.slowdown) - Math.log(b.contendedPerS / a.contendedPerS);
      const allowedLog = a.halfWidthLog !== null && b.halfWidthLog !== null ? a.halfWidthLog + b.halfWidthLog : null;
      out.push({
        a: a.comparisonId,
        b: b.comparisonId,
        differenceLog,
        allowedLog,
        agree: allowedLog !== null && Math.abs(differenceLog) <= allowedLog + 1e-9,
      });
    }
  return out;
}
