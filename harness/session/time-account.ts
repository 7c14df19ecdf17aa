/**
 * Where a run's wall time went: inside measurement windows, in client start-up and warm-up, in the
 * harness between trials, and outside any measured part (fingerprint, MPS daemons, report). A pure
 * function of the CLOCK_MONOTONIC timestamps a run records; bench, probe and capacity share it.
 */
import { z } from 'zod';

/** A span of CLOCK_MONOTONIC µs; endUs null: it never ended (a harness killed mid-run). */
export const WallSpanSchema = z.object({ startUs: z.number(), endUs: z.number().nullable() });
export type WallSpan = z.infer<typeof WallSpanSchema>;

/** One measured part of a run (a bench comparison, a capacity step): its clients and its windows, µs. */
export interface AccountedPart {
  id: string;
  /** Clients told to start (for a prestarted client: told to initialise CUDA); null: never recorded. */
  startedUs: number | null;
  /** Every client said ready; null: never. */
  readyUs: number | null;
  /** The part's clients had exited; null: never recorded. */
  endUs: number | null;
  /** Each trial's measurement window (first client's start to last client's end). */
  windows: ReadonlyArray<{ startUs: number; endUs: number }>;
}

const Seconds = z.number().nonnegative();
/** The split of one part's time, seconds. */
export const PartAccountSchema = z.object({
  id: z.string(),
  /** From its clients' start to their exit. */
  spanS: Seconds,
  windowsS: Seconds,
  /** Client start-up and warm-up: start to ready. */
  startupS: Seconds,
  /** The rest of its span: release leads, checks and saves between trials, the clients' exit. */
  harnessS: Seconds,
});
/** Where a run's wall time went, seconds; `parts` per comparison (or step). */
export const TimeAccountSchema = z.object({
  wallS: Seconds,
  windowsS: Seconds,
  startupS: Seconds,
  harnessS: Seconds,
  /** Wall time outside every part: fingerprint, preflight, MPS daemons' start and stop, report. */
  outsideS: Seconds,
  parts: z.array(PartAccountSchema),
});
export type TimeAccount = z.infer<typeof TimeAccountSchema>;

const seconds = (us: number) => Math.max(0, us) / 1e6;
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * The account of `parts` within the wall time of `wall` (each start of the command: the run, each
 * --resume). A span that never ended (a harness killed) counts only as far as its parts reach.
 */
export function timeAccount(wall: readonly WallSpan[], parts: readonly AccountedPart[]): TimeAccount {
  const accounted = parts.map((p) => {
    const windowsS = sum(p.windows.map((w) => seconds(w.endUs - w.startUs)));
    const startupS = p.startedUs !== null && p.readyUs !== null ? seconds(p.readyUs - p.startedUs) : 0;
    const spanS =
      p.startedUs !== null && p.endUs !== null
        ? Math.max(seconds(p.endUs - p.startedUs), windowsS + startupS)
        : windowsS + startupS;
    // Clamped: a span equal to windows + start-up may leave −1e-16 of rounding.
    return { id: p.id, spanS, windowsS, startupS, harnessS: Math.max(0, spanS - windowsS - startupS) };
  });
  const spansS = sum(accounted.map((p) => p.spanS));
  const wallS = Math.max(spansS, sum(wall.map((w) => (w.endUs !== null ? seconds(w.endUs - w.startUs) : 0))));
  return {
    wallS,
    windowsS: sum(accounted.map((p) => p.windowsS)),
    startupS: sum(accounted.map((p) => p.startupS)),
    harnessS: sum(accounted.map((p) => p.harnessS)),
    outsideS: Math.max(0, wallS - spansS),
    parts: accounted,
  };
}

const s = (x: number) => `${x < 10 ? x.toFixed(1) : x.toFixed(0)} s`;

/** The share of the wall time spent measuring, in percent (0 for no wall time). */
export function measuringPct(account: TimeAccount): number {
  return account.wallS > 0 ? (100 * account.windowsS) / account.wallS : 0;
}

/** "measuring: 41 s of 98 s (42%); client start-up and warm-up 30 s, ..." : the summary's and the report's line. */
export function timeAccountText(account: TimeAccount): string {
  return `measuring: ${s(account.windowsS)} of ${s(account.wallS)} (${measuringPct(account).toFixed(0)}%); client start-up and warm-up ${s(account.startupS)}, harness between trials ${s(account.harnessS)}, outside comparisons ${s(account.outsideS)}`;
}
