/** What a workload's result may claim: checked against what the harness itself asked and saw (bench's trials, gpushare check). */

import type { Work } from './spec.js';

/** The part of a client's result whose plausibility is checked: its window (CLOCK_MONOTONIC µs), iterations and GPU time (ms). */
export interface ReportedWork {
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
  result: ReportedWork,
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
  if (work.kind === 'fixed-duration' && (windowMs < work.durationMs * 0.5 || windowMs > work.durationMs * 2 + 1000)) {
    return `client ${result.client} reported a ${windowMs.toFixed(1)} ms window for a ${work.durationMs} ms trial`;
  }
  if (result.iterations > (MAX_RATE_PER_S * Math.max(windowMs, 1)) / 1000)
    return `client ${result.client} reported ${result.iterations} iterations in ${windowMs.toFixed(1)} ms`;
  if (result.gpuMs > windowMs * 1.5 + 50)
    return `client ${result.client} reported ${result.gpuMs.toFixed(1)} ms of GPU time in a ${windowMs.toFixed(1)} ms window`;
  return null;
}
