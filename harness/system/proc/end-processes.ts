/**
 * Ending processes a child left behind, by PID: those that left its process group (setsid()) or
 * outlived its leader, where signalling the group does not reach them. Bounded: each gets SIGKILL, and
 * what is still running after a grace is returned, to be named, never waited for.
 */
import { type SeenProcess, stillRunning } from './process-table.js';

/** How long killed processes get to disappear before they count as left running. */
export const KILLED_GRACE_MS = 2000;
const POLL_MS = 20;

/** Signals each process of `seen` that is still the one seen (never a reused PID). */
export async function signalSeen(seen: readonly SeenProcess[], signal: NodeJS.Signals): Promise<void> {
  for (const p of seen) if (await stillRunning(p)) signalQuietly(p.pid, signal);
}

/** The processes of `seen` still running, polled until none is or `ms` is over. */
export async function runningAfter(seen: readonly SeenProcess[], ms: number): Promise<SeenProcess[]> {
  const end = Date.now() + ms;
  for (;;) {
    const alive: SeenProcess[] = [];
    for (const p of seen) if (await stillRunning(p)) alive.push(p);
    if (alive.length === 0 || Date.now() >= end) return alive;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** SIGKILLs every process of `seen` still running; the PIDs still there after `graceMs`. */
export async function killSeen(seen: readonly SeenProcess[], graceMs = KILLED_GRACE_MS): Promise<number[]> {
  await signalSeen(seen, 'SIGKILL');
  return (await runningAfter(seen, graceMs)).map((p) => p.pid);
}

/** `seen` with each PID once (the first sighting kept). */
export function uniqueSeen(seen: readonly SeenProcess[]): SeenProcess[] {
  const byPid = new Map<number, SeenProcess>();
  for (const p of seen) if (!byPid.has(p.pid)) byPid.set(p.pid, p);
  return [...byPid.values()];
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}
