/**
 * A fleet's traffic (#49 Build 2), seeded with mulberry32: Zipf shares; per-server counts of a
 * generated run within their binomial bounds; the gamma knob setting the gaps' coefficient of
 * variation; constant gaps exact; length laws; the same seed, the same schedule.
 */
import { mean, median, standardDeviation } from 'simple-statistics';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../harness/core/random.js';
import { type ArrivalLaw, arrivalOffsetsMs } from '../../harness/load/traffic/arrivals.js';
import { drawLength, parseLengths } from '../../harness/load/traffic/lengths.js';
import { zipfShares } from '../../harness/load/traffic/popularity.js';
import { countsPerServer, generateSchedule, type TrafficPlan } from '../../harness/load/traffic/schedule.js';
import { binomialCdf } from '../../harness/stats/binomial.js';

const FIXED = { kind: 'fixed', tokens: 8 } as const;

/** A plan of `shares.length` servers at `totalPerS` requests/s in all, divided by `shares`. */
function plan(shares: number[], totalPerS: number, arrivals: ArrivalLaw = { kind: 'poisson' }, seed = 1): TrafficPlan {
  return {
    servers: shares.map((share, i) => ({ index: i + 1, ratePerS: share * totalPerS })),
    arrivals,
    inputTokens: FIXED,
    outputTokens: FIXED,
    seed,
  };
}

/**
 * The central interval holding a Binomial(n, p) count with probability ≥ `confidence`: the largest lo
 * with P(B < lo) ≤ (1 − confidence)/2 and the least hi with P(B > hi) ≤ (1 − confidence)/2.
 */
function binomialBounds(n: number, p: number, confidence: number): [number, number] {
  const tail = (1 - confidence) / 2;
  const cdf = binomialCdf(n, p, n);
  const lo = cdf.findIndex((c) => c > tail);
  const hi = cdf.findIndex((c) => c >= 1 - tail);
  return [lo, hi === -1 ? n : hi];
}

const gapsOf = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));

describe('zipfShares', () => {
  it('sum to 1 and decrease; s = 1 gives shares ∝ 1/i', () => {
    for (const s of [0.5, 1, 2]) {
      const shares = zipfShares(10, s);
      expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      for (const [i, x] of shares.slice(1).entries()) expect(x).toBeLessThan(shares[i] as number);
    }
    const one = zipfShares(4, 1);
    expect(one[0] as number).toBeCloseTo(1 / (1 + 1 / 2 + 1 / 3 + 1 / 4), 12);
    expect((one[0] as number) / (one[3] as number)).toBeCloseTo(4, 12);
  });

  it('s = 0 is uniform; one server takes everything', () => {
    expect(zipfShares(5, 0)).toEqual([0.2, 0.2, 0.2, 0.2, 0.2]);
    expect(zipfShares(1, 3)).toEqual([1]);
  });

  it('refuses n < 1 and a negative exponent', () => {
    expect(() => zipfShares(0, 1)).toThrow(RangeError);
    expect(() => zipfShares(3, -1)).toThrow(RangeError);
  });
});

describe('generateSchedule: counts per server', () => {
  // Given the total, independent Poisson servers' counts are multinomial: each Binomial(total, share).
  // 99.9% per server; the outcome is fixed by the seeds, and shares off by a tenth of themselves fail.
  it.each([1, 2, 3])(
    'Zipf s=1 over 8 servers, Poisson, seed %i: each count within its 99.9%% binomial bounds',
    (seed) => {
      const shares = zipfShares(8, 1);
      const schedule = generateSchedule(plan(shares, 200, { kind: 'poisson' }, seed), 60_000);
      const total = schedule.length;
      expect(Math.abs(total / 12_000 - 1)).toBeLessThan(0.04);
      const counts = countsPerServer(
        schedule,
        shares.map((_, i) => i + 1),
      );
      shares.forEach((share, i) => {
        const [lo, hi] = binomialBounds(total, share, 0.999);
        const count = counts.get(i + 1) as number;
        expect(count, `server ${i + 1}: ${count} of ${total} at share ${share.toFixed(4)}`).toBeGreaterThanOrEqual(lo);
        expect(count, `server ${i + 1}: ${count} of ${total} at share ${share.toFixed(4)}`).toBeLessThanOrEqual(hi);
      });
    },
  );

  it('the bounds reject shares off by a tenth: the test can fail', () => {
    const shares = zipfShares(8, 1);
    const schedule = generateSchedule(plan(shares, 200), 60_000);
    const count = countsPerServer(schedule, [1]).get(1) as number;
    const [lo, hi] = binomialBounds(schedule.length, (shares[0] as number) * 1.1, 0.999);
    expect(count < lo || count > hi).toBe(true);
  });

  it('the same seed, the same schedule; another seed, another; a server added leaves the others as they were', () => {
    const a = generateSchedule(plan([0.5, 0.5], 50, { kind: 'gamma', cv: 2 }), 10_000);
    expect(generateSchedule(plan([0.5, 0.5], 50, { kind: 'gamma', cv: 2 }), 10_000)).toEqual(a);
    expect(generateSchedule(plan([0.5, 0.5], 50, { kind: 'gamma', cv: 2 }, 2), 10_000)).not.toEqual(a);
    const three = generateSchedule(plan([0.5, 0.5, 0.3], 50, { kind: 'gamma', cv: 2 }), 10_000);
    expect(three.filter((x) => x.server !== 3)).toEqual(a);
    expect(a.every((x, i) => i === 0 || x.offsetMs >= (a[i - 1]?.offsetMs as number))).toBe(true);
  });
});

