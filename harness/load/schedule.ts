/**
 * When requests are sent. Open loop: arrivals at times fixed in advance (Poisson with a seed, or a
 * constant rate), whatever the server does, so a request's latency counts from its scheduled time and a
 * slow server (or a slow generator) cannot hide queueing. Closed loop: N requests in flight, each sent
 * as the one before it ends (throughput at a fixed number resident).
 */
import { mulberry32 } from '../core/random.js';

export type Schedule =
  | { kind: 'poisson'; ratePerS: number; seed: number }
  | { kind: 'constant'; ratePerS: number }
  | { kind: 'closed'; concurrency: number }
  /** Open loop at given offsets, each request with its own lengths (a fleet's schedule, a trace). */
  | { kind: 'trace'; requests: TimedRequest[] };

/** One request of a 'trace' schedule (in time order): when, ms from the start, and its prompt and answer lengths in tokens. */
export interface TimedRequest {
  offsetMs: number;
  inputTokens: number;
  outputTokens: number;
}

export type OpenSchedule = Extract<Schedule, { kind: 'poisson' | 'constant' | 'trace' }>;

/** The arrival times (ms from the start) of an open-loop schedule within [0, durationMs). */
export function arrivalTimesMs(schedule: OpenSchedule, durationMs: number): number[] {
  if (schedule.kind === 'trace') return schedule.requests.map((r) => r.offsetMs).filter((t) => t < durationMs);
  if (!(schedule.ratePerS > 0)) return [];
  const meanGapMs = 1000 / schedule.ratePerS;
  const times: number[] = [];
  if (schedule.kind === 'constant') {
    // By index, not by summing gaps: no drift from rounding over a long run.
    for (let i = 0; i * meanGapMs < durationMs; i++) times.push(i * meanGapMs);
    return times;
  }
  const random = mulberry32(schedule.seed);
  // Exponential gaps: 1 − u is in (0, 1], so the log is finite.
  for (let t = -Math.log(1 - random()) * meanGapMs; t < durationMs; t += -Math.log(1 - random()) * meanGapMs)
    times.push(t);
  return times;
}

/** One line naming what is wrong with a schedule, or null. */
export function scheduleProblem(schedule: Schedule): string | null {
  if (schedule.kind === 'closed')
    return Number.isInteger(schedule.concurrency) && schedule.concurrency >= 1
      ? null
      : `concurrency ${schedule.concurrency} is not a whole number of at least 1`;
  if (schedule.kind === 'trace') return null;
  return Number.isFinite(schedule.ratePerS) && schedule.ratePerS > 0
    ? null
    : `rate ${schedule.ratePerS} requests/s is not a positive number`;
}
