/** mix's pure parts: the quantile intervals, overloaded windows, the mean interval and the claims' grading. */
import { describe, expect, it } from 'vitest';
import { type Cell, LEGACY_GREEN_ALONE, mixCells } from '../../harness/mix/analysis.js';
import { mixClaims } from '../../harness/mix/claims.js';
import type { MixRun, MixWindow, VictimWindow } from '../../harness/mix/record.js';
import { mostKept, overloadOf, type Protection, protectionFor } from '../../harness/mix/verdicts.js';
import { meanInterval } from '../../harness/stats/intervals.js';
import { quantileRanks, requestsForInterval } from '../../harness/stats/quantile.js';
import { encodeLatencies } from '../../harness/workload/open-loop.js';

/** P(B ≤ k) for B ~ Binomial(n, q), summed directly in logs (independent of the code under test). */
function cdf(n: number, q: number, k: number): number {
  let logC = 0;
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    if (i > 0) logC += Math.log(n - i + 1) - Math.log(i);
    sum += Math.exp(logC + i * Math.log(q) + (n - i) * Math.log1p(-q));
  }
  return sum;
}

describe("a quantile's interval from order statistics", () => {
  it.each([
    [1000, 0.99],
    [2400, 0.99],
    [800, 0.5],
  ])('n=%i, q=%f: [x(l), x(u)] covers at least 97.5%, and is the narrowest that does', (n, q) => {
    const [lo, hi] = quantileRanks(n, q);
    expect(lo).not.toBeNull();
    expect(hi).not.toBeNull();
    const cover = (l: number, u: number) => cdf(n, q, u - 1) - cdf(n, q, l - 1);
    expect(cover(lo as number, hi as number)).toBeGreaterThanOrEqual(0.975);
    // One rank tighter on either side loses half its tail: below 97.5% + its share.
    expect(cdf(n, q, (lo as number) - 1)).toBeLessThanOrEqual(0.0125);
    expect(cdf(n, q, lo as number)).toBeGreaterThan(0.0125);
    expect(cdf(n, q, (hi as number) - 2)).toBeLessThan(0.9875);
  });

  it('has no upper bound for a p99 below the requests it needs, which the report states', () => {
    const needed = requestsForInterval(0.99);
    expect(quantileRanks(needed, 0.99)[1]).not.toBeNull();
    expect(quantileRanks(needed - 1, 0.99)[1]).toBeNull();
    expect(needed).toBe(437);
  });
});

const victim = (over: Partial<VictimWindow> = {}): VictimWindow => ({
  offeredQps: 1000,
  windowS: 1,
  requests: 1000,
  dropped: 0,
  unreported: 0,
  scheduleLagMs: 0,
  histogram: '',
  firstQuarterP50Ms: 1,
  lastQuarterP50Ms: 1.2,
  ...over,
});

const window = (over: Partial<MixWindow>): MixWindow => ({
  mode: 'mps',
  round: 0,
  arm: 'together',
  aggressor: 'compute',
  threadPct: null,
  load: 0.5,
  victimResult: null,
  aggressorResult: null,
  partnerResult: null,
  invalid: null,
  ...over,
});

describe('a victim that did not keep up', () => {
  it.each([
    [{}, null],
    [{ dropped: 3 }, '3 requests never served'],
    [{ requests: 850 }, 'served 850 of 1000 requests offered'],
    [{ lastQuarterP50Ms: 2.5 }, 'its latency climbed through the window'],
  ] as const)('%j → %s', (over, why) => {
    const said = overloadOf(window({ victimResult: victim(over) }));
    if (why === null) expect(said).toBeNull();
    else expect(said).toContain(why);
  });
});

describe('the mean over rounds', () => {
  it('has a Student-t interval (t = 4.303 at 2 degrees of freedom), none from one round', () => {
    const m = meanInterval([0.6, 0.7, 0.8]);
    expect(m?.value).toBeCloseTo(0.7, 12);
    // sd 0.1, n 3: half-width 4.303 × 0.1 / √3.
    expect(m?.ci?.[1]).toBeCloseTo(0.7 + (4.303 * 0.1) / Math.sqrt(3), 9);
    expect(meanInterval([0.6])?.ci).toBeNull();
  });

  it('never reaches below 0: a throughput ratio cannot be negative (three far-apart rounds of an eager aggressor did)', () => {
    const m = meanInterval([0.1, 1.9, 1.0]);
    expect(m?.ci?.[0]).toBe(0);
    expect(m?.ci?.[1]).toBeCloseTo(1.0 + (4.303 * 0.9) / Math.sqrt(3), 9);
  });
});

