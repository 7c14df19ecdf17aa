/**
 * The load generator's arrivals: a seeded Poisson schedule is the same for the same seed, its mean
 * rate and gap spread within bounds a Poisson process keeps; a constant one is spaced exactly.
 */
import { describe, expect, it } from 'vitest';
import { arrivalTimesMs, scheduleProblem } from '../../harness/load/schedule.js';

describe('arrivalTimesMs', () => {
  it('constant rate: every gap is exactly 1/rate, from 0, none at or past the duration', () => {
    const times = arrivalTimesMs({ kind: 'constant', ratePerS: 40 }, 1000);
    expect(times).toHaveLength(40);
    expect(times[0]).toBe(0);
    expect(times).toEqual(Array.from({ length: 40 }, (_, i) => i * 25));
    expect(arrivalTimesMs({ kind: 'constant', ratePerS: 3 }, 10_000_000)).toHaveLength(30_000);
  });

  it('Poisson with a seed: the same seed, the same arrivals; another seed, others', () => {
    const a = arrivalTimesMs({ kind: 'poisson', ratePerS: 100, seed: 7 }, 2000);
    expect(arrivalTimesMs({ kind: 'poisson', ratePerS: 100, seed: 7 }, 2000)).toEqual(a);
    expect(arrivalTimesMs({ kind: 'poisson', ratePerS: 100, seed: 8 }, 2000)).not.toEqual(a);
  });

  it.each([1, 2, 3, 42])('Poisson (seed %i): mean rate within 3% and gaps as spread as exponential ones', (seed) => {
    // 20 000 expected arrivals: the count's standard deviation is √20000 ≈ 141 (0.7%), so 3% is > 4σ.
    const durationMs = 200_000;
    const times = arrivalTimesMs({ kind: 'poisson', ratePerS: 100, seed }, durationMs);
    expect(Math.abs(times.length / 20_000 - 1)).toBeLessThan(0.03);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length);
    expect(mean).toBeGreaterThan(9.7);
    expect(mean).toBeLessThan(10.3);
    // An exponential's coefficient of variation is 1 (a constant schedule's is 0).
    expect(sd / mean).toBeGreaterThan(0.95);
    expect(sd / mean).toBeLessThan(1.05);
    expect(times.every((t, i) => t >= 0 && t < durationMs && (i === 0 || t >= (times[i - 1] as number)))).toBe(true);
  });

  it('names a bad rate or concurrency in one line', () => {
    expect(scheduleProblem({ kind: 'constant', ratePerS: 0 })).toBe('rate 0 requests/s is not a positive number');
    expect(scheduleProblem({ kind: 'closed', concurrency: 1.5 })).toContain('concurrency 1.5');
    expect(scheduleProblem({ kind: 'poisson', ratePerS: 5, seed: 1 })).toBeNull();
  });
});
