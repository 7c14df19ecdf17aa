/**
 * Paired rounds: every arm measured once a round, in ABBA order, so that drift over a run cancels in
 * pairs and no arm always comes first. The order is written here once (bench's trials, mix's windows,
 * a server run's rounds take it), and so is the loop that drives the rounds: resume by round, stop at
 * the first window that failed, an interruption thrown before any window is released.
 */

/** A round's arms in ABBA order: forward in even rounds, reversed in odd ones. */
export function abbaOrder<A>(arms: readonly A[], round: number): A[] {
  return round % 2 === 0 ? [...arms] : [...arms].reverse();
}

/** What one window gave: a measurement, or why it failed (a result, not an exception). */
export type WindowOutcome<W> = { status: 'ok'; window: W } | { status: 'failed'; reason: string };

/** How paired rounds end: every round run (or the stop policy said enough), or a window failed. */
export type RoundsOutcome = { status: 'done' } | { status: 'failed'; round: number; reason: string };

export interface PairedRounds<A, W> {
  /** The arms of a round, in their forward order (round 0's). */
  arms: readonly A[];
  /** How many rounds, or the stop policy: whether round `round` (from 0) is to run. */
  rounds: number | ((round: number) => boolean);
  /** Whether `arm`'s window of `round` is kept already (a resumed run measures only the rest). */
  kept?: (arm: A, round: number) => boolean;
  measure(arm: A, round: number): Promise<WindowOutcome<W>>;
  /** A round with windows left is about to start. */
  onRoundStart?(round: number): void;
  /** A window was measured (save it, say how it went). */
  onWindow?(arm: A, round: number, window: W): Promise<void>;
  /** Every window of a round left to measure was measured, in the order they ran. */
  onRound?(round: number, windows: ReadonlyArray<{ arm: A; window: W }>): Promise<void>;
  signal: AbortSignal;
  /** The error an abort throws, checked before each window. */
  interrupted(): Error;
}

/** Runs the rounds of `plan`: each round's arms not kept yet, in ABBA order; stops at the first failed window. */
export async function runPairedRounds<A, W>(plan: PairedRounds<A, W>): Promise<RoundsOutcome> {
  const { rounds } = plan;
  const more = typeof rounds === 'number' ? (round: number) => round < rounds : rounds;
  for (let round = 0; more(round); round++) {
    const arms = abbaOrder(plan.arms, round).filter((arm) => !plan.kept?.(arm, round));
    if (arms.length === 0) continue;
    plan.onRoundStart?.(round);
    const windows: Array<{ arm: A; window: W }> = [];
    for (const arm of arms) {
      if (plan.signal.aborted) throw plan.interrupted();
      const outcome = await plan.measure(arm, round);
      if (outcome.status === 'failed') return { status: 'failed', round, reason: outcome.reason };
      windows.push({ arm, window: outcome.window });
      await plan.onWindow?.(arm, round, outcome.window);
    }
    await plan.onRound?.(round, windows);
  }
  return { status: 'done' };
}

/** The windows of `rounds` rounds not kept yet. */
export function windowsLeft<A>(arms: readonly A[], rounds: number, kept: (arm: A, round: number) => boolean): number {
  let left = 0;
  for (let round = 0; round < rounds; round++) left += arms.filter((arm) => !kept(arm, round)).length;
  return left;
}