describe('the mixed-tenant claims', () => {
  /** A run of the pair arm only: compute alone 1000 it/s and bandwidth 500 in each mode, `together` kept per round. */
  function pairRun(kept: Record<'timeslice' | 'mps', number[]>): MixRun {
    const windows = (['timeslice', 'mps'] as const).flatMap((mode) =>
      kept[mode].flatMap((k, round) => [
        window({
          mode,
          round,
          arm: 'aggressor-alone',
          aggressor: 'compute',
          load: null,
          aggressorResult: { iterations: 1000, windowS: 1 },
        }),
        window({
          mode,
          round,
          arm: 'aggressor-alone',
          aggressor: 'bandwidth',
          load: null,
          aggressorResult: { iterations: 500, windowS: 1 },
        }),
        window({
          mode,
          round,
          arm: 'pair',
          load: null,
          aggressorResult: { iterations: Math.round(1000 * k), windowS: 1 },
          partnerResult: { iterations: Math.round(500 * k), windowS: 1 },
        }),
      ]),
    );
    const settings = { modes: ['timeslice', 'mps'], threadPcts: [], loads: [0.5], aggressors: [], rounds: 3 };
    return { settings, windows, outcomes: [], status: 'complete', current: null } as unknown as MixRun;
  }
  const interleave = (run: MixRun) => mixClaims(run, []).find((c) => c.id === 'mps-interleaves');

  it('MPS interleaving holds when the pair keeps more together under MPS than time-sliced, above 1', () => {
    expect(interleave(pairRun({ timeslice: [0.5, 0.51, 0.49], mps: [0.8, 0.82, 0.78] }))?.verdict).toBe('holds');
  });

  it('does not hold when MPS keeps no more than time-slicing', () => {
    expect(interleave(pairRun({ timeslice: [0.5, 0.51, 0.49], mps: [0.45, 0.46, 0.44] }))?.verdict).toBe(
      'does not hold',
    );
  });

  it('is inconclusive when the intervals overlap, and not measured without the pair', () => {
    expect(interleave(pairRun({ timeslice: [0.5, 0.7, 0.6], mps: [0.55, 0.8, 0.6] }))?.verdict).toBe('inconclusive');
    expect(interleave(pairRun({ timeslice: [], mps: [] }))?.verdict).toBe('not measured');
  });

  it('decides only where the intervals separate: touching is the same here, just apart is not', () => {
    // Every round alike: each interval is one point, aggregate 2k (compute's k plus bandwidth's k).
    const touching = interleave(pairRun({ timeslice: [0.5, 0.5, 0.5], mps: [0.5, 0.5, 0.5] }));
    expect(touching?.verdict).toBe('inconclusive');
    expect(touching?.measured).toContain(
      ': measured the same here (the intervals overlap), so neither holds nor fails',
    );
    // MPS 1.004 (502 and 251 iterations of 1000 and 500) against 1.000: apart, and above 1.
    expect(interleave(pairRun({ timeslice: [0.5, 0.5, 0.5], mps: [0.502, 0.502, 0.502] }))?.verdict).toBe('holds');
    expect(interleave(pairRun({ timeslice: [0.502, 0.502, 0.502], mps: [0.5, 0.5, 0.5] }))?.verdict).toBe(
      'does not hold',
    );
  });
});

describe("the protection search's choice among the settings that hold", () => {
  const at = (threadPct: number | null, value: number, ci: [number, number] | null) =>
    ({ threadPct, kept: { value, ci, rounds: 3 } }) as unknown as Cell;
  const pick = (cells: Cell[]) => {
    const { best, same } = mostKept(cells);
    return { best: best.threadPct, same: same.map((c) => c.threadPct) };
  };

  it.each([
    {
      case: 'separated: the most kept, though capped lower',
      cells: [at(50, 0.7, [0.5, 0.94]), at(25, 0.97, [0.95, 1.0])],
      want: { best: 25, same: [25] },
    },
    {
      case: 'just touching: the same here, the least restrictive',
      cells: [at(50, 0.7, [0.5, 0.95]), at(25, 0.97, [0.95, 1.0])],
      want: { best: 50, same: [50, 25] },
    },
    {
      case: 'uncapped counts as 100%',
      cells: [at(null, 0.9, [0.6, 1.2]), at(50, 0.95, [0.8, 1.1]), at(10, 0.3, [0.2, 0.4])],
      want: { best: null, same: [null, 50] },
    },
    {
      case: 'no interval cannot be told apart',
      cells: [at(50, 0.5, null), at(25, 0.97, [0.95, 1.0])],
      want: { best: 50, same: [50, 25] },
    },
  ])('$case', ({ cells, want }) => {
    expect(pick(cells)).toEqual(want);
  });
});

describe('the cap carried into deployment files', () => {
  const p = (load: number, threadPct: number | null) => ({ aggressor: 'compute', load, threadPct }) as Protection;
  it('the lowest cap of the loads where one held, up to the first load where none did', () => {
    expect(protectionFor([p(0.5, null), p(0.25, 50)], 'compute')).toEqual({
      threadPct: 50,
      upToLoad: 0.25,
      failedAtLoad: 0.5,
    });
    expect(protectionFor([p(0.25, 50), p(0.5, 10)], 'compute')).toEqual({
      threadPct: 10,
      upToLoad: 0.5,
      failedAtLoad: null,
    });
    expect(protectionFor([p(0.25, null), p(0.5, 10)], 'compute')).toEqual({
      threadPct: null,
      upToLoad: null,
      failedAtLoad: 0.25,
    });
  });
});

describe("green's victim alone", () => {
  /** Green rounds of the victim alone and beside compute, 1 ms alone and 2 ms beside; `wholeGpu` on the alone windows. */
  function greenRun(wholeGpu: boolean): MixRun {
    const lat = (ms: number) => victim({ histogram: encodeLatencies(Array.from({ length: 1000 }, () => ms)) });
    const windows = [0, 1, 2].flatMap((round) => [
      window({
        mode: 'green',
        round,
        arm: 'victim-alone',
        aggressor: null,
        victimResult: lat(1),
        ...(wholeGpu ? { wholeGpu: true as const } : {}),
      }),
      window({ mode: 'green', round, arm: 'together', victimResult: lat(2) }),
    ]);
    const settings = { modes: ['green'], threadPcts: [], loads: [0.5], aggressors: [{ name: 'compute' }], rounds: 3 };
    return { settings, windows, outcomes: [], status: 'complete', current: null } as unknown as MixRun;
  }

  it('is on the whole GPU since 2026-11-27; a record from before says its alone ran in its slice', () => {
    const [whole] = mixCells(greenRun(true));
    const [inSlice] = mixCells(greenRun(false));
    expect(whole?.status).toBe('measured');
    expect(whole?.reason ?? null).toBeNull();
    expect(inSlice?.reason).toBe(LEGACY_GREEN_ALONE);
  });
});
