/** Per-metric statistics: point estimate, seeded 95% bootstrap CI, MAD, CV and MAD outliers. */
import { mean, median, medianAbsoluteDeviation, sampleStandardDeviation } from 'simple-statistics';
import { bootstrapMedianCI, DEFAULT_BOOTSTRAP, seedOf } from './bootstrap.js';
import type { Metric } from './metrics.js';

/** Below this many rounds a bootstrap cannot say how uncertain a median is. */
export const MIN_ROUNDS_FOR_CI = 3;
/** A round is an outlier when it lies further than this many scaled MADs from the median. */
export const OUTLIER_MADS = 3;
/** MAD × 1.4826 estimates the standard deviation of normal data. */
const MAD_TO_SD = 1.4826;

/** Statistics of one metric's per-round ratios. */
export interface MetricStats {
  n: number;
  /** Median of the per-round ratios (the point estimate). */
  value: number | null;
  /** 95% percentile-bootstrap CI of the median; null below MIN_ROUNDS_FOR_CI rounds. */
  ci: [number, number] | null;
  /** CI half-width relative to the value (0.01 = ±1%). */
  halfWidth: number | null;
  mad: number | null;
  /** Coefficient of variation (sample SD ÷ mean). */
  cv: number | null;
  /** Indices (rounds) of per-round values further than OUTLIER_MADS scaled MADs from the median. */
  outliers: number[];
}

export function metricStats(metric: Pick<Metric, 'id' | 'perRound'>): MetricStats {
  const values = metric.perRound;
  const n = values.length;
  if (n === 0) return { n, value: null, ci: null, halfWidth: null, mad: null, cv: null, outliers: [] };
  const value = median(values);
  const mad = medianAbsoluteDeviation(values);
  const cv = n >= 2 ? sampleStandardDeviation(values) / mean(values) : null;
  const ci = n >= MIN_ROUNDS_FOR_CI ? bootstrapMedianCI(values, { ...DEFAULT_BOOTSTRAP, seed: seedOf(metric.id) }) : null;
  const halfWidth = ci ? (ci[1] - ci[0]) / 2 / value : null;
  // With MAD 0 every value off the median would be an outlier: flag none instead.
  const outliers = mad > 0 ? values.flatMap((v, i) => (Math.abs(v - value) > OUTLIER_MADS * MAD_TO_SD * mad ? [i] : [])) : [];
  return { n, value, ci, halfWidth, mad, cv, outliers };
}
