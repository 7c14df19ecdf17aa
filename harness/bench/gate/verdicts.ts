/**
 * The gate's verdicts, what CI acts on: how a ratio moved against its baseline (the change, its within-run
 * CI, its band and its status: the one definition of a regression) and the gate's exit code. Pure; the
 * gate (gate.ts) reads the runs and their analyses and asks these.
 */
import { ExitCode } from '../../core/errors.js';
import { classifyAgainstBand, combineHalfWidths, intervalHalfWidthLog } from '../../stats/between-runs.js';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP, seedOf } from '../../stats/bootstrap.js';
import type { Verdict } from '../analysis/types.js';
import { type Band, bandOf, betweenRun } from './bands.js';

/** How a metric moved against the baseline. `unclear`: no within-run CI of the change (too few rounds), so no band. */
export type ChangeStatus = 'regression' | 'improvement' | 'unchanged' | 'unclear';

export interface Change {
  metricId: string;
  better: 'higher' | 'lower';
  value: number;
  /** The baseline's value: one run's median, or the geometric mean of several runs' medians. */
  baselineValue: number;
  /** How many baseline runs measured this ratio. */
  baselineRuns: number;
  /** value ÷ baselineValue. */
  change: number;
  /** The change's within-run 95% CI: what the rounds of these runs alone say. */
  ci: [number, number] | null;
  /** The band the change was judged against; null without a within-run CI. */
  band: Band | null;
  status: ChangeStatus;
}

/**
 * How a change of `change` (now ÷ baseline) stands against its band: `unchanged` inside it (its edges
 * included), `regression` or `improvement` outside it; `unclear` without a within-run CI to build it.
 */
export function classifyChange(change: number, better: 'higher' | 'lower', band: Band | null): ChangeStatus {
  return band === null ? 'unclear' : classifyAgainstBand(change, better, band.halfWidthLog);
}

/** A metric in the reference runs (those that measured it): each run's median and within-run 95% CI. */
export interface Reference {
  values: number[];
  cis: Array<[number, number] | null>;
  /** Each reference run's per-round values: for runs of 3–5 rounds, too few for an order-statistic CI. */
  perRound?: number[][];
}

/** Rounds each run needs for the bootstrap CI of a change when either has too few for its own CI. */
export const MIN_ROUNDS_FOR_CHANGE = 3;

/**
 * How `now` moved from its reference (one run, or the geometric mean of several): the value ratio,
 * its within-run 95% CI, the band (its between-run part learned from `history`, other runs' medians
 * of this ratio) and the status. The one definition of a regression.
 *
 * The change's within-run CI adds the two runs' own CIs in quadrature on the log scale; against
 * several runs only the new run's, as the reference's uncertainty is in the between-run part (its
 * 1/k term). Runs of 3–5 rounds have no CI of their own (MIN_ROUNDS_FOR_CI): against one such run,
 * a seeded bootstrap of the ratio of the two medians stands in.
 */
export function metricChange(
  now: {
    id: string;
    better: 'higher' | 'lower';
    value: number | null;
    ci: [number, number] | null;
    perRound?: number[];
  },
  reference: Reference,
  history: readonly number[],
  noiseBand: number,
): Change | null {
  const values = reference.values.filter((v) => v > 0);
  // NaN for a missing value: not > 0, so no change.
  const value = now.value ?? Number.NaN;
  if (!(value > 0) || values.length === 0) return null;
  const referenceValue = Math.exp(values.reduce((s, v) => s + Math.log(v), 0) / values.length);
  const change = value / referenceValue;
  const referenceCi = values.length === 1 ? (reference.cis[0] ?? null) : null;
  const usable = (ci: [number, number] | null): ci is [number, number] => ci !== null && ci[0] > 0;
  const withinLog =
    usable(now.ci) && (values.length > 1 || usable(referenceCi))
      ? combineHalfWidths(intervalHalfWidthLog(now.ci), usable(referenceCi) ? intervalHalfWidthLog(referenceCi) : 0)
      : null;
  const ci: [number, number] | null =
    withinLog !== null
      ? [change * Math.exp(-withinLog), change * Math.exp(withinLog)]
      : values.length === 1
        ? bootstrapChangeCi(now.id, now.perRound, reference.perRound?.[0])
        : null;
  const band = ci ? bandOf(betweenRun(now.id, history, values.length), ci, noiseBand) : null;
  return {
    metricId: now.id,
    better: now.better,
    value,
    baselineValue: referenceValue,
    baselineRuns: values.length,
    change,
    ci,
    band,
    status: classifyChange(change, now.better, band),
  };
}

function bootstrapChangeCi(id: string, now?: number[], before?: number[]): [number, number] | null {
  if (!now || !before || now.length < MIN_ROUNDS_FOR_CHANGE || before.length < MIN_ROUNDS_FOR_CHANGE) return null;
  return bootstrapRatioOfMediansCI(now, before, { ...DEFAULT_BOOTSTRAP, seed: seedOf(`change:${id}`) });
}

/**
 * The gate's exit code, the verdict CI acts on: 1 when a graded ratio failed or a change is a regression;
 * else 3 when anything is in doubt (a problem with the run or its baselines, an invalid or inconclusive
 * verdict); else 0. An `unclear` change (too few rounds for a band) alone does not fail or doubt the run.
 */
export function gateExitCode(
  verdicts: readonly Verdict[],
  statuses: readonly ChangeStatus[],
  problems: number,
): number {
  const failed = verdicts.includes('fail') || statuses.includes('regression');
  const doubtful = problems > 0 || verdicts.includes('invalid') || verdicts.includes('inconclusive');
  return failed ? ExitCode.fail : doubtful ? ExitCode.inconclusive : ExitCode.ok;
}
