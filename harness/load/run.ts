/**
 * A load run: a schedule driven against one server for a duration, each request's record kept, and
 * the aggregate a run reports: TTFT, ITL and end-to-end latency as HDR histograms (the encoding
 * capacity and mix record), their p50 and p99, requests/s and output tokens/s, the count of each
 * outcome, and the generator's own lag (how late it sent against its schedule), so a run can refuse a
 * load the generator itself could not keep up with.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mulberry32 } from '../core/random.js';
import { decodeLatencies, encodeLatencies } from '../workload/open-loop.js';
import { REQUEST_OUTCOMES, type RequestOutcome, type RequestRecord, type RequestSpec, sendRequest } from './request.js';
import { arrivalTimesMs, type Schedule } from './schedule.js';
import { tokenGapsMs } from './tokens.js';

export interface LoadRunOptions {
  request: RequestSpec;
  schedule: Schedule;
  /** Arrivals (open loop) or new requests (closed loop) stop after this; those in flight are awaited. */
  durationMs: number;
  /** The clock, ms (a seam for tests; monotonicMs by default). */
  now?: () => number;
  /** With it, each request's prompt length is uniform in [request.inputTokens, this] by its index in the run (promptLength); else request.inputTokens. */
  inputTokensMax?: number | null;
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
  /** Each generator worker's share of a load a pool sent (load/pool.ts); absent when this process sent it. */
  workers?: WorkerShare[];
}

export interface WorkerShare {
  requests: number;
  /** How late it sent (p99), ms; 0 without requests. */
  lagP99Ms: number;
  /** CPU time it spent on the load, ms. */
  cpuMs: number;
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

/**
 * The one clock of every process of a load, ms: CLOCK_MONOTONIC (process.hrtime), system-wide on Linux
 * and never stepped, so the scheduledMs and sentMs of requests sent by different generator workers
 * (load/pool.ts) compare as if one process had sent them. performance.now() would not: its origin is
 * each process's own start.
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Request `index`'s prompt length, uniform in [lo, hi]: seeded by the index alone, so every copy, arm and worker asks the same lengths. */
export function promptLength(lo: number, hi: number, index: number): number {
  return lo + Math.floor(mulberry32(index + 1)() * (hi - lo + 1));
}

/**
 * The share of a load one sender (the harness, or one generator worker) sends: plain data, so that it
 * crosses to a worker process as JSON.
 */
export interface LoadPart {
  /** Open loop: the arrival times this part sends, ms from the run's start, and each one's index in the run. */
  arrivalsMs: number[];
  indices: number[];
  /** A 'trace' schedule: each arrival's [input, output] tokens, beside arrivalsMs; absent otherwise. */
  lengths?: Array<[number, number]>;
  /** Closed loop: the resident slots this part keeps busy, by their number among the schedule's concurrency. */
  slots: number[];
  /** Closed loop: this part's k-th request is the run's request k × parts + part (its prompt length and id). */
  part: number;
  parts: number;
}

/**
 * The longest span over which a closed loop's slots make their first sends, ms, and its share of the
 * window at most. Started all at once, c requests (N × c on the dedicated copy) hit the server in one
 * burst that no steady state has: c prefills in one batch, and, with equal output lengths, the c
 * requests ending and starting again together round after round. Slot i of c sends first at
 * i × span ÷ c from the start instead: 500 ms is about one request's life on the reference server (64
 * tokens), the spacing of a steady closed loop; a tenth of the window at most, so the ramp costs at
 * most 5% of the window's residency, the same in both arms of a round.
 */
export const STAGGER_MAX_MS = 500;
export const STAGGER_WINDOW_SHARE = 0.1;

/** When slot `slot` of `concurrency` sends first, ms from the start of a closed-loop run of `durationMs`. */
export function firstSendMs(slot: number, concurrency: number, durationMs: number): number {
  return (slot * Math.min(STAGGER_MAX_MS, durationMs * STAGGER_WINDOW_SHARE)) / concurrency;
}

/**
 * A load dealt over `parts` senders, round-robin: open loop, the run's arrivals in turn (each keeps its
 * time, so the parts together send the one schedule); closed loop, the resident slots in turn. One part
 * is the whole load.
 */
export function splitLoad(schedule: Schedule, durationMs: number, parts: number): LoadPart[] {
  const all: LoadPart[] = Array.from({ length: parts }, (_, part) => ({
    arrivalsMs: [] as number[],
    indices: [] as number[],
    slots: [] as number[],
    part,
    parts,
  }));
  if (schedule.kind === 'closed')
    for (let slot = 0; slot < schedule.concurrency; slot++) all[slot % parts]?.slots.push(slot);
  else
    for (const [index, offsetMs] of arrivalTimesMs(schedule, durationMs).entries()) {
      const part = all[index % parts] as LoadPart;
      part.arrivalsMs.push(offsetMs);
      part.indices.push(index);
      const r = schedule.kind === 'trace' ? schedule.requests[index] : undefined;
      if (r !== undefined) (part.lengths ??= []).push([r.inputTokens, r.outputTokens]);
    }
  return all;
}

/** Sleeps `ms`, or until `signal` aborts. */
const sleepFor = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Waits until `atMs` on `now`'s clock, or until `signal` aborts. Never early: a timer counts whole ms from
 * the event loop's cached time, so it can fire a millisecond or more before `atMs` on this clock (a
 * staggered first send came 1.2 ms early on a busy machine); it waits again for what is left.
 */
