/**
 * One server's arrival times under a law: Poisson (exponential gaps), gamma (a burstiness knob: the
 * coefficient of variation of the gaps, cv; shape k = 1/cv², so cv = 1 is Poisson and a larger cv
 * clusters arrivals into bursts separated by long quiet gaps), or constant (every gap exactly 1/rate).
 * Each draws from the `random` it is given (mulberry32, core/random.ts): the same seed, the same times.
 */

import { gammaDraw } from './draws.js';

export type ArrivalLaw = { kind: 'poisson' } | { kind: 'gamma'; cv: number } | { kind: 'constant' };

/** The gamma shape a coefficient of variation gives: k = 1/cv². */
export const gammaShape = (cv: number): number => 1 / (cv * cv);

/** One gap, ms, of mean `meanGapMs`; `biased`: drawn by length (the gap that covers a random instant). */
function gap(law: ArrivalLaw, meanGapMs: number, random: () => number, biased: boolean): number {
  if (law.kind === 'constant') return meanGapMs;
  // Poisson is gamma of shape 1; a length-biased Gamma(k) gap is a Gamma(k + 1) one.
  const shape = law.kind === 'poisson' ? 1 : gammaShape(law.cv);
  return (gammaDraw(biased ? shape + 1 : shape, random) * meanGapMs) / shape;
}

/**
 * Arrival times (ms from the start) within [0, durationMs) at `ratePerS` under `law`. The process is
 * started stationary, as if it had run before the window opened: the first arrival falls a uniform
 * fraction into a length-biased gap. For Poisson this is the plain exponential first gap; for constant,
 * a random phase, so that many constant servers do not all send at the same instants.
 */
export function arrivalOffsetsMs(
  law: ArrivalLaw,
  ratePerS: number,
  durationMs: number,
  random: () => number,
): number[] {
  if (!(ratePerS > 0) || !(durationMs > 0)) return [];
  const meanGapMs = 1000 / ratePerS;
  const first = (1 - random()) * gap(law, meanGapMs, random, true);
  const times: number[] = [];
  if (law.kind === 'constant') {
    // By index, not by summing gaps: no drift from rounding over a long run.
    for (let i = 0; first + i * meanGapMs < durationMs; i++) times.push(first + i * meanGapMs);
    return times;
  }
  for (let t = first; t < durationMs; t += gap(law, meanGapMs, random, false)) times.push(t);
  return times;
}
