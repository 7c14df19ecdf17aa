/**
 * One streamed request to an OpenAI-compatible server over Node's `http`: POST with `stream: true`,
 * `max_tokens` and a synthetic prompt, timed from the moment it was *scheduled* (not sent), so a
 * generator running late or a server queueing shows in the latency. Every failure is an outcome.
 */
import http from 'node:http';
import { SseParser } from './sse.js';
import { countedTokens } from './tokens.js';

export type RequestOutcome = 'ok' | 'http-error' | 'timeout' | 'malformed' | 'cut' | 'refused' | 'overlong';
export const REQUEST_OUTCOMES: readonly RequestOutcome[] = [
  'ok',
  'http-error',
  'timeout',
  'malformed',
  'cut',
  'refused',
  'overlong',
];

export interface RequestSpec {
  /** e.g. http://127.0.0.1:8000 (the API path is added). */
  baseUrl: string;
  api: 'completions' | 'chat';
  model: string;
  /** The prompt's length, in words: about one token each for common tokenizers (synthetic, not exact). */
  inputTokens: number;
  maxTokens: number;
  timeoutMs: number;
  /**
   * Put first in the prompt, once per request: no two prompts share a prefix, so an engine's prefix
   * cache (vLLM's automatic prefix caching, SGLang's radix cache) cannot skip a prefill the load meant.
   */
  uniqueId?: string;
}

export interface RequestRecord {
  outcome: RequestOutcome;
  /** What went wrong, one line (the HTTP status, the parser's reason, the socket error). */
  detail: string | null;
  status: number | null;
  /** When it should have been sent, when it was, ms on the run's clock. */
  scheduledMs: number;
  sentMs: number;
  /** Time to first token from the scheduled time, ms; null when no token came. */
  ttftMs: number | null;
  /**
   * The gaps between successive text chunks, ms (chunks that came in one read share its time). A chunk
   * may carry several tokens: load/tokens.ts turns these into per-token gaps.
   */
  itlMs: number[];
  /** From the scheduled time to the end of the response (or the failure), ms. */
  e2eMs: number;
  /** The server's usage count when it sent one (and the request ended ok), else the text chunks. */
  outputTokens: number;
  /** Chunks that carried text. */
  textChunks: number;
  /** The server's `usage.completion_tokens`, or null when it sent none. */
  usageTokens: number | null;
  /** max_tokens as asked. */
  requestedTokens: number;
  /** The prompt's length in words, as sent; absent from records made before it was kept. */
  inputTokens?: number;
  /** The last finish_reason the stream carried ("length", "stop"), or null; absent from records made before it was kept. */
  finishReason?: string | null;
}

/** The synthetic prompt: `inputTokens` short words, the first `uniqueId` when given. */
export function syntheticPrompt(inputTokens: number, uniqueId?: string): string {
  const words: string[] = Array.from({ length: Math.max(1, inputTokens) }, (_, i) => (i % 2 === 0 ? 'hello' : 'world'));
  if (uniqueId !== undefined) words[0] = uniqueId;
  return words.join(' ');
}

export function requestBody(spec: RequestSpec): string {
  const prompt = syntheticPrompt(spec.inputTokens, spec.uniqueId);
  const common = {
    model: spec.model,
    max_tokens: spec.maxTokens,
    stream: true,
    // Ask for the server's own token count (vLLM, SGLang); servers that ignore it are counted by chunk.
    stream_options: { include_usage: true },
  };
  return JSON.stringify(
    spec.api === 'chat' ? { ...common, messages: [{ role: 'user', content: prompt }] } : { ...common, prompt },
  );
}

const REFUSED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'EADDRNOTAVAIL']);

/**
 * Sends one request now and resolves with its record (never rejects). `scheduledMs` and `now` share a
 * clock (ms); `agent` keeps connections alive across a run's requests.
 */
export function sendRequest(
  spec: RequestSpec,
  scheduledMs: number,
  now: () => number,
  agent?: http.Agent,
): Promise<RequestRecord> {
  const sentMs = now();
  const body = requestBody(spec);
  const parser = new SseParser();
  const chunkTimesMs: number[] = [];
  let status: number | null = null;
  let gotResponse = false;
  let retried = false;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: RequestOutcome, detail: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const end = now();
      const first = chunkTimesMs[0];
      const counts = {
        textChunks: parser.textChunks,
        usageTokens: parser.usageTokens,
        requestedTokens: spec.maxTokens,
      };
      const outputTokens =
        outcome === 'ok' || outcome === 'overlong'
          ? (countedTokens({ ...counts, finishReason: parser.finishReason }) ?? parser.textChunks)
          : parser.textChunks;
      resolve({
        outcome,
        detail,
        status,
        scheduledMs,
        sentMs,
        ttftMs: first === undefined ? null : first - scheduledMs,
        itlMs: chunkTimesMs.slice(1).map((t, i) => t - (chunkTimesMs[i] as number)),
        e2eMs: end - scheduledMs,
        outputTokens,
        textChunks: parser.textChunks,
        usageTokens: parser.usageTokens,
        requestedTokens: spec.maxTokens,
        inputTokens: spec.inputTokens,
        finishReason: parser.finishReason,
      });
      req.destroy();
    };
    const url = new URL(spec.api === 'chat' ? '/v1/chat/completions' : '/v1/completions', spec.baseUrl);
    const open = (over: http.Agent | false | undefined) => {
      const r = http.request(url, {
        method: 'POST',
        agent: over,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      r.on('error', (error: NodeJS.ErrnoException) => {
        const code = error.code ?? '';
        // A kept-alive connection the server closed or reset while idle: the request never reached it.
        // Sent again once on a new connection, as Node's documentation advises (http, request.reusedSocket).
        if (!gotResponse && r.reusedSocket && !retried && (code === 'ECONNRESET' || code === 'EPIPE')) {
          retried = true;
          req = open(false);
        } else if (!gotResponse && REFUSED.has(code)) finish('refused', `${code} connecting to ${url.host}`);
        else finish('cut', `${code || error.message} during the response`);
      });
      r.on('response', (res) => onResponse(res));
      r.end(body);
      return r;
    };
    const timer = setTimeout(
      () => finish('timeout', `no complete response within ${spec.timeoutMs} ms`),
      spec.timeoutMs,
    );
    const onResponse = (res: http.IncomingMessage) => {
      gotResponse = true;
      status = res.statusCode ?? null;
      if (status !== 200) {
        res.resume();
        finish('http-error', `HTTP ${status}`);
        return;
      }
      res.on('data', (bytes: Buffer) => {
        const at = now();
        const { textChunks } = parser.feed(bytes);
        // Chunks that came in one read arrived together: each gets the read's time.
        for (let i = 0; i < textChunks; i++) chunkTimesMs.push(at);
        // Garbage or a runaway line: the rest is not read (a line of 100 MB would only cost time).
        const failure = parser.failure;
        if (failure !== null) finish(failure.kind, failure.reason);
      });
      res.on('aborted', () => finish('cut', 'the server closed the connection mid-response'));
      res.on('error', () => finish('cut', 'the connection failed mid-response'));
      res.on('end', () => {
        const outcome = parser.end();
        if (outcome.kind !== 'ok') finish(outcome.kind, outcome.reason);
        else {
          const tokens = parser.usageTokens ?? parser.textChunks;
          if (tokens > spec.maxTokens) finish('overlong', `${tokens} tokens for max_tokens ${spec.maxTokens}`);
          else finish('ok', null);
        }
      });
    };
    let req = open(agent);
  });
}
