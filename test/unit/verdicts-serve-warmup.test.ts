/**
 * The warm-up's stopping rule (serve/verdicts.ts warmupStop: a minimum time, Mann–Kendall over the last 5
 * windows' throughput and TTFT p50 at 10%, a maximum), its loop (serve/warmup.ts), and when a window's
 * p99 rests on enough requests (p99RestsOnEnough: 299, the binomial bound of stats/p99.ts).
 */
import { describe, expect, it } from 'vitest';
import type { WindowStats } from '../../harness/serve/record.js';
import {
  p99RestsOnEnough,
  WARMUP_TREND_ALPHA,
  WARMUP_TREND_WINDOWS,
  type WarmupPoint,
  warmupStop,
} from '../../harness/serve/verdicts.js';
import { warmUp, warmupWarning, warmupWindowMs } from '../../harness/serve/warmup.js';
import { requestsNeeded } from '../../harness/stats/p99.js';

const flat = (n: number): WarmupPoint[] =>
  // No trend: alternating around a level (S = 0 for throughput, and for TTFT p50).
  Array.from({ length: n }, (_, i) => ({ outputTokensPerS: 1000 + (i % 2) * 10 - 5, ttftP50Ms: 50 + (i % 2) }));
const falling = (n: number): WarmupPoint[] =>
  Array.from({ length: n }, (_, i) => ({ outputTokensPerS: 1000, ttftP50Ms: 100 - i }));
const rule = { minMs: 10_000, maxMs: 60_000 };

describe('warmupStop', () => {
  it('the constants as stated: 5 windows, 10%', () => {
    expect(WARMUP_TREND_WINDOWS).toBe(5);
    expect(WARMUP_TREND_ALPHA).toBe(0.1);
  });

  it.each([
    ['before the minimum, steady or not', flat(5), 9_999, null],
    ['at the minimum, steady', flat(5), 10_000, 'steady'],
    ['past the minimum with 4 windows: too few to test', flat(4), 20_000, null],
    ['past the minimum, TTFT p50 still falling', falling(5), 20_000, null],
    ['at the maximum, still falling', falling(8), 60_000, 'max'],
    ['just below the maximum, still falling', falling(8), 59_999, null],
    ['at the maximum with too few windows', flat(2), 60_000, 'max'],
  ])('%s: %s', (_, points, elapsedMs, stop) => {
    expect(warmupStop(points, elapsedMs, rule)?.stop ?? null).toBe(stop);
  });

  it('only the last 5 windows count: a fall before them is over', () => {
    expect(warmupStop([...falling(5), ...flat(5)], 20_000, rule)?.stop).toBe('steady');
    expect(warmupStop([...flat(5), ...falling(5)], 20_000, rule)).toBeNull();
  });

  it('a trend at p = 10/120 < 10% goes on; at p = 14/120 ≥ 10% it is steady', () => {
    // Throughput rising with one swap (S = 8, p = 0.083) against two swaps (S = 6, p = 0.117); TTFT p50 flat.
    const with_ = (tps: number[]) => tps.map((t, i) => ({ outputTokensPerS: t, ttftP50Ms: 50 + (i % 2) }));
    expect(warmupStop(with_([1, 3, 2, 4, 5]), 20_000, rule)).toBeNull();
    expect(warmupStop(with_([2, 3, 1, 4, 5]), 20_000, rule)).toMatchObject({ stop: 'steady' });
  });

  it('a window without a TTFT p50 is no steady state', () => {
    const points = flat(5);
    points[4] = { outputTokensPerS: 1000, ttftP50Ms: null };
    expect(warmupStop(points, 20_000, rule)).toBeNull();
  });

  it('--warmup-s 0: one window, no test', () => {
    expect(warmupStop(falling(1), 0, { minMs: 0, maxMs: 60_000 })).toEqual({ stop: 'one window', trend: null });
  });
});

describe('warmUp: windows until the rule stops them', () => {
  const stats = (p: WarmupPoint) =>
    ({ outputTokensPerS: p.outputTokensPerS, ttft: { p50Ms: p.ttftP50Ms } }) as unknown as WindowStats;

  it('runs a cold server until its TTFT stops falling, and records why', async () => {
    // 2 s windows: TTFT falls for 6 windows, then holds.
    const series = [...falling(6), ...flat(20)];
    let clock = 0;
    const result = await warmUp(
      'shared',
      rule,
      async (i) => {
        clock += 2000;
        return { stats: stats(series[i] as WarmupPoint), problem: null };
      },
      () => clock,
    );
    expect(result.warmup).toMatchObject({ arm: 'shared', stop: 'steady' });
    // Not before the fall has left the last 5 windows' trend: more than the 10 s minimum.
    expect(result.warmup?.windows).toBeGreaterThan(5);
    expect(result.warmup?.durationMs).toBe(2000 * (result.warmup?.windows ?? 0));
    expect(result.warmup?.points).toHaveLength(result.warmup?.windows ?? 0);
    expect(warmupWarning('mps x2', result.warmup as never)).toBeNull();
  });

  it('stops at the maximum with a warning naming the trend', async () => {
    let clock = 0;
    const result = await warmUp(
      'dedicated',
      rule,
      async (i) => {
        clock += 2000;
        return { stats: stats({ outputTokensPerS: 1000 + i, ttftP50Ms: 50 }), problem: null };
      },
      () => clock,
    );
    expect(result.warmup).toMatchObject({ stop: 'max', windows: 30, durationMs: 60_000 });
    expect(warmupWarning('mps x2', result.warmup as never)).toMatch(
      /^mps x2, dedicated arm: warm-up stopped at its maximum \(60\.0 s, 30 windows\) with a trend in the last windows' throughput \(Mann–Kendall p 0\.017, 1\.000\)/,
    );
  });

  it('a window that failed ends it with its problem', async () => {
    const result = await warmUp(
      'step',
      rule,
      async () => ({ stats: null, problem: 'boom' }),
      () => 0,
    );
    expect(result).toEqual({ warmup: null, problem: 'boom' });
  });

  it('warm-up windows last the run window, at most 2 s', () => {
    expect(warmupWindowMs(200)).toBe(200);
    expect(warmupWindowMs(5000)).toBe(2000);
  });
});

describe('p99RestsOnEnough: a window p99 is claimed alone from 299 values', () => {
  it.each([
    [298, false],
    [299, true],
    [0, false],
  ])('%d values: %s', (n, enough) => {
    expect(requestsNeeded(0)).toBe(299);
    expect(p99RestsOnEnough(n)).toBe(enough);
  });
});
