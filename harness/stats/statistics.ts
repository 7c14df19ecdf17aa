/**
 * Per-metric statistics: point estimate, a distribution-free 95% CI of the median (order
 * statistics, exact coverage stated), MAD, CV and MAD outliers.
 */
import { mean, median, medianAbsoluteDeviation, sampleStandardDeviation } from 'simple-statistics';
import { binomialCdf } from './binomial.js';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP, seedOf } from './bootstrap.js';

/** The values a ratio's statistics are computed from: paired per-round values, or two independent samples. */
export interface RatioSample {
  id: string;
  /** The paired per-round values, one per complete round. */
  perRound: number[];
  /** The round index of each value of `perRound`. */
  rounds?: number[];
  /** Two independent samples: the ratio is median(numerator) ÷ median(denominator). */
  parts?: { numerator: number[]; denominator: number[] } | null;
  value?: number | null;
}

/** The confidence every interval aims for. */
export const CI_LEVEL = 0.95;
/** The fewest rounds for which an order-statistic interval of the median reaches 95% (n = 6: 96.9%). */
export const MIN_ROUNDS_FOR_CI = 6;
/** A round is an outlier when it lies further than this many scaled MADs from the median. */
export const OUTLIER_MADS = 3;
/** MAD × 1.4826 estimates the standard deviation of normal data. */
export const MAD_TO_SD = 1.4826;

/** Statistics of one metric's per-round ratios. */
export interface MetricStats {
  n: number;
  /** Median of the per-round ratios (the point estimate). */
  value: number | null;
  /** CI of the median with at least CI_LEVEL confidence; null below MIN_ROUNDS_FOR_CI rounds. */
  ci: [number, number] | null;
  /** The interval's exact coverage (e.g. 0.961), or the nominal level of a bootstrap. */
  confidence: number | null;
  /** How the CI was made. */
  method: 'order-statistic' | 'bootstrap-ratio-of-medians' | null;
  /** CI half-width relative to the value (0.01 = ±1%). */
  halfWidth: number | null;
  mad: number | null;
  /** Coefficient of variation (sample SD ÷ mean). */
  cv: number | null;
  /** Round indices whose value lies further than OUTLIER_MADS scaled MADs from the median. */
  outliers: number[];
}

/**
 * The narrowest symmetric order-statistic interval [x(k), x(n−k+1)] of the median whose coverage
 * 1 − 2·P(B ≤ k−1) is at least `level`: exact for any continuous distribution, at any n. Null when
 * no such interval exists (n ≤ 5 for 95%: [min, max] of 5 rounds covers only 93.75%).
 */
export function medianInterval(
  values: readonly number[],
  level = CI_LEVEL,
): { ci: [number, number]; confidence: number } | null {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  // Past the middle the coverage 1 − 2·P(B ≤ k−1) is below 0, under any level: the loop breaks there.
  // Stryker disable next-line ArithmeticOperator: a higher cap is never reached (the loop breaks first)
  const most = Math.ceil(n / 2);
  // Stryker disable next-line ArithmeticOperator: P(B ≤ k) past the cap is computed but never read
  const cdf = binomialCdf(n, 0.5, most - 1);
  let best: { k: number; confidence: number } | null = null;
  for (let k = 1; k <= most; k++) {
    const confidence = 1 - 2 * (cdf[k - 1] as number);
    if (confidence < level) break;
    best = { k, confidence };
  }
  if (!best) return null;
  return { ci: [sorted[best.k - 1] as number, sorted[n - best.k] as number], confidence: best.confidence };
}

/** `rounds` name the round of each value (default: their positions); `parts` make it a ratio of two medians. */
export function metricStats(metric: RatioSample): MetricStats {
  if (metric.parts) return ratioOfMediansStats(metric.id, metric.parts, metric.value ?? null);
  const values = metric.perRound;
  const n = values.length;
  if (n === 0)
    return {
      n,
      value: null,
      ci: null,
      confidence: null,
      method: null,
      halfWidth: null,
      mad: null,
      cv: null,
      outliers: [],
    };
  const value = median(values);
  const mad = medianAbsoluteDeviation(values);
  const cv = n >= 2 ? sampleStandardDeviation(values) / mean(values) : null;
  const interval = medianInterval(values);
  const halfWidth = interval ? (interval.ci[1] - interval.ci[0]) / 2 / value : null;
  // With MAD 0 every value off the median would be an outlier: flag none instead.
  const outliers =
    mad > 0
      ? values.flatMap((v, i) =>
          Math.abs(v - value) > OUTLIER_MADS * MAD_TO_SD * mad ? [metric.rounds?.[i] ?? i] : [],
        )
      : [];
  return {
    n,
    value,
    ci: interval?.ci ?? null,
    confidence: interval?.confidence ?? null,
    method: interval ? 'order-statistic' : null,
    halfWidth,
    mad,
    cv,
    outliers,
  };
}

/** Two unpaired samples (e.g. two modes' rounds): a seeded bootstrap of the ratio of their medians. */
function ratioOfMediansStats(id: string, parts: NonNullable<RatioSample['parts']>, value: number | null): MetricStats {
  const n = Math.min(parts.numerator.length, parts.denominator.length);
  const enough = value !== null && n >= MIN_ROUNDS_FOR_CI;
  const ci = enough
    ? bootstrapRatioOfMediansCI(parts.numerator, parts.denominator, {
        ...DEFAULT_BOOTSTRAP,
        level: CI_LEVEL,
        seed: seedOf(id),
      })
    : null;
  return {
    n,
    value,
    ci,
    confidence: ci ? CI_LEVEL : null,
    method: ci ? 'bootstrap-ratio-of-medians' : null,
    halfWidth: ci && value ? (ci[1] - ci[0]) / 2 / value : null,
    mad: null,
    cv: null,
    outliers: [],
  };
}
