/**
 * How long a capacity step runs: --window-ms, longer where its rate is too low for the requests a p99
 * claim needs, shorter where a client would serve more requests than the latencies it reports (a step
 * over that is invalid: the rate could not be measured at all, whatever --window-ms the user chose).
 */

/** Requests a step is sized for (at its rate), so that its p99 claim can be decided. */
const STEP_REQUESTS = 640;
/** …but no step longer than this: a rate that low is reached only when the ones above it failed. */
const MAX_STEP_MS = 20_000;
/** Latencies a client process reports a window (LATENCY_CAP of gpushare's helper, its tenants sharing them). */
export const LATENCIES_A_WINDOW = 20_000;
/** The shortest step: --window-ms's own floor. */
const MIN_STEP_MS = 100;

/** A step's window, ms, at `totalQps` over `processes` client processes. */
export function capacityStepMs(totalQps: number, processes: number, windowMs: number): number {
  const reportedMs = Math.floor(((LATENCIES_A_WINDOW * processes) / totalQps) * 1000);
  const window = Math.max(MIN_STEP_MS, Math.min(windowMs, reportedMs));
  return Math.max(window, Math.min(MAX_STEP_MS, Math.ceil((STEP_REQUESTS / totalQps) * 1000)));
}
