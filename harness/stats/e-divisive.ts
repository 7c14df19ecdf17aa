/**
 * E-divisive's split statistic (Matteson & James 2014, "A nonparametric approach for multiple change
 * point analysis of multivariate data", JASA 109:505; the split Apache Otava/Hunter makes), with α = 1:
 * for X = z[s, τ) and Y = z[τ, κ), of sizes n and m,
 *
 *   Q̂(X, Y) = nm/(n+m) · ( 2/(nm) ΣΣ|X_i − Y_j| − C(n,2)⁻¹ Σ_{i<k}|X_i − X_k| − C(m,2)⁻¹ Σ_{j<k}|Y_j − Y_k| ),
 *
 * the sample energy distance between the two sides, scaled by their sizes. The candidate of a segment is
 * the τ of the (τ, κ) that maximises it: κ may stop short of the segment's end, so a later change does
 * not blur this one.
 */

/** A segment's best split: the first index of its second part, and the statistic there. */
export interface Split {
  tau: number;
  kappa: number;
  q: number;
}

/** Sums of |z_i − z_j| over blocks of indices, each in O(1) after an O(n²) table. */
export class DistanceSums {
  private readonly width: number;
  private readonly prefix: Float64Array;

  constructor(readonly series: readonly number[]) {
    const n = series.length;
    this.width = n + 1;
    // prefix[a][b] = Σ_{i<a, j<b} |z_i − z_j|
    this.prefix = new Float64Array(this.width * this.width);
    for (let a = 1; a <= n; a++)
      for (let b = 1; b <= n; b++)
        this.prefix[a * this.width + b] =
          Math.abs((series[a - 1] as number) - (series[b - 1] as number)) +
          this.at(a - 1, b) +
          this.at(a, b - 1) -
          this.at(a - 1, b - 1);
  }

  private at(a: number, b: number): number {
    return this.prefix[a * this.width + b] as number;
  }

  /** Σ_{a0 ≤ i < a1, b0 ≤ j < b1} |z_i − z_j|. */
  block(a0: number, a1: number, b0: number, b1: number): number {
    return this.at(a1, b1) - this.at(a0, b1) - this.at(a1, b0) + this.at(a0, b0);
  }

  /** Σ over pairs i < k of [a0, a1) of |z_i − z_k|. */
  within(a0: number, a1: number): number {
    return this.block(a0, a1, a0, a1) / 2;
  }
}

/** Q̂ of X = z[s, τ) against Y = z[τ, κ); each side needs 2 values for its within-sample term. */
export function qHat(sums: DistanceSums, s: number, tau: number, kappa: number): number {
  const n = tau - s;
  const m = kappa - tau;
  if (n < 2 || m < 2) throw new RangeError(`each side of a split needs 2 values, got ${n} and ${m}`);
  const between = (2 / (n * m)) * sums.block(s, tau, tau, kappa);
  const withinX = sums.within(s, tau) / ((n * (n - 1)) / 2);
  const withinY = sums.within(tau, kappa) / ((m * (m - 1)) / 2);
  return ((n * m) / (n + m)) * (between - withinX - withinY);
}

/**
 * The split of z[start, end) that maximises Q̂ with at least `minSize` values either side (the first
 * such (τ, κ) on a tie, so the answer never depends on float noise between equal candidates); null when
 * the segment is shorter than 2 × minSize.
 */
export function bestSplit(sums: DistanceSums, start: number, end: number, minSize: number): Split | null {
  if (minSize < 2) throw new RangeError(`the least segment is 2 values, got ${minSize}`);
  let best: Split | null = null;
  // Stryker disable next-line ArithmeticOperator: past the last τ the κ loop below is empty
  const lastTau = end - minSize;
  for (let tau = start + minSize; tau <= lastTau; tau++)
    for (let kappa = tau + minSize; kappa <= end; kappa++) {
      const q = qHat(sums, start, tau, kappa);
      if (best === null || q > best.q) best = { tau, kappa, q };
    }
  return best;
}
