/**
 * The one analysis of a server run, every output (summary, report, plan) a pure function of it: per
 * mode and number of copies, the ratios serving teams use against the dedicated copy at equal requests
 * resident per GPU (each the median of its per-round ratios, with the order-statistic CI of that
 * median: it covers the round-to-round spread of this run, not other machines or other days), the
 * TTFT p99 SLO over all rounds, cost per 1M output tokens, the capacity a rate search found, and the
 * generator's ceiling set against the run's own latency.
 */
import { median } from 'simple-statistics';
import { medianInterval, metricStats } from '../stats/statistics.js';
import { p99Holds } from '../workload/open-loop.js';
import type { ServeGroup, ServeRun, WindowStats } from './record.js';

export interface Estimate {
  value: number | null;
  ci: [number, number] | null;
  n: number;
}

/** The ratios of a group, shared ÷ dedicated per round. */
export const RATIOS = ['throughput', 'ttftP50', 'ttftP99', 'itlP50', 'itlP99', 'e2eP50', 'e2eP99', 'goodput'] as const;
export type RatioName = (typeof RATIOS)[number];

const pick: Record<RatioName, (w: WindowStats) => number> = {
  throughput: (w) => w.outputTokensPerS,
  ttftP50: (w) => w.ttft.p50Ms,
  ttftP99: (w) => w.ttft.p99Ms,
  itlP50: (w) => w.itl.p50Ms,
  itlP99: (w) => w.itl.p99Ms,
  e2eP50: (w) => w.e2e.p50Ms,
  e2eP99: (w) => w.e2e.p99Ms,
  goodput: (w) => w.good / Math.max(1e-9, w.elapsedMs / 1000),
};

export type SloVerdict = 'holds' | 'fails' | 'too few requests';

export interface GroupAnalysis {
  mode: ServeGroup['mode'];
  copies: number;
  status: ServeGroup['status'];
  reason: string | null;
  ratios: Record<RatioName, Estimate> | null;
  /** Output tokens/s of the whole GPU in the shared arm (all copies), and of the dedicated copy. */
  tokensPerS: Estimate | null;
  dedicatedTokensPerS: Estimate | null;
  /** TTFT p99 ≤ the SLO over every request of every shared window, at 95% confidence. */
  slo: { verdict: SloVerdict; requests: number; over: number } | null;
  failedRequests: number;
  /** USD per 1M output tokens at the median tokens/s, shared and dedicated; null without --gpu-hour-usd. */
  costPer1M: { shared: number; dedicated: number } | null;
  /** capacity: the highest total rate that passed, and the lowest above it that failed. */
  capacity: { ratePerS: number | null; failedAtPerS: number | null; tokensPerS: number | null } | null;
  /** Windows whose request rate was over the generator's ceiling. */
  overCeiling: number;
}

export interface Ceiling {
  /** 1% of the run's lowest dedicated (or capacity) e2e p50, ms: the added latency allowed. */
  allowedMs: number | null;
  ratePerS: number | null;
  tokensPerS: number | null;
  steps: Array<{
    ratePerS: number;
    requestsPerS: number;
    tokensPerS: number;
    e2eP99Ms: number;
    lagP99Ms: number;
    cpuShare: number;
  }>;
}

export interface ServeAnalysis {
  ceiling: Ceiling;
  groups: GroupAnalysis[];
}

const estimate = (values: number[]): Estimate => {
  if (values.length === 0) return { value: null, ci: null, n: 0 };
  return { value: median(values), ci: medianInterval(values)?.ci ?? null, n: values.length };
};

const sharedWindows = (g: ServeGroup): WindowStats[] =>
  g.rounds.length > 0 ? g.rounds.map((r) => r.shared) : g.steps.map((s) => s.window);

/** The generator's ceiling: the highest null-server rate whose e2e p99 stayed within 1% of the run's own e2e p50. */
export function ceilingOf(run: ServeRun): Ceiling {
  const own = run.groups
    .flatMap((g) =>
      g.rounds.length > 0 ? g.rounds.map((r) => r.dedicated.e2e.p50Ms) : g.steps.map((s) => s.window.e2e.p50Ms),
    )
    .filter((v) => v > 0);
  const allowedMs = own.length > 0 ? Math.min(...own) / 100 : null;
  const steps = run.ceiling.map(({ ratePerS, window: w }) => ({
    ratePerS,
    requestsPerS: w.requestsPerS,
    tokensPerS: w.outputTokensPerS,
    e2eP99Ms: w.e2e.p99Ms,
    lagP99Ms: w.lagP99Ms,
    cpuShare: w.generatorCpuMs / Math.max(1, w.elapsedMs),
  }));
  const within = allowedMs === null ? [] : steps.filter((s) => s.e2eP99Ms <= allowedMs && s.lagP99Ms <= allowedMs);
  const best = within.at(-1) ?? null;
  return { allowedMs, ratePerS: best?.requestsPerS ?? null, tokensPerS: best?.tokensPerS ?? null, steps };
}

