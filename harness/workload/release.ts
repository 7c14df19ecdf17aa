/** When clients released together start: a shared CLOCK_MONOTONIC time set a little ahead of now. */

/**
 * The default lead of a release, ms: bench and capacity alike. 10: on the H100 (run 018c0d, 2026-11-24)
 * the 2 clients of a contended trial began their windows a median 0.2 µs apart, the worst 3 ms, with 30.
 */
export const RELEASE_LEAD_MS = 10;

/**
 * How far ahead a trial's release is set: the configured lead, or 2 ms per released client when
 * more (a wake-up for each of 48 processes on 16 cores takes longer than the default lead).
 */
export function releaseLeadMs(configured: number, clients: number): number {
  return Math.max(configured, 2 * clients);
}
