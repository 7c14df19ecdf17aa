/**
 * The gate's power: the smallest true change it calls a regression with a given probability.
 *
 * The gate calls a change a regression when its log, the worse way, lies beyond its band's half-width H
 * (the edge counts as inside; between-runs.ts classifyAgainstBand). The change it sees is the true change
 * δ plus noise, which the band models as two independent parts: between runs (standard deviation σb, the
 * spread the band's between-run part was built from) and within the run (σw, the within-run 95% CI's
 * half-width ÷ z(0.975)). With that noise normal, P(called a regression) = Φ((δ − H) ÷ σ),
 * σ = √(σb² + σw²), so the change caught with probability p is δ = H + z(p) · σ.
 */
import { CI_LEVEL } from './statistics.js';

/** The probability of a call the gate states its power at: the change it catches in 95% of runs. */
export const POWER = 0.95;

/**
 * Φ(x), the standard normal distribution function, by Marsaglia's series (J. Stat. Softw. 11(4), 2004):
 * ½ + φ(x)·(x + x³/3 + x⁵/(3·5) + …), within 1e-15. simple-statistics' errorFunction is off by 1e-8,
 * and its probit by 1e-3.
 */
export function normalCdf(x: number): number {
  // Stryker disable next-line EqualityOperator: at ±8 itself the series and the cut-off agree within 1e-15
  if (x < -8) return 0;
  // Stryker disable next-line EqualityOperator: as above
  if (x > 8) return 1;
  const q = x * x;
  let sum = x;
  let term = x;
  for (let i = 3, last = Number.NaN; sum !== last; i += 2) {
    last = sum;
    term *= q / i;
    sum += term;
  }
  return 0.5 + sum * Math.exp(-0.5 * q - 0.5 * Math.log(2 * Math.PI));
}

/** The standard normal quantile z(p): Φ(z) = p, by bisection to 1e-12. */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`a probability must lie in (0, 1), got ${p}`);
  let lo = -40;
  let hi = 40;
  // Stryker disable next-line EqualityOperator: a width of exactly 1e-12 is a float coincidence; either stop is within it
  while (hi - lo > 1e-12) {
    const mid = (lo + hi) / 2;
    // Stryker disable next-line EqualityOperator: Φ(mid) = p exactly makes mid the answer, on either side
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * The standard deviation (log scale) of the noise in a change the band models: its between-run part's
 * standard deviation and its within-run CI (half-width `withinLog` at two-sided `withinLevel`) as one.
 */
export function changeNoiseSdLog(betweenSdLog: number, withinLog: number, withinLevel = CI_LEVEL): number {
  if (!(betweenSdLog >= 0 && withinLog >= 0))
    throw new RangeError(`spreads must be 0 or more, got ${betweenSdLog} and ${withinLog}`);
  // Stryker disable next-line ArithmeticOperator: z((1 − L)/2) = −z((1 + L)/2), and hypot squares the sign away
  return Math.hypot(betweenSdLog, withinLog / normalQuantile((1 + withinLevel) / 2));
}

/** The smallest true change (log scale, the worse way) called outside a band of `halfWidthLog` with probability `power`. */
export function smallestCaughtLog(halfWidthLog: number, noiseSdLog: number, power = POWER): number {
  if (!(halfWidthLog >= 0 && noiseSdLog >= 0))
    throw new RangeError(`a band and a spread must be 0 or more, got ${halfWidthLog} and ${noiseSdLog}`);
  return halfWidthLog + normalQuantile(power) * noiseSdLog;
}
