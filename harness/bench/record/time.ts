/** A bench run's time account (session/time-account.ts) from what it recorded: client starts, trial windows, wall spans. */
import { type AccountedPart, type TimeAccount, timeAccount } from '../../session/time-account.js';
import type { Run } from './schema.js';

/** Each measured trial's window: its first client's start to its last client's end, µs. */
function trialWindows(run: Pick<Run, 'trials'>) {
  return run.trials.flatMap((t) =>
    (t.status === 'ok' || t.status === 'invalid') && t.clients.length > 0
      ? [
          {
            comparisonId: t.comparisonId,
            startUs: Math.min(...t.clients.map((c) => c.windowStartUs)),
            endUs: Math.max(...t.clients.map((c) => c.windowEndUs)),
          },
        ]
      : [],
  );
}

/** The account of `run` (its comparisons as parts); null for a run that recorded no wall spans (before 2026-11-24). */
export function benchTimeAccount(run: Pick<Run, 'trials' | 'clientStarts' | 'wallSpans'>): TimeAccount | null {
  if (run.wallSpans === undefined) return null;
  const windows = trialWindows(run);
  const parts: AccountedPart[] = (run.clientStarts ?? []).map((s) => ({
    id: s.comparisonId,
    startedUs: s.startedUs,
    readyUs: s.readyUs,
    endUs: s.endUs ?? null,
    // A comparison resumed has one start per session: each window belongs to the clients that measured it.
    windows: windows.filter(
      (w) =>
        w.comparisonId === s.comparisonId && w.startUs >= s.readyUs && (s.endUs === undefined || w.endUs <= s.endUs),
    ),
  }));
  return timeAccount(run.wallSpans, parts);
}