const waitUntil = async (now: () => number, atMs: number, signal?: AbortSignal) => {
  while (!signal?.aborted && now() < atMs) await sleepFor(Math.max(1, Math.ceil(atMs - now())), signal);
};

/**
 * Sends one part of a load that started at `startMs` (on `now`'s clock) and resolves with its requests'
 * records once the last has ended. A closed loop's slots start staggered (firstSendMs); each request
 * after a slot's first is scheduled the moment its predecessor ends: a closed loop has no backlog to hide.
 */
export async function sendPart(options: LoadRunOptions, part: LoadPart, startMs: number): Promise<RequestRecord[]> {
  const now = options.now ?? monotonicMs;
  const { schedule, durationMs, request } = options;
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const signal = options.signal;
  // Destroying the agent ends every request in flight (each resolves as cut): nothing outlives an abort.
  const cut = () => agent.destroy();
  signal?.addEventListener('abort', cut, { once: true });
  const records: RequestRecord[] = [];
  // A part's own tag, then the request's index: a prompt never repeats, within a run or across runs.
  const tag = randomBytes(4).toString('hex');
  const hi = options.inputTokensMax ?? null;
  const spec = (index: number, lengths?: [number, number]): RequestSpec => ({
    ...request,
    inputTokens: lengths?.[0] ?? (hi === null ? request.inputTokens : promptLength(request.inputTokens, hi, index)),
    maxTokens: lengths?.[1] ?? request.maxTokens,
    uniqueId: `${tag}${index.toString(36)}`,
  });
  try {
    if (schedule.kind === 'closed') {
      let sent = 0;
      const slot = async (n: number) => {
        const firstMs = startMs + firstSendMs(n, schedule.concurrency, durationMs);
        if (now() < firstMs) await waitUntil(now, firstMs, signal);
        while (now() - startMs < durationMs && !signal?.aborted)
          records.push(await sendRequest(spec(sent++ * part.parts + part.part), now(), now, agent));
      };
      await Promise.all(part.slots.map(slot));
    } else {
      const inFlight: Promise<void>[] = [];
      for (const [i, offsetMs] of part.arrivalsMs.entries()) {
        const scheduledMs = startMs + offsetMs;
        if (now() < scheduledMs) await waitUntil(now, scheduledMs, signal);
        if (signal?.aborted) break;
        const r = sendRequest(spec(part.indices[i] ?? i, part.lengths?.[i]), scheduledMs, now, agent);
        inFlight.push(r.then((x) => void records.push(x)));
      }
      await Promise.all(inFlight);
    }
  } finally {
    signal?.removeEventListener('abort', cut);
    agent.destroy();
  }
  return records;
}

/** A load run in this process: the whole load as one part. */
export async function runLoad(options: LoadRunOptions): Promise<LoadResult> {
  const now = options.now ?? monotonicMs;
  const startMs = now();
  const [part] = splitLoad(options.schedule, options.durationMs, 1);
  const records = await sendPart(options, part as LoadPart, startMs);
  return { ...summarize(options.schedule, options.durationMs, now() - startMs, records), startMs };
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
