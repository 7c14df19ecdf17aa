/**
 * The one analysis of a server run, every output (summary, report, plan) a pure function of it: per
 * mode and number of copies, the ratios serving teams use against the dedicated copy at equal requests
 * resident per GPU (each the median of its per-round ratios, with the order-statistic CI of that
 * median: it covers the round-to-round spread of this run, not other machines or other days), the
 * TTFT p99 SLO over all rounds, cost per 1M output tokens, the capacity a rate search found, and the
 * generator's ceiling set against the run's own latency.
 */
import { median } from 'simple-statistics';
import { separate } from '../stats/intervals.js';
import { requestsNeeded } from '../stats/p99.js';
import { medianInterval, metricStats } from '../stats/statistics.js';
import { type GroupPercentiles, groupPercentiles } from './pooled.js';
import type { ServeGroup, ServeRun, WindowStats } from './record.js';
import { capacityOverCeilingText, measuredCapacity } from './sent-rate.js';
import { type P99Verdict, p99Verdict, verdictWindowS } from './steps.js';
import { ceilingCheck, groupMeasuredNothing, groupTokenMismatch, plannable, stepUnverified } from './verdicts.js';

export interface Estimate {
  value: number | null;
  ci: [number, number] | null;
  /** The rounds it is of: fewer than the group's where a round had no value (every request failed). */
  n: number;
}

/** The ratios of a group, shared ÷ dedicated per round. */
export const RATIOS = ['throughput', 'ttftP50', 'ttftP99', 'itlP50', 'itlP99', 'e2eP50', 'e2eP99', 'goodput'] as const;
export type RatioName = (typeof RATIOS)[number];

const pick: Record<RatioName, (w: WindowStats) => number | null> = {
  throughput: (w) => w.outputTokensPerS,
  ttftP50: (w) => w.ttft.p50Ms,
  ttftP99: (w) => w.ttft.p99Ms,
  itlP50: (w) => w.itl.p50Ms,
  itlP99: (w) => w.itl.p99Ms,
  e2eP50: (w) => w.e2e.p50Ms,
  e2eP99: (w) => w.e2e.p99Ms,
  goodput: (w) => (w.windowMs > 0 ? w.good / (w.windowMs / 1000) : null),
};

/** shared ÷ dedicated of one round, or null where either has no value or the dedicated one is 0. */
function roundRatio(name: RatioName, shared: WindowStats, dedicated: WindowStats): number | null {
  const a = pick[name](shared);
  const b = pick[name](dedicated);
  return a === null || b === null || b === 0 ? null : a / b;
}

export interface GroupAnalysis {
  mode: ServeGroup['mode'];
  copies: number;
  status: ServeGroup['status'];
  reason: string | null;
  rounds: number;
  ratios: Record<RatioName, Estimate> | null;
  /** Output tokens/s of the whole GPU in the shared arm (all copies), and of the dedicated copy. */
  tokensPerS: Estimate | null;
  dedicatedTokensPerS: Estimate | null;
  /** TTFT p99 ≤ the SLO over every request of every shared window, at 95% confidence. */
  slo: { verdict: P99Verdict; requests: number; over: number } | null;
  failedRequests: number;
  /** USD per 1M output tokens at the median tokens/s, shared and dedicated; null without --gpu-hour-usd. */
  costPer1M: { shared: number | null; dedicated: number | null } | null;
  /** capacity: the highest total rate that passed, the lowest above it that failed, tokens/s at the first. */
  capacity: {
    ratePerS: number | null;
    failedAtPerS: number | null;
    tokensPerS: number | null;
    /** The step that passed sent over the generator's ceiling (or had none to check it by): not a measured capacity (absent: not flagged). */
    unverified?: true;
    /** What that step sent, requests/s (absent from runs before the sent rate was kept). */
    sentPerS?: number;
  } | null;
  /** Windows whose request rate or token rate was over the generator's ceiling (all, when none was found). */
  overCeiling: number;
  /** Windows in which the generator used more than half a core. */
  generatorBusy: number;
  /** bench: each arm's percentiles pooled over its rounds, and the rounds too thin for their own p99 (serve/pooled.ts). */
  percentiles: GroupPercentiles | null;
}

