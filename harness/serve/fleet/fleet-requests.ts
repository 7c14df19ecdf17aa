/**
 * How many requests each server of a fleet gets in a mode's measured windows, before anything runs: every
 * window sends the same schedule (fleet-load.ts), so the counts are exact. A server with fewer than
 * REQUESTS_TO_SHOW_WITHIN can only be unclear or missed: --dry-run says so, with the --window-s that
 * would give the coldest server enough (generated traffic; a trace sends what it holds).
 */
import { countsPerServer } from '../../load/traffic/schedule.js';
import type { Fleet } from './fleet-file.js';
import { fleetSchedule } from './fleet-load.js';
import { ATTAINMENT_TARGET, REQUESTS_TO_SHOW_WITHIN } from './verdicts.js';

export interface ServerRequests {
  label: string;
  /** Requests over the mode's measured windows (every round's window). */
  requests: number;
  /** Its mean rate, requests/s; null for a trace. */
  ratePerS: number | null;
}

/** Each server's requests over `rounds` windows of `windowMs`, in the fleet's order. */
export function requestsPerServer(fleet: Fleet, windowMs: number, rounds: number): ServerRequests[] {
  const counts = countsPerServer(
    fleetSchedule(fleet, windowMs),
    fleet.servers.map((s) => s.index),
  );
  return fleet.servers.map((s) => ({
    label: s.label,
    requests: (counts.get(s.index) ?? 0) * rounds,
    ratePerS: s.ratePerS,
  }));
}

/** The longest --window-s --dry-run looks for, s: an hour of windows per mode is past any run's budget. */
const LONGEST_WINDOW_S = 3600;

/**
 * The shortest whole --window-s in which every server gets REQUESTS_TO_SHOW_WITHIN over `rounds` windows,
 * from the fleet's own seeded schedule (a longer window's schedule extends a shorter one's, so counts only
 * grow: doubling, then bisecting); null for a trace, or past LONGEST_WINDOW_S.
 */
export function windowSFor(fleet: Fleet, rounds: number): number | null {
  if (fleet.traffic.source === 'trace') return null;
  const enough = (windowS: number) =>
    Math.min(...requestsPerServer(fleet, windowS * 1000, rounds).map((s) => s.requests)) >= REQUESTS_TO_SHOW_WITHIN;
  let hi = 1;
  while (!enough(hi)) {
    if (hi >= LONGEST_WINDOW_S) return null;
    hi = Math.min(LONGEST_WINDOW_S, hi * 2);
  }
  let lo = Math.floor(hi / 2);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (enough(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The lines --dry-run prints: the range of requests per server and, where some get too few, the
 * --window-s that gives each enough (`windowS`, from windowSFor), or what a trace can do.
 */
export function requestsLines(
  per: readonly ServerRequests[],
  windowMs: number,
  rounds: number,
  windowS: number | null,
): string[] {
  if (per.length === 0) return [];
  const fewest = per.reduce((a, b) => (b.requests < a.requests ? b : a));
  const most = per.reduce((a, b) => (b.requests > a.requests ? b : a));
  const need = REQUESTS_TO_SHOW_WITHIN;
  const lines = [
    `requests per server in a mode's ${rounds} windows of ${windowMs / 1000} s: ${fewest.requests} (${fewest.label}) to ${most.requests} (${most.label}); ${need}, none missed, show a server within ${ATTAINMENT_TARGET * 100}% (Wilson 95%)`,
  ];
  const short = per.filter((s) => s.requests < need);
  if (short.length === 0) return lines;
  const fix =
    fewest.ratePerS === null
      ? 'the trace holds too few of theirs: replay a longer one, or give more --rounds'
      : windowS === null
        ? `no --window-s up to ${LONGEST_WINDOW_S} s gives each enough: give more --rounds, or the cold servers more traffic`
        : `--window-s ${windowS} gives each of them enough (or more --rounds)`;
  lines.push(
    `  ${short.length} of ${per.length} servers get fewer: their verdict can only be unclear or missed; ${fix}`,
  );
  return lines;
}
