/**
 * The p99 claims of a server run: whether TTFT p99 holds a target over a set of requests (the binomial
 * test of capacity's steps: 299 requests with none over, 473 with one), a capacity step's verdict, and
 * how long a step must run to make its claim.
 */
import type { SearchPolicy } from '../experiment/rate-search.js';
import { p99Holds, requestsNeeded } from '../stats/p99.js';
import type { RateStep, WindowStats } from './record.js';

export type P99Verdict = 'holds' | 'fails' | 'too few requests';

/** "p99 within the target" over `requests` with `over` of them over it: holds at 95%, fails (over 1%), or cannot be told. */
export function p99Verdict(requests: number, over: number): P99Verdict {
  if (p99Holds(requests, over)) return 'holds';
  return over > requests / 100 ? 'fails' : 'too few requests';
}

/** A group's SLO verdict in words: holds, fails, or no verdict with the requests it had and a claim needs; none without requests. */
export function sloText(slo: { verdict: P99Verdict; requests: number; over: number } | null | undefined): string {
  if (!slo) return 'none';
  if (slo.verdict !== 'too few requests') return slo.verdict;
  return `no verdict (${slo.requests} requests, ${requestsNeeded(slo.over)} needed)`;
}

/**
 * The --window-s at which each group too short for a verdict holds the requests its claim needs, 10%
 * to spare: a closed loop's requests grow with its windows.
 */
export function verdictWindowS(windowMs: number, short: ReadonlyArray<{ requests: number; over: number }>): number {
  const factor = Math.max(...short.map((g) => (requestsNeeded(g.over) * 1.1) / Math.max(1, g.requests)));
  return Math.ceil((windowMs / 1000) * factor);
}

/** The longest a capacity step runs by default, s (--max-step-s). */
export const MAX_STEP_S = 120;

/** The requests a capacity step runs for: the 473 with which "p99 within the target" can hold at 95% with one over, and 10% more for Poisson's spread. */
const STEP_REQUESTS = requestsNeeded(1) * 1.1;

/**
 * A capacity step long enough for its p99 claim (STEP_REQUESTS), at least --window-s, at most --max-step-s
 * (a slower rate is then too few to claim: not a failure).
 */
export function stepDurationMs(totalRatePerS: number, windowMs: number, maxStepMs: number): number {
  const needed = Math.ceil((STEP_REQUESTS / totalRatePerS) * 1000);
  return Math.min(maxStepMs, Math.max(windowMs, needed));
}

/** How a server capacity search goes for `copies` copies: from 8 req/s a copy, to within 10%, in 8 steps at most. */
export function searchPolicy(copies: number): SearchPolicy {
  return { startQps: 8 * copies, tolerance: 0.1, maxSteps: 8, minQps: 0.5 };
}

/**
 * Why a search for `copies` copies gets no verdict within --max-step-s, or null: its first step is too
 * short for the requests a p99 claim needs, and the search only goes down from there.
 */
export function shortStepWarning(copies: number, windowMs: number, maxStepMs: number): string | null {
  const rate = searchPolicy(copies).startQps;
  const stepS = stepDurationMs(rate, windowMs, maxStepMs) / 1000;
  if (rate * stepS >= STEP_REQUESTS) return null;
  return `a rate search from ${rate} req/s holds about ${Math.round(rate * stepS)} requests in a ${stepS} s step, fewer than the ${requestsNeeded(1)} a p99 claim needs and 10% to spare, and goes down from there: no step can get a verdict (give --max-step-s ${Math.ceil(STEP_REQUESTS / rate)} or more)`;
}

/** Lag over this share of the target makes a step the generator's, not the server's (as capacity's). */
const MAX_LAG_SHARE = 0.2;

/** Whether TTFT p99 ≤ `targetMs` holds at a rate, fails, or cannot be told (too few requests, or the generator lagged). */
export function stepVerdict(totalRatePerS: number, window: WindowStats, targetMs: number): RateStep {
  const base = { totalRatePerS, window };
  if (window.requests === 0) return { ...base, verdict: 'invalid', reason: 'no request was sent' };
  if (window.lagP99Ms > MAX_LAG_SHARE * targetMs)
    return {
      ...base,
      verdict: 'invalid',
      reason: `the generator sent ${window.lagP99Ms.toFixed(1)} ms late (p99): the host, not the server, set the pace`,
    };
  const counted = `${window.overTtft} of ${window.requests} requests over ${targetMs} ms TTFT`;
  switch (p99Verdict(window.requests, window.overTtft)) {
    case 'holds':
      return { ...base, verdict: 'pass', reason: counted };
    case 'fails':
      return { ...base, verdict: 'fail', reason: counted };
    case 'too few requests':
      // Within 1% but too few to claim it: no measurement that the rate fails, and none that it passes.
      return {
        ...base,
        verdict: 'invalid',
        reason: `${counted}: too few requests to claim p99 (${requestsNeeded(window.overTtft)} needed)`,
      };
  }
}