export interface CeilingStep {
  ratePerS: number;
  requestsPerS: number;
  tokensPerS: number;
  ttftP99Ms: number | null;
  e2eP50Ms: number | null;
  e2eP99Ms: number | null;
  lagP99Ms: number;
  cpuShare: number;
  /** Every request ended ok. */
  clean: boolean;
}

export interface Ceiling {
  /** 1% of the run's lowest e2e p50, ms: the latency the generator may add. */
  allowedMs: number | null;
  /** The highest clean null-server rate whose e2e p50 and send lag p99 stayed within it: requests/s and output tokens/s. */
  ratePerS: number | null;
  tokensPerS: number | null;
  /** The first rate within (sent): below it the null servers were slower than the allowance, not falling behind. */
  fromPerS: number | null;
  /** The sweep's top rate was within it: the ceiling is at least this, not measured. */
  atLeast: boolean;
  /** What the generator adds to TTFT there (the null server's TTFT p99), and as a share of the run's lowest TTFT p50. */
  ttftAddedMs: number | null;
  ttftShare: number | null;
  steps: CeilingStep[];
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

/** The least positive value, or null; a loop, not Math.min(...values): a run's windows may be more than a call takes arguments. */
const lowest = (values: Array<number | null>): number | null =>
  values.reduce<number | null>((least, v) => (v !== null && v > 0 && (least === null || v < least) ? v : least), null);

/**
 * The generator's ceiling: the highest clean null-server rate whose e2e p50 and send lag p99 stayed within 1% of
 * the run's own lowest e2e p50. Medians beside medians: the null server's whole latency (loopback, its event loop,
 * the generator's parsing) is at most what the generator adds to a typical request; the send lag's p99 is where
 * a generator falling behind shows first. The steps keep each rate's p99 for the report.
 */
export function ceilingOf(
  run: Pick<ServeRun, 'ceiling' | 'groups'>,
  /** The run's own windows (a fleet search's are in its fleet section): their lowest e2e and TTFT p50. */
  own: ReadonlyArray<{ e2e: { p50Ms: number | null }; ttft: { p50Ms: number | null } }> = run.groups.flatMap((g) => [
    ...g.rounds.map((r) => r.dedicated),
    ...sharedWindows(g),
  ]),
): Ceiling {
  const ownE2e = lowest(own.map((w) => w.e2e.p50Ms));
  const ownTtft = lowest(own.map((w) => w.ttft.p50Ms));
  const allowedMs = ownE2e === null ? null : ownE2e / 100;
  const steps: CeilingStep[] = run.ceiling.map(({ ratePerS, window: w }) => ({
    ratePerS,
    // What the generator sent: the rate a window's sent rate is checked against (completions before it was kept).
    requestsPerS: w.sentPerS ?? w.requestsPerS,
    tokensPerS: w.outputTokensPerS,
    ttftP99Ms: w.ttft.p99Ms,
    e2eP50Ms: w.e2e.p50Ms,
    e2eP99Ms: w.e2e.p99Ms,
    lagP99Ms: w.lagP99Ms,
    cpuShare: w.generatorCpuMs / Math.max(1, w.windowMs),
    clean: w.requests > 0 && w.ok === w.requests,
  }));
  const within = (s: CeilingStep) =>
    allowedMs !== null && s.clean && s.e2eP50Ms !== null && s.e2eP50Ms <= allowedMs && s.lagP99Ms <= allowedMs;
  // From the first rate within, the highest below the first rate after it that was not: past it the generator
  // was falling behind. Rates below the first within are slower for another reason (on an H100 host the null
  // servers' e2e p50 was 3.3 ms at 25 req/s and 0.8 ms at 3,200: processes idle between requests wake slowly);
  // the report names them.
  const first = steps.findIndex(within);
  const out = first === -1 ? -1 : steps.findIndex((s, i) => i > first && !within(s));
  const held = first === -1 ? [] : steps.slice(first, out === -1 ? steps.length : out);
  const best = held.at(-1) ?? null;
  return {
    allowedMs,
    fromPerS: held[0]?.requestsPerS ?? null,
    ratePerS: best?.requestsPerS ?? null,
    tokensPerS: best?.tokensPerS ?? null,
    atLeast: best !== null && out === -1,
    ttftAddedMs: best?.ttftP99Ms ?? null,
    ttftShare: best?.ttftP99Ms != null && ownTtft !== null ? best.ttftP99Ms / ownTtft : null,
    steps,
  };
}

export function analyzeGroup(run: ServeRun, g: ServeGroup, ceiling: Ceiling): GroupAnalysis {
  const windows = sharedWindows(g);
  const requests = windows.reduce((sum, w) => sum + w.requests, 0);
  const over = windows.reduce((sum, w) => sum + w.overTtft, 0);
  const ratios =
    g.rounds.length === 0
      ? null
      : (Object.fromEntries(
          RATIOS.map((name) => {
            const perRound = g.rounds
              .map((r) => roundRatio(name, r.shared, r.dedicated))
              .filter((v): v is number => v !== null);
            const stats = metricStats({ id: `${g.mode}-${g.copies}-${name}`, perRound });
            return [name, { value: stats.value, ci: stats.ci, n: stats.n }];
          }),
        ) as Record<RatioName, Estimate>);
  const tokensPerS = g.rounds.length > 0 ? estimate(g.rounds.map((r) => r.shared.outputTokensPerS)) : null;
  const dedicatedTokensPerS = g.rounds.length > 0 ? estimate(g.rounds.map((r) => r.dedicated.outputTokensPerS)) : null;
  const usd = run.settings.gpuHourUsd;
  const per1M = (tps: number | null | undefined) => (usd === null || !tps ? null : (usd / (tps * 3600)) * 1e6);
  const passing = g.steps.filter((s) => s.verdict === 'pass');
  const top = passing.length > 0 ? passing.reduce((a, b) => (b.totalRatePerS > a.totalRatePerS ? b : a)) : null;
  const failedAbove = g.steps
    .filter((s) => s.verdict === 'fail' && (top === null || s.totalRatePerS > top.totalRatePerS))
    .map((s) => s.totalRatePerS);
  const all = [...windows, ...g.rounds.map((r) => r.dedicated)];
  const overCeiling = (w: WindowStats) => ceilingCheck(w, ceiling) !== 'within';
  // A record that calls a group measured though it measured nothing (written before this check, or
  // edited), or whose server's token counts disagree with its stream, reads as failed: nothing
  // downstream may take it for a measurement.
  const nothing = g.status === 'measured' ? (groupMeasuredNothing(g) ?? groupTokenMismatch(g)) : null;
  return {
    mode: g.mode,
    copies: g.copies,
    status: nothing !== null ? 'failed' : g.status,
    reason: nothing ?? g.reason,
    rounds: g.rounds.length,
    ratios,
    tokensPerS,
    dedicatedTokensPerS,
    slo: requests === 0 ? null : { verdict: p99Verdict(requests, over), requests, over },
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
            failedAtPerS: lowest(failedAbove),
            tokensPerS: top?.window.outputTokensPerS ?? null,
            ...(top !== null && stepUnverified(top.window, ceiling) ? { unverified: true as const } : {}),
            ...(top?.window.sentPerS !== undefined ? { sentPerS: top.window.sentPerS } : {}),
          },
    overCeiling: all.filter(overCeiling).length,
    generatorBusy: all.filter((w) => w.generatorCpuMs > 0.5 * w.windowMs).length,
    percentiles: groupPercentiles(g),
  };
}

