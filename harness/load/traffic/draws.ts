/**
 * The random draws traffic is made of, each from a uniform source in [0, 1) (mulberry32, core/random.ts),
 * and the seeds of the independent streams a fleet's schedule draws from.
 */
import { mulberry32 } from '../../core/random.js';

/** A standard normal draw (Box–Muller; 1 − u is in (0, 1], so the log is finite). */
export function normalDraw(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** A Gamma(shape, 1) draw: Marsaglia and Tsang's method, boosted by u^(1/shape) for shape < 1. */
export function gammaDraw(shape: number, random: () => number): number {
  if (shape < 1) return gammaDraw(shape + 1, random) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = normalDraw(random);
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/**
 * The stream of server `index` for `purpose` (0 arrivals, 1 lengths) under `seed`: mulberry32 seeded by
 * a hash of the three, so a server's arrivals do not change when another server is added or when the
 * length laws change.
 */
export function stream(seed: number, index: number, purpose: number): () => number {
  let h = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13) ^ Math.imul(index + 1, 0xc2b2ae35), 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16) ^ Math.imul(purpose + 1, 0x165667b1), 0x85ebca6b);
  return mulberry32((h ^ (h >>> 15)) >>> 0);
}
