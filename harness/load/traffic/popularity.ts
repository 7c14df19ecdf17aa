/**
 * How traffic divides among a fleet's servers by popularity: Zipf's law, server i (1-based, in the
 * fleet file's order) drawing a share proportional to 1/i^s. s = 0 is uniform; s ≈ 1 is the classic
 * skew of model and content popularity (a few hot servers, a long cold tail).
 */

/** Zipf shares over `n` servers with exponent `s` ≥ 0: n shares, non-increasing, summing to 1. */
export function zipfShares(n: number, s: number): number[] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`zipfShares: n ${n} is not a whole number of at least 1`);
  if (!(Number.isFinite(s) && s >= 0)) throw new RangeError(`zipfShares: exponent ${s} is not a number ≥ 0`);
  const weights = Array.from({ length: n }, (_, i) => (i + 1) ** -s);
  const total = weights.reduce((sum, w) => sum + w, 0);
  return weights.map((w) => w / total);
}
