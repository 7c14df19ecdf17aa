/**
 * A request's tokens against its stream (load/tokens.ts) and a window's use of them (serve/window.ts):
 * a chunk of k tokens spreads its gap over them (ITL per token), tokens/s takes the server's usage
 * count where it sent one, and the window records how usage, text chunks and max_tokens agreed.
 */
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../harness/load/request.js';
import { summarize } from '../../harness/load/run.js';
import { countedTokens, tokenAccounting, tokenGapsMs, tokensPerChunk } from '../../harness/load/tokens.js';
import { windowStats } from '../../harness/serve/window.js';

/** An ok request: its first text chunk at 10 ms, then one per gap. */
const request = (itlMs: number[], usageTokens: number | null, requestedTokens = 8): RequestRecord => {
  const textChunks = itlMs.length + 1;
  return {
    outcome: 'ok',
    detail: null,
    status: 200,
    scheduledMs: 0,
    sentMs: 0,
    ttftMs: 10,
    itlMs,
    e2eMs: 10 + itlMs.reduce((a, b) => a + b, 0),
    outputTokens: usageTokens ?? textChunks,
    textChunks,
    usageTokens,
    requestedTokens,
  };
};

describe('tokensPerChunk and tokenGapsMs: a chunk of k tokens spreads its gap over them', () => {
  it.each([
    ['no usage: one token per chunk, the gaps as measured', request([20, 30], null), 1, [20, 30]],
    ['usage equal to the chunks: the gaps as measured', request([20, 30], 3), 1, [20, 30]],
    ['usage twice the chunks: each gap halved', request([20, 30], 6), 2, [10, 15]],
    ['usage 4 over 3 chunks: each gap × 3/4', request([20, 40], 4), 4 / 3, [15, 30]],
    ['usage below the chunks (a miscount): the gaps as measured', request([20, 30], 2), 1, [20, 30]],
  ])('%s', (_name, r, k, gaps) => {
    expect(tokensPerChunk(r)).toBeCloseTo(k, 12);
    expect(tokenGapsMs(r).map((gap) => Math.round(gap * 1e6) / 1e6)).toEqual(gaps);
  });
  it('no usage, finish_reason "length" and fewer chunks than max_tokens: max_tokens counted (boundaries)', () => {
    const r = { textChunks: 4, usageTokens: null, requestedTokens: 8 };
    expect(countedTokens({ ...r, finishReason: 'length' })).toBe(8);
    expect(tokensPerChunk({ ...r, finishReason: 'length' })).toBe(2);
    expect(countedTokens({ ...r, finishReason: 'stop' })).toBeNull();
    expect(countedTokens({ ...r, finishReason: null })).toBeNull();
    expect(countedTokens({ ...r, requestedTokens: 4, finishReason: 'length' })).toBeNull();
    expect(countedTokens({ ...r, usageTokens: 6, finishReason: 'length' })).toBe(6);
    expect(tokenAccounting([{ ...request([5, 5, 5], null), finishReason: 'length', outputTokens: 8 }])).toMatchObject({
      fromLength: 1,
      short: 0,
    });
  });
  it('a request with usage but no text chunk has one token per chunk (there is no gap to divide)', () => {
    expect(tokensPerChunk({ textChunks: 0, usageTokens: 5 })).toBe(1);
  });
});

describe('tokenAccounting: how the counts of the requests that ended ok agreed', () => {
  it('counts usage sent, more tokens than chunks, fewer, and short of max_tokens; failed requests not at all', () => {
    const cut: RequestRecord = { ...request([5], 1), outcome: 'cut' };
    const records = [
      request([5, 5], null), // 3 chunks, no usage, short of 8
      request(Array(7).fill(5), 8), // 8 = 8: agrees, not short
      request([5, 5, 5], 8), // 4 chunks carrying 8: multi-token
      request([5, 5, 5], 3), // 4 chunks, usage 3: miscounted, short
      cut,
    ];
    expect(tokenAccounting(records)).toEqual({ withUsage: 3, multiToken: 1, miscounted: 1, short: 2, fromLength: 0 });
  });
});

describe('windowStats: tokens/s from usage, ITL per token', () => {
  const run = (records: RequestRecord[], durationMs: number) => ({
    ...summarize({ kind: 'closed', concurrency: 1 }, durationMs, durationMs, records),
    startMs: 0,
  });
  const slo = { ttftP99Ms: 1000, itlMaxMs: null };
  const load = { concurrency: 1, ratePerS: null };
  it('a request whose 4 chunks carried usage 8 counts 8 tokens, its gaps halved', () => {
    const w = windowStats([run([request([20, 20, 20], 8)], 1000)], slo, load, 0);
    expect(w.outputTokens).toBe(8);
    expect(w.itl).toMatchObject({ count: 3 });
    expect(w.itl.p50Ms).toBeCloseTo(10, 1);
    expect(w.tokens).toEqual({ withUsage: 1, multiToken: 1, miscounted: 0, short: 0, fromLength: 0 });
  });
  it('only the share of its chunks within the window: 2 of 4 chunks in it, half of usage 8', () => {
    // Chunks at 10, 30, 50, 70 ms; the window ends at 30 ms.
    const w = windowStats([run([request([20, 20, 20], 8)], 30)], slo, load, 0);
    expect(w.outputTokens).toBe(4);
  });
  it('without usage, the text chunks', () => {
    const w = windowStats([run([request([20, 20, 20], null)], 1000)], slo, load, 0);
    expect(w.outputTokens).toBe(4);
    expect(w.itl.p50Ms).toBeCloseTo(20, 1);
  });
});
