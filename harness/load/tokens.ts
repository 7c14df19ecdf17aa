/**
 * A request's tokens set against its stream: how many each text chunk carried, its per-token gaps (ITL),
 * and whether its three counts agree: the server's `usage.completion_tokens`, the text chunks seen and
 * the max_tokens asked.
 */
import type { RequestRecord } from './request.js';

type Counts = Pick<RequestRecord, 'textChunks' | 'usageTokens'> &
  Partial<Pick<RequestRecord, 'requestedTokens' | 'finishReason'>>;

/**
 * The request's output tokens as the server stated them: its usage count; else, where it ended with
 * finish_reason "length" (it stopped at max_tokens) having sent fewer text chunks than asked, max_tokens
 * (KoboldCpp sends no usage and several tokens a chunk); else null (count the text chunks).
 */
export function countedTokens(r: Counts): number | null {
  if (r.usageTokens !== null) return r.usageTokens;
  const asked = r.requestedTokens;
  return r.finishReason === 'length' && asked !== undefined && asked > r.textChunks ? asked : null;
}

/**
 * Tokens per text chunk: the counted tokens (usage, or max_tokens at a "length" finish: countedTokens) ÷
 * text chunks where they are more than the text chunks it sent
 * text chunks (chunks carrying several tokens: speculative decoding, a detokenizer holding back part of
 * a character or a stop string), else 1. Which chunk carried how many is not in the stream, so each is
 * taken to carry the mean. Usage below the text chunks is a miscount (every text chunk carries at
 * least one token), not a reason to shrink anything: 1.
 */
export function tokensPerChunk(r: Counts): number {
  const tokens = countedTokens(r);
  return tokens !== null && r.textChunks > 0 && tokens > r.textChunks ? tokens / r.textChunks : 1;
}

/**
 * The request's inter-token latencies, ms: each gap between successive text chunks divided by the tokens
 * per chunk, one value per gap. A chunk of k tokens after a gap g is k tokens g ÷ k apart (they were
 * generated in that time; the stream only shows them together). With one token per chunk, the gaps as
 * measured.
 */
export function tokenGapsMs(r: Counts & Pick<RequestRecord, 'itlMs'>): number[] {
  const k = tokensPerChunk(r);
  return k === 1 ? r.itlMs : r.itlMs.map((gap) => gap / k);
}

/** How the token counts of a window's requests that ended ok agreed; each a number of requests. */
export interface TokenAccounting {
  /** Sent usage.completion_tokens. */
  withUsage: number;
  /** Usage above the text chunks: chunks carrying several tokens (their gaps divided, see tokenGapsMs). */
  multiToken: number;
  /** Usage below the text chunks: the server's count disagrees with its own stream. */
  miscounted: number;
  /** Fewer tokens than max_tokens: the engine stopped (end of sequence, a stop string); no failure. */
  short: number;
  /** No usage, fewer text chunks than max_tokens and finish_reason "length": counted as max_tokens (countedTokens). */
  fromLength?: number;
}

/** The token accounting of `records` (the ones that ended ok: a failed request's counts are partial). */
export function tokenAccounting(records: readonly RequestRecord[]): TokenAccounting {
  const ok = records.filter((r) => r.outcome === 'ok');
  const withUsage = ok.filter((r) => r.usageTokens !== null);
  return {
    withUsage: withUsage.length,
    multiToken: withUsage.filter((r) => (r.usageTokens as number) > r.textChunks).length,
    miscounted: withUsage.filter((r) => (r.usageTokens as number) < r.textChunks).length,
    short: ok.filter((r) => r.outputTokens < r.requestedTokens).length,
    fromLength: ok.filter((r) => r.usageTokens === null && countedTokens(r) !== null).length,
  };
}
