/**
 * The fleet's decisions, pure functions of the runs and their analyses: the band a group's ratios make
 * and the outlier rule against it, when a group is too small to have outliers, and the checks that
 * flag a node (contamination, throttling, an incomplete run, the run's own invalid or failed verdicts).
 */

import { median, medianAbsoluteDeviation } from 'simple-statistics';
import { unsupportedHere } from '../../bench/analysis/analyze.js';
import { DEFAULT_THRESHOLDS } from '../../bench/gate/thresholds.js';
import type { Run } from '../../bench/record/schema.js';
import { intervalSide } from '../../stats/intervals.js';
import { MAD_TO_SD, OUTLIER_MADS } from '../../stats/statistics.js';
import { throttleReasons } from '../../system/nvidia/smi-csv.js';
import type { FleetMember, NodeFlag } from './analyze.js';

/** How many robust standard deviations (1.4826 × MAD) from the group's median the band reaches: the per-round outlier rule's 3. */
export const FLEET_K = OUTLIER_MADS;
/** The band's least half-width, a fraction of the group's median: the gate's noise band (±5%). */
export const FLEET_FLOOR = DEFAULT_THRESHOLDS.noiseBand;
/** The fewest runs a group needs before any of them can be an outlier: with 2, neither is the odd one. */
export const MIN_RUNS_FOR_OUTLIERS = 3;
/** Throttle reasons that do not flag a node: a GPU at full load holds its power cap in every arm (validity.ts checks that the arms agree). */
const EXPECTED_THROTTLE = new Set(['sw_power_cap']);

/** The outlier rule in words, as the reports print it. */
export const OUTLIER_RULE =
  `A node is an outlier for a ratio when that ratio's whole within-run 95% CI lies outside its group's band: the median of the group's values ± max(${FLEET_K} × 1.4826 × MAD, ${FLEET_FLOOR * 100}% of the median). ` +
  `1.4826 × MAD estimates the standard deviation of normal data, so ${FLEET_K} of them is the per-round outlier rule's reach (99.7% of identical nodes fall inside), and the median and MAD are not moved by the outlier itself. ` +
  `The ${FLEET_FLOOR * 100}% floor is the gate's noise band: repeat runs on one H100 moved every headline ratio by −0.6% to +1.6%, so nodes that agree to within a few tenths of a percent (MAD near 0) are not flagged for differences no decision depends on. ` +
  `A ratio without a CI (fewer than 6 rounds) is not tested; groups of fewer than ${MIN_RUNS_FOR_OUTLIERS} runs have no outliers (a group of 1 has nothing to differ from; of 2, neither is the odd one).`;

/** The band of a ratio in a group: values outside it are far from the group. Values in the ratio's unit (×). */
export interface Band {
  median: number;
  /** 1.4826 × MAD of the group's values: a robust standard deviation. */
  scale: number;
  /** max(FLEET_K × scale, FLEET_FLOOR × |median|). */
  halfWidth: number;
  lo: number;
  hi: number;
  /** True when the floor, not the spread, set the half-width. */
  floored: boolean;
}

/** Which side of the band a node's whole CI lies on; null: inside or straddling it, or no CI. */
export type OutlierSide = 'above' | 'below' | null;

/** The median ± max(k × 1.4826 × MAD, floor × |median|) band of `values` (at least one value). */
export function robustBand(values: readonly number[], k = FLEET_K, floor = FLEET_FLOOR): Band {
  const mid = median([...values]);
  const scale = MAD_TO_SD * medianAbsoluteDeviation([...values]);
  const spread = k * scale;
  const least = floor * Math.abs(mid);
  const halfWidth = Math.max(spread, least);
  return { median: mid, scale, halfWidth, lo: mid - halfWidth, hi: mid + halfWidth, floored: least >= spread };
}

/** The outlier rule: a CI wholly above or below the band. */
export function outlierSide(ci: readonly [number, number] | null, band: Pick<Band, 'lo' | 'hi'>): OutlierSide {
  return ci === null ? null : intervalSide(ci, [band.lo, band.hi]);
}

/** Why a group cannot have outliers (a run alone, two runs, or runs of only two GPUs), or null: it can. */
export function untestedReason(runs: number, gpus: number): string | null {
  if (runs === 1) return 'a group of 1 run cannot have outliers: there is no other run to differ from';
  if (runs < MIN_RUNS_FOR_OUTLIERS)
    return `a group of ${runs} runs cannot have outliers: with two, neither is the odd one`;
  if (gpus < MIN_RUNS_FOR_OUTLIERS)
    return `a group of ${runs} runs on ${gpus} GPUs cannot have outliers: with two GPUs, neither is the odd one`;
  return null;
}

/** The checks that flag a node, whatever its group: contamination, throttling, an incomplete run, invalid or failed verdicts. */
export function nodeFlags(m: FleetMember): NodeFlag[] {
  const flags: NodeFlag[] = [];
  if (m.run.contamination.length > 0)
    flags.push({
      kind: 'contaminated',
      text: `the GPU was busy when the run started: ${m.run.contamination.join('; ')}`,
    });
  const throttled = throttling(m.run);
  if (throttled) flags.push({ kind: 'throttled', text: throttled });
  for (const text of incompleteness(m)) flags.push({ kind: 'incomplete', text });
  const invalid = m.analysis.verdicts.filter((v) => v.verdict === 'invalid');
  const [first] = invalid;
  if (first !== undefined)
    flags.push({
      kind: 'invalid',
      text: `${invalid.map((v) => v.metric.id).join(', ')}: ${first.reasons[0] ?? 'a validity check failed'}`,
    });
  for (const v of m.analysis.verdicts.filter((x) => x.verdict === 'fail'))
    flags.push({ kind: 'fail', text: `${v.metric.id}: ${v.reasons[0] ?? 'fails its threshold'}` });
  return flags;
}

/** Throttle reasons other than the power cap seen while trials ran, with how many samples showed each. */
function throttling(run: Run): string | null {
  const during = run.samples.filter((s) => s.trialId !== null);
  const counts = new Map<string, number>();
  for (const s of during)
    for (const reason of throttleReasons(s.clocksEventReasons))
      if (!EXPECTED_THROTTLE.has(reason)) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  if (counts.size === 0) return null;
  return `${[...counts].map(([r, n]) => `${r} in ${n}`).join(', ')} of ${during.length} samples taken during trials`;
}

/** What a run lacks to be complete: its status, a mode that could not be set up, a comparison with no complete round (one this machine cannot run is skipped, not lacking). */
function incompleteness(m: FleetMember): string[] {
  const out: string[] = [];
  if (m.run.status !== 'complete') out.push(`the run is ${m.run.status}, not complete`);
  for (const mode of m.run.modes)
    if (mode.status === 'failed') out.push(`${mode.mode} failed: ${mode.reason ?? 'no reason recorded'}`);
  for (const c of m.analysis.comparisons) {
    const ran = m.run.modes.find((x) => x.mode === c.comparison.mode)?.status !== 'skipped';
    if (ran && c.completeRounds === 0 && !unsupportedHere(c))
      out.push(`${c.comparison.id} has no complete round${c.failure ? `: ${c.failure}` : ''}`);
  }
  return out;
}
