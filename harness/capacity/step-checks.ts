/** Whether a step's results are a measurement at all: bench's result checks, applied to open-loop windows. */
import {
  DEFAULT_MIN_OVERLAP,
  implausibleResult,
  overlap,
  overlapShortfall,
  type WindowClaim,
} from '../workload/result-checks.js';

/**
 * Why a step's clients' results cannot be taken as measured, or null: a window that does not start at
 * the release time (`startAtUs`) or ends after its answer came (`receivedUs`), an implausible count, or
 * arrival windows that overlap less than bench requires by default.
 */
export function invalidStep(
  claims: readonly WindowClaim[],
  startAtUs: number,
  receivedUs: number,
  durationMs: number,
): string | null {
  const work = { kind: 'fixed-duration' as const, durationMs };
  const implausible = claims.map((c) => implausibleResult(c, startAtUs, receivedUs, work)).find((why) => why !== null);
  if (implausible) return implausible;
  // A client with a backlog serves it past its window's end, which is a result, not a misalignment:
  // the contention that counts is that of the arrivals, [start, start + the step's duration].
  const arrivals = claims.map((c) => ({
    windowStartUs: c.windowStartUs,
    windowEndUs: Math.min(c.windowEndUs, c.windowStartUs + durationMs * 1000),
  }));
  return overlapShortfall(overlap(arrivals), DEFAULT_MIN_OVERLAP);
}
