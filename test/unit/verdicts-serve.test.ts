/**
 * A server run's decisions at their boundaries (serve/verdicts.ts): the SLO's accounting of a window
 * (a failed request counts over the TTFT target), which groups the plan may name (never one with a
 * failed request), whether a window or group measured anything, and whether its token counts hold.
 */
import { describe, expect, it } from 'vitest';
import type { RequestOutcome, RequestRecord } from '../../harness/load/request.js';
import type { WindowStats } from '../../harness/serve/record.js';
import {
  groupMeasuredNothing,
  groupTokenMismatch,
  MISCOUNTED_MAX_SHARE,
  nothingMeasured,
  plannable,
  sloCounts,
} from '../../harness/serve/verdicts.js';

const request = (outcome: RequestOutcome, ttftMs: number | null, itlMs: number[] = []): RequestRecord => ({
  outcome,
  detail: outcome === 'ok' ? null : 'boom',
  status: outcome === 'ok' ? 200 : null,
  scheduledMs: 0,
  sentMs: 0,
  ttftMs,
  itlMs,
  e2eMs: 100,
  outputTokens: itlMs.length + (ttftMs === null ? 0 : 1),
  textChunks: itlMs.length + (ttftMs === null ? 0 : 1),
  usageTokens: null,
  requestedTokens: 16,
});

describe('sloCounts: the SLO accounting of a window (target 100 ms, gaps up to 10 ms)', () => {
  const slo = { ttftP99Ms: 100, itlMaxMs: 10 };
  it.each([
    ['an ok request at the target is within it', [request('ok', 100, [10])], { ok: 1, good: 1, overTtft: 0 }],
    ['an ok request just over the target is over it', [request('ok', 100.001)], { ok: 1, good: 0, overTtft: 1 }],
    ['an ok request with no token is over the target', [request('ok', null)], { ok: 1, good: 0, overTtft: 1 }],
    [
      'a failed request counts over the TTFT target, and not good',
      [request('cut', 5)],
      { ok: 0, good: 0, overTtft: 1 },
    ],
    ['a timed-out request without a token too', [request('timeout', null)], { ok: 0, good: 0, overTtft: 1 }],
    [
      'a gap over the ITL limit is not good, though within the TTFT target',
      [request('ok', 50, [10.001])],
      { ok: 1, good: 0, overTtft: 0 },
    ],
    [
      'one failed among fast ones: one over',
      [request('ok', 1), request('ok', 2), request('http-error', null)],
      { ok: 2, good: 2, overTtft: 1 },
    ],
  ])('%s', (_name, records, counts) => {
    expect(sloCounts(records, slo)).toEqual(counts);
  });
  it('the ITL limit applies per token: a gap before a chunk of 2 tokens is halved', () => {
    // Two text chunks 20 ms apart, usage 4: 2 tokens per chunk, so the gap is 10 ms per token.
    const twoPerChunk = (gapMs: number): RequestRecord => ({
      ...request('ok', 50, [gapMs]),
      outputTokens: 4,
      usageTokens: 4,
    });
    expect(sloCounts([twoPerChunk(20)], slo)).toEqual({ ok: 1, good: 1, overTtft: 0 });
    expect(sloCounts([twoPerChunk(20.002)], slo)).toEqual({ ok: 1, good: 0, overTtft: 0 });
  });
  it('without an ITL limit, any gap is good', () => {
    expect(sloCounts([request('ok', 50, [1e6])], { ttftP99Ms: 100, itlMaxMs: null })).toEqual({
      ok: 1,
      good: 1,
      overTtft: 0,
    });
  });
});

describe('plannable: the groups the plan may name', () => {
  const slo = (verdict: 'holds' | 'fails' | 'too few requests') => ({ verdict, requests: 1000, over: 0 });
  const tps = { value: 1000, ci: null, n: 6 };
  it.each([
    ['holds, no failed request, a throughput', slo('holds'), 0, tps, true],
    ['holds but one request failed', slo('holds'), 1, tps, false],
    ['fails the SLO', slo('fails'), 0, tps, false],
    ['too few requests for a verdict', slo('too few requests'), 0, tps, false],
    ['no SLO (no request)', null, 0, tps, false],
    ['no throughput to rank it by', slo('holds'), 0, { value: null, ci: null, n: 0 }, false],
    ['no throughput estimate at all', slo('holds'), 0, null, false],
  ])('%s: %s', (_name, s, failedRequests, tokensPerS, expected) => {
    expect(plannable({ slo: s, failedRequests, tokensPerS })).toBe(expected);
  });
});

