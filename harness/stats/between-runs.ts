/**
 * Between-run uncertainty: how far a new run's ratio may fall from a reference when nothing changed,
 * learned from the spread of many runs' medians. Everything is on the log scale, where a ratio's
 * change is symmetric (×1.1 and ÷1.1 are the same distance) and run-to-run spread is roughly normal.
 */
import { mean, sampleStandardDeviation } from 'simple-statistics';

/** The fewest runs the between-run spread is learned from; below it a documented floor applies. */
export const MIN_RUNS_TO_LEARN = 3;

/**
 * P(|T| ≤ t) for Student's t with integer `df` degrees of freedom, by the finite series of
 * Abramowitz & Stegun 26.7.3–4 (exact for integer df, no special functions needed).
 */
export function studentTTwoSidedCdf(t: number, df: number): number {
  if (!Number.isInteger(df) || df < 1) throw new RangeError(`degrees of freedom must be a positive integer, got ${df}`);
  const theta = Math.atan(Math.abs(t) / Math.sqrt(df));
  const c2 = Math.cos(theta) ** 2;
  const s = Math.sin(theta);
  if (df % 2 === 1) {
    if (df === 1) return (2 * theta) / Math.PI;
    // cosθ · (1 + (2/3)c² + (2·4)/(3·5)c⁴ + … up to c^(df−3))
    let term = Math.cos(theta);
    let sum = term;
    for (let k = 2; k <= df - 3; k += 2) {
      term *= (c2 * k) / (k + 1);
      sum += term;
    }
    return (2 / Math.PI) * (theta + s * sum);
  }
  // 1 + (1/2)c² + (1·3)/(2·4)c⁴ + … up to c^(df−2)
  let term = 1;
  let sum = 1;
  for (let k = 1; k <= df - 3; k += 2) {
    term *= (c2 * k) / (k + 1);
    sum += term;
  }
  return s * sum;
}

/** The two-sided critical value t with P(|T| ≤ t) = level, by bisection (to 1e-10). */
export function studentTCritical(level: number, df: number): number {
  if (!(level > 0 && level < 1)) throw new RangeError(`level must lie in (0, 1), got ${level}`);
  let lo = 0;
  let hi = 1;
  // Stryker disable next-line EqualityOperator: where P(|T| ≤ hi) = level, hi is the answer; doubling it still brackets it
  while (studentTTwoSidedCdf(hi, df) < level) hi *= 2;
  // Stryker disable next-line EqualityOperator: a width of exactly 1e-10 × hi is a float coincidence; either stop is within it
  while (hi - lo > 1e-10 * hi) {
    const mid = (lo + hi) / 2;
    // Stryker disable next-line EqualityOperator: P(|T| ≤ mid) = level exactly makes mid the answer, on either side
    if (studentTTwoSidedCdf(mid, df) < level) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The spread of a set of runs' values of one ratio, on the log scale. */
export interface RunSpread {
  /** How many runs it was learned from. */
  runs: number;
  /** Mean of the runs' log values (log of their geometric mean). */
  meanLog: number;
  /** Sample standard deviation of the runs' log values. */
  sdLog: number;
}

/** The spread of `values` (each run's median of one ratio, all > 0); null below MIN_RUNS_TO_LEARN runs. */
export function runSpread(values: readonly number[]): RunSpread | null {
  if (values.length < MIN_RUNS_TO_LEARN || values.some((v) => !(v > 0))) return null;
  const logs = values.map(Math.log);
  return { runs: logs.length, meanLog: mean(logs), sdLog: sampleStandardDeviation(logs) };
}

/**
 * Half-width, on the log scale, of a prediction interval for log(new run) − log(reference), where the
 * reference is the mean of `referenceRuns` runs' logs and the spread was learned from `spread.runs`
 * runs: t(level, runs−1) · sd · √(1 + 1/referenceRuns). With the reference being the learning set
 * itself this is the textbook prediction interval for one new observation.
 */
export function predictionHalfWidthLog(spread: RunSpread, referenceRuns: number, level: number): number {
  if (referenceRuns < 1) throw new RangeError(`a reference needs at least one run, got ${referenceRuns}`);
  return studentTCritical(level, spread.runs - 1) * spread.sdLog * Math.sqrt(1 + 1 / referenceRuns);
}

/** A relative half-width (0.05 = ±5%) as a distance on the log scale: log(1 + x). */
export const relativeToLog = (relative: number): number => Math.log1p(relative);

/** Half-width on the log scale of an interval [lo, hi] around nothing in particular: (log hi − log lo) ÷ 2. */
export function intervalHalfWidthLog(ci: readonly [number, number]): number {
  return (Math.log(ci[1]) - Math.log(ci[0])) / 2;
}

/** Two independent parts of an uncertainty, each a half-width on the log scale, added in quadrature. */
export function combineHalfWidths(betweenLog: number, withinLog: number): number {
  return Math.hypot(betweenLog, withinLog);
}

/** Where a change lies against a symmetric band on the log scale; the band's edges count as inside. */
export function classifyAgainstBand(
  change: number,
  better: 'higher' | 'lower',
  halfWidthLog: number,
): 'regression' | 'improvement' | 'unchanged' {
  const log = Math.log(change);
  if (Math.abs(log) <= halfWidthLog) return 'unchanged';
  // Stryker disable next-line EqualityOperator: log 0 lies within any band (half-width ≥ 0) and returned above
  const up = log > 0;
  return up === (better === 'higher') ? 'improvement' : 'regression';
}
