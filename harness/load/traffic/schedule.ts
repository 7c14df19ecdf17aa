/**
 * A fleet's schedule: every request it will send, when, to which server, with which prompt and answer
 * lengths. Generated from per-server rates, an arrival law and two length laws under one seed, or read
 * from a trace (trace.ts); either way the same list, so a run can be written as a trace and replayed
 * arrival for arrival.
 */
import { type ArrivalLaw, arrivalOffsetsMs } from './arrivals.js';
import { stream } from './draws.js';
import { drawLength, type LengthLaw } from './lengths.js';

/** One request of a schedule: `server` is the fleet server's index (1-based, as {index} fills it). */
export interface Arrival {
  offsetMs: number;
  server: number;
  inputTokens: number;
  outputTokens: number;
}

export interface TrafficPlan {
  /** Each server's index and its mean rate, requests/s. */
  servers: ReadonlyArray<{ index: number; ratePerS: number }>;
  arrivals: ArrivalLaw;
  inputTokens: LengthLaw;
  outputTokens: LengthLaw;
  seed: number;
}

/** In time order; at one instant, by server. */
const byTime = (a: Arrival, b: Arrival) => a.offsetMs - b.offsetMs || a.server - b.server;

/**
 * Every request of `plan` within [0, durationMs), in time order. Each server is its own process at its
 * rate (independent streams: a server's arrivals depend on the seed and its index alone), its lengths
 * from a stream of their own.
 */
export function generateSchedule(plan: TrafficPlan, durationMs: number): Arrival[] {
  const all: Arrival[] = [];
  for (const { index, ratePerS } of plan.servers) {
    const lengths = stream(plan.seed, index, 1);
    for (const offsetMs of arrivalOffsetsMs(plan.arrivals, ratePerS, durationMs, stream(plan.seed, index, 0)))
      all.push({
        offsetMs,
        server: index,
        inputTokens: drawLength(plan.inputTokens, lengths),
        outputTokens: drawLength(plan.outputTokens, lengths),
      });
  }
  return all.sort(byTime);
}

/** Each server's requests, in time order, keyed by index (a server with none has an empty list). */
export function perServer(schedule: readonly Arrival[], indices: readonly number[]): Map<number, Arrival[]> {
  const out = new Map<number, Arrival[]>(indices.map((i) => [i, []]));
  for (const a of [...schedule].sort(byTime)) out.get(a.server)?.push(a);
  return out;
}

/** Requests per server, keyed by index. */
export function countsPerServer(schedule: readonly Arrival[], indices: readonly number[]): Map<number, number> {
  return new Map([...perServer(schedule, indices)].map(([i, list]) => [i, list.length]));
}
