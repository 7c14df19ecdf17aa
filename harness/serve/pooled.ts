/**
 * A group's percentiles over every round, and how many requests each rests on. One window's TTFT p99 of
 * a few hundred requests is its 1st to 6th slowest; a claim needs requestsNeeded(0) = 299 values at the
 * least (serve/verdicts.ts p99RestsOnEnough). So the p99 a report states is pooled: every round's window
 * of the arm merged (their HDR histograms added), with the distribution-free order-statistic interval of
 * stats/quantile.ts (each bound at 97.5%; null where too few values give none). The per-round ratio of
 * p99s stays the ratio estimate; the rounds whose windows held too few values for their own p99 are
 * counted, and the report marks the ratio.
 */
import type * as hdr from 'hdr-histogram-js';
import { UserError } from '../core/errors.js';
import { quantileRanks } from '../stats/quantile.js';
import { decodeLatencies, emptyLatencies, histogramProblem } from '../workload/open-loop.js';
import type { Latency, ServeGroup, WindowStats } from './record.js';
import { p99RestsOnEnough } from './verdicts.js';

export interface Pooled {
  /** Values pooled (requests for TTFT and e2e, per-token gaps for ITL), and the windows they came from. */
  values: number;
  windows: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** The p99's interval from the order statistics: [lower, upper], null where too few values give that bound. */
  ci: [number | null, number | null];
}

export const LATENCIES = ['ttft', 'itl', 'e2e'] as const;
export type LatencyName = (typeof LATENCIES)[number];
export type ArmPercentiles = Record<LatencyName, Pooled>;

export interface GroupPercentiles {
  shared: ArmPercentiles;
  dedicated: ArmPercentiles;
  /** Per latency, the rounds in which either arm's window held too few values for its own p99. */
  thinRounds: Record<LatencyName, number>;
}

function merged(latencies: readonly Latency[]): hdr.Histogram {
  const h = emptyLatencies();
  for (const l of latencies) {
    // '' is no histogram (hand-made records of tests); one that does not decode was edited.
    if (l.histogram === '') continue;
    const problem = histogramProblem(l.histogram);
    if (problem !== null) {
      h.destroy();
      throw new UserError(`a latency histogram of this server run is ${problem}: the record was edited; measure again`);
    }
    const one = decodeLatencies(l.histogram);
    h.add(one);
    one.destroy();
  }
  return h;
}

const valueAtRank = (h: hdr.Histogram, rank: number) =>
  h.getValueAtPercentile((100 * (rank - 0.5)) / h.totalCount) / 1000;

/** The latencies of `latencies` (one per window) as one. */
export function pooled(latencies: readonly Latency[]): Pooled {
  const h = merged(latencies);
  try {
    const n = h.totalCount;
    if (n === 0) return { values: 0, windows: latencies.length, p50Ms: null, p99Ms: null, ci: [null, null] };
    const [lo, hi] = quantileRanks(n, 0.99);
    return {
      values: n,
      windows: latencies.length,
      p50Ms: h.getValueAtPercentile(50) / 1000,
      p99Ms: h.getValueAtPercentile(99) / 1000,
      ci: [lo === null ? null : valueAtRank(h, lo), hi === null ? null : valueAtRank(h, hi)],
    };
  } finally {
    h.destroy();
  }
}

const arm = (windows: readonly WindowStats[]): ArmPercentiles =>
  Object.fromEntries(LATENCIES.map((name) => [name, pooled(windows.map((w) => w[name]))])) as ArmPercentiles;

/** A bench group's percentiles pooled over its rounds; null for a rate search (its steps are at different rates). */
export function groupPercentiles(g: Pick<ServeGroup, 'rounds'>): GroupPercentiles | null {
  if (g.rounds.length === 0) return null;
  const thin = (name: LatencyName) =>
    g.rounds.filter((r) => !p99RestsOnEnough(r.shared[name].count) || !p99RestsOnEnough(r.dedicated[name].count))
      .length;
  return {
    shared: arm(g.rounds.map((r) => r.shared)),
    dedicated: arm(g.rounds.map((r) => r.dedicated)),
    thinRounds: { ttft: thin('ttft'), itl: thin('itl'), e2e: thin('e2e') },
  };
}

const ms = (v: number | null) => (v === null ? '–' : v.toFixed(1));
const LABEL: Record<LatencyName, string> = { ttft: 'TTFT', itl: 'ITL', e2e: 'e2e' };
const UNIT: Record<LatencyName, string> = { ttft: 'requests', itl: 'token gaps', e2e: 'requests' };

/** "TTFT p99 125.0 ms [120.1, 131.2] (pooled, 2,304 requests, 6 rounds)". */
export function pooledText(name: LatencyName, p: Pooled): string {
  const ci = p.ci[0] === null && p.ci[1] === null ? 'no CI' : `[${ms(p.ci[0])}, ${ms(p.ci[1])}]`;
  return `${LABEL[name]} p99 ${ms(p.p99Ms)} ms ${ci} (pooled, ${p.values.toLocaleString('en-US')} ${UNIT[name]}, ${p.windows} rounds)`;
}

/** The report's lines: per group and arm, each p99 pooled over its rounds, with the values it rests on. */
export function pooledLines(
  groups: ReadonlyArray<{ mode: string; copies: number; percentiles: GroupPercentiles | null }>,
): string[] {
  return groups.flatMap((g) =>
    g.percentiles === null
      ? []
      : (['shared', 'dedicated'] as const).map(
          (which) =>
            `- ${g.mode} ×${g.copies}, ${which}: ${LATENCIES.map((name) => pooledText(name, (g.percentiles as GroupPercentiles)[which][name])).join('; ')}`,
        ),
  );
}
