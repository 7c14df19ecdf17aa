/**
 * The search for the highest rate that passes, written once (capacity's points, mix's victim alone, a
 * server run's capacity groups): where it starts, the bracket and its bisection (`nextRate`), and the
 * loop that measures a step at each rate, keeps it, and stops on the policy's word, a failed step or
 * an interruption.
 */
import type { StepVerdict } from '../workload/open-loop.js';

/** How the rate search goes: where it starts, how close the bracket must get, how many steps at most. */
export interface SearchPolicy {
  startQps: number;
  /** Stop once the first failing rate is within this fraction above the highest passing one. */
  tolerance: number;
  maxSteps: number;
  /** Below this total rate, give up: nothing passes. */
  minQps: number;
}

/** A step as the search reads it: the total rate tried and whether it passed. */
export interface RatedStep {
  totalQps: number;
  verdict: StepVerdict;
}

/**
 * The next total rate to try, or null to stop. Doubles from the start while steps pass; halves while
 * they fail; then bisects between the highest passing and the lowest failing (or invalid) rate.
 */
export function nextRate(steps: ReadonlyArray<RatedStep>, policy: SearchPolicy): number | null {
  if (steps.length === 0) return policy.startQps;
  if (steps.length >= policy.maxSteps) return null;
  const passing = steps.filter((s) => s.verdict === 'pass').map((s) => s.totalQps);
  const lo = passing.length > 0 ? Math.max(...passing) : null;
  const above = steps.filter((s) => s.verdict !== 'pass' && (lo === null || s.totalQps > lo)).map((s) => s.totalQps);
  const hi = above.length > 0 ? Math.min(...above) : null;
  if (hi === null) return (lo as number) * 2;
  if (lo === null) return hi / 2 >= policy.minQps ? hi / 2 : null;
  return hi / lo - 1 <= policy.tolerance + 1e-9 ? null : (lo + hi) / 2;
}

/** What one step gave: a measurement, or why it failed (a result, not an exception: it ends the search). */
export type StepOutcome<S> = { status: 'measured'; step: S } | { status: 'failed'; reason: string };

/** How a search ends: the policy stopped it, a step failed, or a signal came before its next step. */
export type SearchOutcome = { status: 'done' } | { status: 'failed'; reason: string } | { status: 'interrupted' };

export interface RateSearch<S, V extends RatedStep> {
  policy: SearchPolicy;
  /** The steps kept so far, which the search appends to (a resumed search goes on from them). */
  steps: S[];
  /** Measures `rate`; `index` is the step's place in `steps`. */
  step(rate: number, index: number): Promise<StepOutcome<S>>;
  /** Each step's verdict, in order. */
  verdicts(steps: readonly S[]): readonly V[];
  /** A step was kept: its verdict, every verdict so far, and the rate tried next (null: none). Save it, say how it went. */
  onStep?(kept: { step: S; verdict: V; verdicts: readonly V[]; next: number | null }): Promise<void>;
  signal: AbortSignal;
  /** The error an abort throws, checked before each step; without it, an abort ends the search `interrupted`. */
  interrupted?(): Error;
}

/** Runs `search` from the rate its kept steps call for until the policy stops it, a step fails or a signal comes. */
export async function runRateSearch<S, V extends RatedStep>(search: RateSearch<S, V>): Promise<SearchOutcome> {
  let rate = nextRate(search.verdicts(search.steps), search.policy);
  while (rate !== null) {
    if (search.signal.aborted) {
      if (search.interrupted) throw search.interrupted();
      return { status: 'interrupted' };
    }
    const outcome = await search.step(rate, search.steps.length);
    if (outcome.status === 'failed') return { status: 'failed', reason: outcome.reason };
    search.steps.push(outcome.step);
    const verdicts = search.verdicts(search.steps);
    rate = nextRate(verdicts, search.policy);
    await search.onStep?.({ step: outcome.step, verdict: verdicts.at(-1) as V, verdicts, next: rate });
  }
  return { status: 'done' };
}
