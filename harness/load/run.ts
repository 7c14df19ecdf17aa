/**
 * A load run: a schedule driven against one server for a duration, each request's record kept, and
 * the aggregate a run reports: TTFT, ITL and end-to-end latency as HDR histograms (the encoding
 * capacity and mix record), their p50 and p99, requests/s and output tokens/s, the count of each
 * outcome, and the generator's own lag (how late it sent against its schedule), so a run can refuse a
 * load the generator itself could not keep up with.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { decodeLatencies, encodeLatencies } from '../workload/open-loop.js';
import { REQUEST_OUTCOMES, type RequestOutcome, type RequestRecord, type RequestSpec, sendRequest } from './request.js';
import { arrivalTimesMs, type Schedule } from './schedule.js';
import { tokenGapsMs } from './tokens.js';

export interface LoadRunOptions {
  request: RequestSpec;
  schedule: Schedule;
  /** Arrivals (open loop) or new requests (closed loop) stop after this; those in flight are awaited. */
  durationMs: number;
  /** The clock, ms (a seam for tests; performance.now by default). */
  now?: () => number;
  /** Each request's prompt length, by its index in the run (a length distribution); default request.inputTokens. */
  inputTokensOf?: (index: number) => number;
  /** Stops sending at once, and cuts the requests in flight (an interrupted run, a copy gone). */
  signal?: AbortSignal;
}

export interface Percentiles {
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The HDR histogram (µs, compressed base64), as capacity and mix record theirs. */
  histogram: string;
}

export interface LoadResult {
  schedule: Schedule;
  /** When the run began, on the clock of its records (`now`), and how long it sent for, ms. */
  startMs: number;
  durationMs: number;
  /** From the start to the last response, ms. */
  elapsedMs: number;
  requests: number;
  outcomes: Record<RequestOutcome, number>;
  /** One line per kind of failure with its first detail, e.g. "cut: the stream ended without …". */
  failures: string[];
  /** Of the requests that ended ok, latency from their scheduled time. */
  ttft: Percentiles;
  itl: Percentiles;
  e2e: Percentiles;
  /** Requests ended ok, and their output tokens, per second of elapsed time. */
  requestsPerS: number;
  outputTokensPerS: number;
  /** How late each request was sent against its schedule (the generator's own lag). */
  lag: Percentiles;
  records: RequestRecord[];
}

/** p50, p99 and max of latencies (ms), through the HDR encoding of workload/open-loop.ts. */
export function percentiles(valuesMs: readonly number[]): Percentiles {
  const histogram = encodeLatencies(valuesMs);
  const h = decodeLatencies(histogram);
  try {
    const at = (p: number) => (h.totalCount > 0 ? h.getValueAtPercentile(p) / 1000 : Number.NaN);
    return { count: h.totalCount, p50Ms: at(50), p99Ms: at(99), maxMs: at(100), histogram };
  } finally {
    h.destroy();
  }
}

/** Waits until `atMs` on `now`'s clock, or until `signal` aborts. */
const waitUntil = (now: () => number, atMs: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, atMs - now()));
    signal?.addEventListener('abort', done, { once: true });
  });

export async function runLoad(options: LoadRunOptions): Promise<LoadResult> {
  const now = options.now ?? (() => performance.now());
  const { schedule, durationMs, request } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const signal = options.signal;
  // Destroying the agent ends every request in flight (each resolves as cut): nothing outlives an abort.
  const cut = () => agent.destroy();
  signal?.addEventListener('abort', cut, { once: true });
  const startMs = now();
  const records: RequestRecord[] = [];
  let sent = 0;
  // A run's own tag, then the request's index: a prompt never repeats, within a run or across runs.
  const tag = randomBytes(4).toString('hex');
  const next = (): RequestSpec => {
    const index = sent++;
    const inputTokens = options.inputTokensOf ? options.inputTokensOf(index) : request.inputTokens;
    return { ...request, inputTokens, uniqueId: `${tag}${index.toString(36)}` };
  };
  try {
    if (schedule.kind === 'closed') {
      const worker = async () => {
        // Each request is scheduled the moment its predecessor ends: closed loop has no backlog to hide.
        while (now() - startMs < durationMs && !signal?.aborted)
          records.push(await sendRequest(next(), now(), now, agent));
      };
      await Promise.all(Array.from({ length: schedule.concurrency }, worker));
    } else {
      const inFlight: Promise<void>[] = [];
      for (const offsetMs of arrivalTimesMs(schedule, durationMs)) {
        const scheduledMs = startMs + offsetMs;
        if (now() < scheduledMs) await waitUntil(now, scheduledMs, signal);
        if (signal?.aborted) break;
        inFlight.push(sendRequest(next(), scheduledMs, now, agent).then((r) => void records.push(r)));
      }
      await Promise.all(inFlight);
    }
  } finally {
    signal?.removeEventListener('abort', cut);
    agent.destroy();
  }
  return { ...summarize(schedule, durationMs, now() - startMs, records), startMs };
}

export function summarize(
  schedule: Schedule,
  durationMs: number,
  elapsedMs: number,
  records: RequestRecord[],
): Omit<LoadResult, 'startMs'> {
  const outcomes = Object.fromEntries(REQUEST_OUTCOMES.map((o) => [o, 0])) as Record<RequestOutcome, number>;
  const failures = new Map<RequestOutcome, string>();
  for (const r of records) {
    outcomes[r.outcome]++;
    if (r.outcome !== 'ok' && !failures.has(r.outcome)) failures.set(r.outcome, `${r.outcome}: ${r.detail ?? ''}`);
  }
  const ok = records.filter((r) => r.outcome === 'ok');
  const seconds = elapsedMs / 1000;
  return {
    schedule,
    durationMs,
    elapsedMs,
    requests: records.length,
    outcomes,
    failures: [...failures.values()],
    ttft: percentiles(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs]))),
    itl: percentiles(ok.flatMap(tokenGapsMs)),
    e2e: percentiles(ok.map((r) => r.e2eMs)),
    requestsPerS: seconds > 0 ? ok.length / seconds : 0,
    outputTokensPerS: seconds > 0 ? ok.reduce((sum, r) => sum + r.outputTokens, 0) / seconds : 0,
    lag: percentiles(records.map((r) => r.sentMs - r.scheduledMs)),
    records,
  };
}

/**
 * Why a run's load cannot be taken as the server's (the generator sent late: its p99 lag over
 * `maxLagMs`), or null. Open loop only: a closed loop schedules each request when it sends it.
 */
export function generatorLagProblem(result: Pick<LoadResult, 'schedule' | 'lag'>, maxLagMs: number): string | null {
  if (result.schedule.kind === 'closed' || result.lag.count === 0) return null;
  return result.lag.p99Ms > maxLagMs
    ? `the load generator sent requests ${result.lag.p99Ms.toFixed(1)} ms late (p99, over ${maxLagMs} ms): it could not sustain this rate, so the latencies measure it, not the server`
    : null;
}
