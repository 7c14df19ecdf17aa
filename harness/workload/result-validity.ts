/**
 * What a workload's result may claim, checked against what the harness itself asked and saw: bench's
 * trials and capacity's steps alike are invalid when a window fails these.
 */
import type { Work } from './spec.js';

/** What a client's window claims: CLOCK_MONOTONIC µs, iterations done and GPU time (ms). */
export interface WindowClaim {
  client: number;
  windowStartUs: number;
  windowEndUs: number;
  iterations: number;
  gpuMs: number;
}

/** How early a window may claim to start before its release time (clock granularity), µs. */
const EARLY_US = 1_000;
/** How late a window may start after its release time before the claim is not believed, µs. */
const LATE_US = 1_000_000;
/** More iterations per second than any GPU workload can do: a result claiming it is not believed. */
const MAX_RATE_PER_S = 1e8;

/**
 * Why a client's result cannot be true, or null. The window must lie between the release time the
 * harness sent and the moment its answer arrived (a workload on the wrong clock, e.g. time.time()
 * instead of CLOCK_MONOTONIC, fails here), a timed window must last about what was asked, and the
 * iteration count and GPU time must fit inside the window.
 */
export function implausibleResult(
  result: WindowClaim,
  startAtUs: number,
  receivedUs: number,
  work: Work,
): string | null {
  const { windowStartUs: start, windowEndUs: end } = result;
  const us = (x: number) => `${Math.round(x)} µs`;
  if (start < startAtUs - EARLY_US || start > startAtUs + LATE_US) {
    return `client ${result.client} reported a window starting at ${us(start)}, ${us(start - startAtUs)} from the release time ${us(startAtUs)} (CLOCK_MONOTONIC µs expected)`;
  }
  if (end > receivedUs + EARLY_US)
    return `client ${result.client} reported a window ending at ${us(end)}, after its result arrived (${us(receivedUs)})`;
  const windowMs = (end - start) / 1000;
  // A timed window outside [½×, 2× + 1 s] of the time asked.
  if (
    work.kind === 'fixed-duration' &&
    !(windowMs >= work.durationMs * 0.5 && windowMs <= work.durationMs * 2 + 1000)
  ) {
    return `client ${result.client} reported a ${windowMs.toFixed(1)} ms window for a ${work.durationMs} ms trial`;
  }
  if (result.iterations > (MAX_RATE_PER_S * Math.max(windowMs, 1)) / 1000)
    return `client ${result.client} reported ${result.iterations} iterations in ${windowMs.toFixed(1)} ms`;
  if (result.gpuMs > windowMs * 1.5 + 50)
    return `client ${result.client} reported ${result.gpuMs.toFixed(1)} ms of GPU time in a ${windowMs.toFixed(1)} ms window`;
  return null;
}

/** How much released clients' windows overlapped: the shared span as a fraction (0–1) of each client's own window. */
export interface Overlap {
  perClient: number[];
  min: number;
}

/** The share of each window the contended windows must overlap unless told otherwise (bench's --min-overlap). */
export const DEFAULT_MIN_OVERLAP = 0.9;

/**
 * How much the clients' windows overlapped: the span every window shares (latest start to earliest
 * end) as a fraction of each client's own window. 1 for a single client.
 */
export function overlap(clients: ReadonlyArray<Pick<WindowClaim, 'windowStartUs' | 'windowEndUs'>>): Overlap {
  if (clients.length <= 1) return { perClient: clients.map(() => 1), min: 1 };
  const shared = Math.max(
    0,
    Math.min(...clients.map((c) => c.windowEndUs)) - Math.max(...clients.map((c) => c.windowStartUs)),
  );
  const perClient = clients.map((c) => {
    const own = c.windowEndUs - c.windowStartUs;
    return own > 0 ? Math.min(1, shared / own) : 0;
  });
  return { perClient, min: Math.min(...perClient) };
}

/** Why the windows did not contend for long enough (their overlap below `minOverlap`, a fraction), or null. */
export function overlapShortfall(shared: Overlap, minOverlap: number): string | null {
  if (shared.min >= minOverlap) return null;
  return `the contended windows overlapped ${(shared.min * 100).toFixed(1)}% of a client's window, below the ${(minOverlap * 100).toFixed(0)}% required`;
}