export function analyzeServe(run: ServeRun): ServeAnalysis {
  const ceiling = ceilingOf(run);
  return { ceiling, groups: run.groups.map((g) => analyzeGroup(run, g, ceiling)) };
}

export interface ServeAnswer {
  /** The answer, one line. */
  answer: string;
  mode: ServeGroup['mode'] | null;
  copies: number | null;
  /** Modes at the same copies not told apart from the chosen one: throughput intervals that overlap, or none to compare. */
  tiedWith: Array<ServeGroup['mode']>;
}

/**
 * How many copies of this server per GPU, in which mode: bench, the most copies whose TTFT p99 holds
 * the SLO with no failed request, then the most tokens/s (a mode is preferred only where the
 * throughput intervals separate); capacity, the group that carried the highest rate at the SLO, beside
 * what one dedicated copy carried.
 */
export function serveAnswer(run: ServeRun, analysis: ServeAnalysis): ServeAnswer {
  const slo = `TTFT p99 <= ${run.settings.sloTtftP99Ms} ms`;
  const none = (answer: string): ServeAnswer => ({ answer, mode: null, copies: null, tiedWith: [] });
  const groups = analysis.groups.filter((g) => g.status === 'measured' && g.mode !== 'dedicated');
  if (groups.length === 0) return none('no group was measured: each failed or was skipped (its reason is above)');
  if (run.settings.measure === 'capacity') {
    const carried = groups.filter(measuredCapacity);
    const over = capacityOverCeilingText(groups, analysis.ceiling.ratePerS);
    if (carried.length === 0) return none(`no mode carried any measured rate at ${slo}${over}`);
    const best = carried.reduce((a, b) => ((b.capacity?.ratePerS ?? 0) > (a.capacity?.ratePerS ?? 0) ? b : a));
    const alone = analysis.groups.find((g) => g.mode === 'dedicated')?.capacity?.ratePerS ?? null;
    const rate = best.capacity?.ratePerS as number;
    return {
      answer: `${best.copies} copies under ${best.mode}: ${rate.toFixed(1)} req/s at ${slo}, the most of the modes and counts measured${alone !== null ? ` (one dedicated copy: ${alone.toFixed(1)} req/s)` : ''}${over}`,
      mode: best.mode,
      copies: best.copies,
      tiedWith: [],
    };
  }
  const holding = groups.filter(plannable);
  if (holding.length === 0) {
    const missed = `no mode and count measured held ${slo} at ${run.settings.concurrency} requests resident per copy`;
    // Too few requests is no verdict, not a failure: say how many a claim needs and which flag gets them.
    const short = groups.flatMap((g) => (g.slo?.verdict === 'too few requests' ? [g.slo] : []));
    if (short.length === 0) return none(missed);
    const most = Math.max(...short.map((g) => g.requests));
    const why = `a p99 claim needs ${requestsNeeded(0)} requests with none over the SLO (${requestsNeeded(1)} with one) and the most a group had was ${most}: give --window-s ${verdictWindowS(run.settings.windowMs, short)} or more`;
    return none(
      short.length === groups.length
        ? `no verdict: ${why}`
        : `${missed}; no verdict for ${short.length} of ${groups.length} groups: ${why}`,
    );
  }
  const copies = Math.max(...holding.map((g) => g.copies));
  const atCopies = holding.filter((g) => g.copies === copies);
  const best = atCopies.reduce((a, b) => ((b.tokensPerS?.value ?? 0) > (a.tokensPerS?.value ?? 0) ? b : a));
  const others = atCopies.filter((g) => g !== best);
  const noCi = others.filter((g) => !g.tokensPerS?.ci || !best.tokensPerS?.ci);
  const overlap = others.filter(
    (g) =>
      !noCi.includes(g) && !separate(g.tokensPerS?.ci as [number, number], best.tokensPerS?.ci as [number, number]),
  );
  const ties = [
    ...(overlap.length > 0 ? [`${overlap.map((g) => g.mode).join(', ')}: their throughput intervals overlap`] : []),
    ...(noCi.length > 0 ? [`${noCi.map((g) => g.mode).join(', ')}: no CI to separate them (under 6 rounds)`] : []),
  ];
  const pct = best.ratios?.throughput.value;
  return {
    answer: `${copies} copies per GPU under ${best.mode}${ties.length > 0 ? ` (or ${ties.join('; ')})` : ''}: ${best.tokensPerS?.value?.toFixed(0)} output tokens/s per GPU${pct != null ? `, ${(pct * 100).toFixed(0)}% of a dedicated copy at equal requests resident` : ''}, ${slo} held`,
    mode: best.mode,
    copies,
    tiedWith: [...overlap, ...noCi].map((g) => g.mode),
  };
}