describe('nothingMeasured and groupMeasuredNothing', () => {
  const w = (requests: number, ok: number, ttftCount: number, failures: string[] = []) =>
    ({ requests, ok, failures, ttft: { count: ttftCount, p50Ms: null, p99Ms: null, histogram: '' } }) as Pick<
      WindowStats,
      'requests' | 'ok' | 'failures' | 'ttft'
    >;
  it.each([
    ['no request sent', w(0, 0, 0), 'no request was sent'],
    ['none ok, failures named', w(3, 0, 0, ['cut: x']), 'none of 3 requests ended ok (cut: x)'],
    ['none ok, none recorded', w(3, 0, 0), 'none of 3 requests ended ok (no failure recorded)'],
    ['ok but no token', w(3, 2, 0), 'all 2 requests that ended ok carried no output token'],
    ['one ok with a token', w(3, 1, 1), null],
  ])('%s', (_name, window, expected) => {
    expect(nothingMeasured(window)).toBe(expected);
  });
  const full = (ok: number) => ({ ...w(4, ok, ok) }) as unknown as WindowStats;
  it('a round with either arm measuring nothing names the round and arm', () => {
    const rounds = [
      { dedicated: full(4), shared: full(4) },
      { dedicated: full(4), shared: full(0) },
    ];
    expect(groupMeasuredNothing({ rounds, steps: [] })).toBe(
      'round 2, the shared window measured nothing: none of 4 requests ended ok (no failure recorded)',
    );
    expect(groupMeasuredNothing({ rounds: [{ dedicated: full(0), shared: full(4) }], steps: [] })).toMatch(
      /^round 1, the dedicated window/,
    );
    expect(groupMeasuredNothing({ rounds: rounds.slice(0, 1), steps: [] })).toBeNull();
  });
  it('a rate search measured nothing only when no step did', () => {
    const step = (ratePerS: number, ok: number) =>
      ({ totalRatePerS: ratePerS, window: full(ok), verdict: 'fail', reason: '' }) as never;
    expect(groupMeasuredNothing({ rounds: [], steps: [step(8, 0), step(4, 0)] })).toBe(
      'no step of the rate search measured anything: at 8 req/s, none of 4 requests ended ok (no failure recorded)',
    );
    expect(groupMeasuredNothing({ rounds: [], steps: [step(8, 4), step(16, 0)] })).toBeNull();
    expect(groupMeasuredNothing({ rounds: [], steps: [] })).toBeNull();
  });
});

describe('groupTokenMismatch: a group fails when its usage is below its chunks in over 1% of ok requests', () => {
  const tokens = (miscounted: number) => ({ withUsage: 100, multiToken: 0, miscounted, short: 0 });
  const w = (ok: number, miscounted: number | null) =>
    ({ ok, ...(miscounted === null ? {} : { tokens: tokens(miscounted) }) }) as unknown as WindowStats;
  const group = (...windows: WindowStats[]) => ({
    rounds:
      windows.slice(0, 2).length === 2
        ? [{ dedicated: windows[0] as WindowStats, shared: windows[1] as WindowStats }]
        : [],
    steps: windows.slice(2).map((window) => ({ totalRatePerS: 1, window, verdict: 'pass' as const, reason: '' })),
  });
  it('allows 1%', () => expect(MISCOUNTED_MAX_SHARE).toBe(0.01));
  it.each([
    ['none miscounted', [w(100, 0), w(100, 0)], null],
    ['exactly 1% (2 of 200)', [w(100, 1), w(100, 1)], null],
    [
      'just over 1% (3 of 200)',
      [w(100, 2), w(100, 1)],
      "the server's usage counted fewer tokens than the text chunks it streamed in 3 of 200 requests that ended ok (over the 1% allowed)",
    ],
    ['one of 99 (1.01%)', [w(50, 1), w(49, 0)], 'in 1 of 99 requests that ended ok'],
    ['pooled with the steps: 3 of 300', [w(100, 1), w(100, 1), w(100, 1)], null],
    ['counted in a step too: 4 of 300', [w(100, 1), w(100, 1), w(100, 2)], 'in 4 of 300 requests'],
    ['a record from before the accounting (no tokens field) is clean', [w(100, null), w(100, null)], null],
    ['miscounts with no request ok (an edited record) still fail', [w(0, 1), w(0, 0)], 'in 1 of 0 requests'],
  ])('%s', (_name, windows, expected) => {
    const why = groupTokenMismatch(group(...windows));
    if (expected === null) expect(why).toBeNull();
    else expect(why).toContain(expected);
  });
});
