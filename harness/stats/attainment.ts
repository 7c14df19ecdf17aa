/** A share of successes (requests within an SLO) with its Wilson score 95% interval. */

const Z95 = 1.959963984540054;

/** `k` of `n` as a share with its Wilson 95% interval (good at 0 and n, where the normal one collapses); null for n = 0. */
export function wilsonInterval(k: number, n: number): { share: number; interval: [number, number] } | null {
  if (n <= 0) return null;
  const p = k / n;
  const z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return { share: p, interval: [Math.max(0, centre - half), Math.min(1, centre + half)] };
}