export function analyzeGroup(run: ServeRun, g: ServeGroup, ceiling: Ceiling): GroupAnalysis {
  const windows = sharedWindows(g);
  const requests = windows.reduce((sum, w) => sum + w.requests, 0);
  const over = windows.reduce((sum, w) => sum + w.overTtft, 0);
  const slo =
    requests === 0
      ? null
      : {
          verdict: (p99Holds(requests, over)
            ? 'holds'
            : over > requests / 100
              ? 'fails'
              : 'too few requests') as SloVerdict,
          requests,
          over,
        };
  const ratios =
    g.rounds.length === 0
      ? null
      : (Object.fromEntries(
          RATIOS.map((name) => {
            const perRound = g.rounds
              .map((r) => pick[name](r.shared) / pick[name](r.dedicated))
              .filter(Number.isFinite);
            const stats = metricStats({ id: `${g.mode}-${g.copies}-${name}`, perRound });
            return [name, { value: stats.value, ci: stats.ci, n: stats.n }];
          }),
        ) as Record<RatioName, Estimate>);
  const tokensPerS = g.rounds.length > 0 ? estimate(g.rounds.map((r) => r.shared.outputTokensPerS)) : null;
  const dedicatedTokensPerS = g.rounds.length > 0 ? estimate(g.rounds.map((r) => r.dedicated.outputTokensPerS)) : null;
  const usd = run.settings.gpuHourUsd;
  const per1M = (tps: number | null | undefined) => (usd === null || !tps ? Number.NaN : (usd / (tps * 3600)) * 1e6);
  const passing = g.steps.filter((s) => s.verdict === 'pass');
  const top = passing.length > 0 ? passing.reduce((a, b) => (b.totalRatePerS > a.totalRatePerS ? b : a)) : null;
  const failedAbove = g.steps
    .filter((s) => s.verdict === 'fail' && (top === null || s.totalRatePerS > top.totalRatePerS))
    .map((s) => s.totalRatePerS);
  return {
    mode: g.mode,
    copies: g.copies,
    status: g.status,
    reason: g.reason,
    ratios,
    tokensPerS,
    dedicatedTokensPerS,
    slo,
    failedRequests: windows.reduce((sum, w) => sum + (w.requests - w.ok), 0),
    costPer1M:
      usd === null || tokensPerS === null
        ? null
        : { shared: per1M(tokensPerS.value), dedicated: per1M(dedicatedTokensPerS?.value) },
    capacity:
      g.steps.length === 0
        ? null
        : {
            ratePerS: top?.totalRatePerS ?? null,
            failedAtPerS: failedAbove.length > 0 ? Math.min(...failedAbove) : null,
            tokensPerS: top?.window.outputTokensPerS ?? null,
          },
    overCeiling:
      ceiling.ratePerS === null
        ? 0
        : [...windows, ...g.rounds.map((r) => r.dedicated)].filter((w) => w.requestsPerS > (ceiling.ratePerS as number))
            .length,
  };
}

export function analyzeServe(run: ServeRun): ServeAnalysis {
  const ceiling = ceilingOf(run);
  return { ceiling, groups: run.groups.map((g) => analyzeGroup(run, g, ceiling)) };
}

/** Whether two intervals are apart (neither reaches the other). */
const apart = (a: [number, number] | null, b: [number, number] | null) =>
  a !== null && b !== null && (a[0] > b[1] || b[0] > a[1]);

export interface ServePlan {
  /** The answer, one line; null when no group held the SLO. */
  answer: string;
  mode: ServeGroup['mode'] | null;
  copies: number | null;
  /** Modes at the same copies whose throughput interval overlaps the chosen one's: no decision between them. */
  tiedWith: Array<ServeGroup['mode']>;
}

/**
 * How many copies of this server per GPU, in which mode: bench, the most copies whose TTFT p99 holds
 * the SLO with no failed request, then the most tokens/s among those (a mode is preferred only where
 * the throughput intervals separate); capacity, the group that carried the highest rate at the SLO.
 */
export function servePlan(run: ServeRun, analysis: ServeAnalysis): ServePlan {
  const slo = `TTFT p99 <= ${run.settings.sloTtftP99Ms} ms`;
  const groups = analysis.groups.filter((g) => g.status === 'measured' && g.mode !== 'dedicated');
  if (run.settings.measure === 'capacity') {
    const carried = groups.filter((g) => g.capacity?.ratePerS != null);
    if (carried.length === 0)
      return { answer: `no mode carried any measured rate at ${slo}`, mode: null, copies: null, tiedWith: [] };
    const best = carried.reduce((a, b) => ((b.capacity?.ratePerS ?? 0) > (a.capacity?.ratePerS ?? 0) ? b : a));
    return {
      answer: `${best.copies} copies under ${best.mode}: ${best.capacity?.ratePerS?.toFixed(1)} req/s at ${slo}, the most of any mode and count measured`,
      mode: best.mode,
      copies: best.copies,
      tiedWith: [],
    };
  }
  const holding = groups.filter(
    (g) => g.slo?.verdict === 'holds' && g.failedRequests === 0 && g.tokensPerS?.value != null,
  );
  if (holding.length === 0)
    return {
      answer: `no mode and count measured held ${slo} at ${run.settings.concurrency} requests resident per copy`,
      mode: null,
      copies: null,
      tiedWith: [],
    };
  const copies = Math.max(...holding.map((g) => g.copies));
  const atCopies = holding.filter((g) => g.copies === copies);
  const best = atCopies.reduce((a, b) => ((b.tokensPerS?.value ?? 0) > (a.tokensPerS?.value ?? 0) ? b : a));
  const tiedWith = atCopies
    .filter((g) => g !== best && !apart(g.tokensPerS?.ci ?? null, best.tokensPerS?.ci ?? null))
    .map((g) => g.mode);
  const pct = best.ratios?.throughput.value;
  return {
    answer: `${copies} copies per GPU under ${best.mode}${tiedWith.length > 0 ? ` (or ${tiedWith.join(', ')}: their throughput intervals overlap)` : ''}: ${best.tokensPerS?.value?.toFixed(0)} output tokens/s per GPU${pct != null ? `, ${(pct * 100).toFixed(0)}% of a dedicated copy at equal requests resident` : ''}, ${slo} held`,
    mode: best.mode,
    copies,
    tiedWith,
  };
}
