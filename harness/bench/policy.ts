/**
 * When a comparison stops adding rounds: a pure function of its analysis, so the scheduler and
 * every report see the same rounds and numbers by construction.
 */
import type { ComparisonAnalysis } from './analysis/types.js';
import type { RoundPolicy, Stop } from './record/schema.js';

/** The ratios whose CI the rounds aim at, with their half-width now (null: no CI yet). */
export function targeted(
  analysis: ComparisonAnalysis,
): Array<{ id: string; halfWidth: number | null; target: number }> {
  return analysis.metrics.flatMap((m) =>
    m.target === null ? [] : [{ id: m.metric.id, halfWidth: m.stats.halfWidth, target: m.target }],
  );
}

/**
 * After `roundsRun` rounds: null to run another, or why to stop. `overBudget`: this comparison has
 * used its share of the time budget for rounds beyond the minimum.
 */
export function stopDecision(
  analysis: ComparisonAnalysis,
  policy: RoundPolicy,
  roundsRun: number,
  overBudget: boolean,
): Stop['reason'] | null {
  if (roundsRun < policy.minRounds) return null;
  if (policy.maxRounds <= policy.minRounds) return 'fixed-rounds';
  // More rounds cannot make an invalid comparison valid (a failed trial, throttling in one arm…).
  if (analysis.validity.invalid.length > 0) return 'invalid';
  const aims = targeted(analysis);
  if (aims.every((a) => a.halfWidth !== null && a.halfWidth <= a.target)) return 'ci-target';
  if (roundsRun >= policy.maxRounds) return 'max-rounds';
  if (overBudget) return 'time-budget';
  return null;
}

/**
 * A comparison's share of the time budget for extra rounds: what is left of it, split evenly
 * among the comparisons still to reach their minimum (this one included). Time a comparison does
 * not use stays in the pool for the ones after it.
 */
export function budgetShareS(policy: RoundPolicy, spentS: number, comparisonsLeft: number): number {
  return Math.max(0, policy.timeBudgetS - spentS) / Math.max(1, comparisonsLeft);
}
