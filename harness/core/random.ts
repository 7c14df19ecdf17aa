/**
 * mulberry32: a small, fast PRNG whose whole state is one 32-bit seed. Returns floats in [0, 1). The
 * bootstrap's intervals, the load generator's arrivals and a server run's prompt lengths all draw from
 * it: the same seed, the same sequence.
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
