/**
 * A fleet server's verdict from its SLO attainment: within where the whole Wilson 95% interval of its
 * share of requests within the SLO lies at or above the target, missed where it lies wholly below, unclear
 * where it straddles (too few requests to tell).
 */
import { wilsonInterval } from '../../stats/attainment.js';

/** The attainment a server must hold: the SLO is on TTFT p99, so 99% of its requests. */
export const ATTAINMENT_TARGET = 0.99;

export type Verdict = 'within' | 'missed' | 'unclear';

export function verdictOf(
  good: number,
  requests: number,
): { attainment: number | null; interval: [number, number] | null; verdict: Verdict } {
  const w = wilsonInterval(good, requests);
  if (w === null) return { attainment: null, interval: null, verdict: 'unclear' };
  const verdict =
    // Stryker disable next-line EqualityOperator: no Wilson bound is exactly 0.99 for k ≤ n ≤ 100000 (checked: nearest 7.7e-11 off)
    w.interval[0] >= ATTAINMENT_TARGET ? 'within' : w.interval[1] < ATTAINMENT_TARGET ? 'missed' : 'unclear';
  return { attainment: w.share, interval: w.interval, verdict };
}

/**
 * The fewest requests, none missed, that show a server within ATTAINMENT_TARGET (381 for 99%): below it
 * a server's verdict can only be unclear or missed, however well it served.
 */
export const REQUESTS_TO_SHOW_WITHIN: number = (() => {
  let n = 1;
  while (verdictOf(n, n).verdict !== 'within') n += 1;
  return n;
})();