describe('arrivalOffsetsMs', () => {
  /** The coefficient of variation of the gaps of one server at 100/s over 200 s (~20 000 gaps). */
  const cvOf = (law: ArrivalLaw, seed: number) => {
    const gaps = gapsOf(arrivalOffsetsMs(law, 100, 200_000, mulberry32(seed)));
    expect(mean(gaps)).toBeGreaterThan(9.5);
    expect(mean(gaps)).toBeLessThan(10.5);
    return standardDeviation(gaps) / mean(gaps);
  };

  // The sample cv's standard error at 20 000 gaps: about 1% at cv 1, 2% at cv 2 (gamma's kurtosis
  // 3 + 6/k): the bounds are over 4 of them.
  it.each([1, 2, 3])("gamma, seed %i: the gaps' cv follows the knob (0.5, 1 = Poisson, 2, 4)", (seed) => {
    const half = cvOf({ kind: 'gamma', cv: 0.5 }, seed);
    const one = cvOf({ kind: 'gamma', cv: 1 }, seed);
    const two = cvOf({ kind: 'gamma', cv: 2 }, seed);
    const four = cvOf({ kind: 'gamma', cv: 4 }, seed);
    expect(half).toBeGreaterThan(0.47);
    expect(half).toBeLessThan(0.53);
    expect(one).toBeGreaterThan(0.95);
    expect(one).toBeLessThan(1.05);
    expect(two).toBeGreaterThan(1.84);
    expect(two).toBeLessThan(2.16);
    expect(four).toBeGreaterThan(3.2);
    expect(four).toBeLessThan(4.8);
    expect(cvOf({ kind: 'poisson' }, seed)).toBeGreaterThan(0.95);
    expect(cvOf({ kind: 'poisson' }, seed)).toBeLessThan(1.05);
  });

  it('constant: every gap exactly 1/rate, from a phase within the first gap, none at or past the duration', () => {
    const times = arrivalOffsetsMs({ kind: 'constant' }, 40, 1000, mulberry32(5));
    expect(times).toHaveLength(40);
    const first = times[0] as number;
    expect(first).toBeGreaterThanOrEqual(0);
    expect(first).toBeLessThan(25);
    expect(times).toEqual(Array.from({ length: 40 }, (_, i) => first + i * 25));
    expect(times.at(-1) as number).toBeLessThan(1000);
  });

  it('nothing at a rate or duration of 0', () => {
    expect(arrivalOffsetsMs({ kind: 'poisson' }, 0, 1000, mulberry32(1))).toEqual([]);
    expect(arrivalOffsetsMs({ kind: 'poisson' }, 10, 0, mulberry32(1))).toEqual([]);
  });
});

describe('drawLength', () => {
  const draws = (law: Parameters<typeof drawLength>[0], n = 20_000) => {
    const random = mulberry32(9);
    return Array.from({ length: n }, () => drawLength(law, random));
  };

  it('fixed; uniform covers min..max, both included, and nothing else', () => {
    expect(new Set(draws({ kind: 'fixed', tokens: 7 }, 100))).toEqual(new Set([7]));
    expect([...new Set(draws({ kind: 'uniform', min: 3, max: 6 }))].sort()).toEqual([3, 4, 5, 6]);
  });

  it('lognormal: the median as given, a right tail, clamped to 1..max', () => {
    const got = draws({ kind: 'lognormal', median: 200, sigma: 0.8, max: 100_000 });
    expect(median(got)).toBeGreaterThan(190);
    expect(median(got)).toBeLessThan(210);
    expect(mean(got)).toBeGreaterThan(median(got) * 1.2); // e^(σ²/2) ≈ 1.38
    const clamped = draws({ kind: 'lognormal', median: 200, sigma: 3, max: 1000 });
    expect(Math.max(...clamped)).toBe(1000);
    expect(Math.min(...clamped)).toBe(1);
  });

  it("empirical: only the file's lengths", () => {
    expect(new Set(draws({ kind: 'empirical', values: [5, 50, 500] }))).toEqual(new Set([5, 50, 500]));
  });

  it('parseLengths: comments and blanks skipped; the first bad line named', () => {
    expect(parseLengths('# lengths\n1\n\n 22 \n', 'l.txt')).toEqual({ values: [1, 22] });
    expect(parseLengths('1\n0\n', 'l.txt')).toEqual({
      problem: 'l.txt line 2: "0" is not a whole number of tokens ≥ 1',
    });
    expect(parseLengths('# none\n', 'l.txt')).toEqual({
      problem: 'l.txt holds no lengths: give one whole number ≥ 1 per line',
    });
  });
});
