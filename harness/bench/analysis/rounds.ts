/**
 * The one grouping of trials into rounds. Every statistic, stop rule, table and chart reaches trial
 * data through `groupRounds`, so they all count the same rounds: every round a trial was run in,
 * however many the plan started with.
 */
import type { ClientResult, Comparison, Trial } from '../record/schema.js';

/** A trial that measured: its clients' results count. */
export type OkTrial = Extract<Trial, { status: 'ok' }>;

/** One round of a comparison: the trial of each arm that ran in it (skipped trials are not runs). */
export interface Round {
  index: number;
  /** Arm id → that arm's trial in this round. */
  trials: ReadonlyMap<string, Trial>;
}

export function groupRounds(comparison: Comparison, trials: readonly Trial[]): Round[] {
  const byRound = new Map<number, Map<string, Trial>>();
  for (const t of trials) {
    if (t.comparisonId !== comparison.id || t.status === 'skipped') continue;
    const round = byRound.get(t.round) ?? new Map<string, Trial>();
    round.set(t.arm, t);
    byRound.set(t.round, round);
  }
  return [...byRound].sort(([a], [b]) => a - b).map(([index, arms]) => ({ index, trials: arms }));
}

/** The ok trial of `arm` in a round, or undefined. */
export function okTrial(round: Round, arm: string): OkTrial | undefined {
  const t = round.trials.get(arm);
  return t?.status === 'ok' ? t : undefined;
}

/** Whether every arm of the comparison measured in this round. */
export function isComplete(comparison: Comparison, round: Round): boolean {
  return comparison.arms.every((a) => okTrial(round, a.id) !== undefined);
}

/** Every ok client result of one arm over the rounds (for per-arm tables and charts). */
export function armResults(rounds: readonly Round[], arm: string): ClientResult[] {
  return rounds.flatMap((r) => okTrial(r, arm)?.clients ?? []);
}
