/** Intervals set against each other, and the mean's Student-t interval over rounds. */

/**
 * Where interval `a` lies against `b`: wholly above, wholly below, or null where they overlap.
 * Closed intervals: touching is overlap.
 */
export function intervalSide(a: readonly [number, number], b: readonly [number, number]): 'above' | 'below' | null {
  if (a[0] > b[1]) return 'above';
  if (a[1] < b[0]) return 'below';
  return null;
}

/** Two closed intervals separate when one ends strictly before the other begins: touching is overlap. */
export function separate(a: readonly [number, number], b: readonly [number, number]): boolean {
  return intervalSide(a, b) !== null;
}

/** A mean over rounds with its Student-t 95% interval (null below 2 rounds). */
export interface MeanInterval {
  value: number;
  ci: [number, number] | null;
  rounds: number;
}

/** Two-sided 95% Student t quantiles by degrees of freedom (1–30); 1.96 beyond. */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** The mean of per-round values with its Student-t 95% interval, floored at 0 (for ratios of throughputs). */
export function meanInterval(values: readonly number[]): MeanInterval | null {
  const n = values.length;
  if (n === 0) return null;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { value: mean, ci: null, rounds: n };
  const sd = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
  const half = (T95[n - 2] ?? 1.96) * (sd / Math.sqrt(n));
  // A throughput ratio is never negative: a few rounds far apart give a t interval reaching below 0.
  return { value: mean, ci: [Math.max(0, mean - half), mean + half], rounds: n };
}
