/**
 * The CI gate: threshold verdicts of a run and, against a baseline, the change of each headline
 * ratio with its bootstrap CI. A change is a regression only when its whole CI lies beyond the
 * noise band in the worse direction. Both runs are read through their analyses.
 */

import { ExitCode, UserError } from '../../core/errors.js';
import { shortList } from '../../core/wrap.js';
import { refuseSimulatedBesideReal } from '../../record/simulated.js';
import { fingerprintMismatches, type Machine } from '../../session/machine.js';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP, seedOf } from '../../stats/bootstrap.js';
import { analyze } from '../analysis/analyze.js';
import type { Metric } from '../analysis/metrics.js';
import type { Analysis, MetricAnalysis } from '../analysis/types.js';
import type { Run } from '../record/schema.js';
import type { Thresholds } from './thresholds.js';
import { measuredNothing, unmeasuredGraded } from './unmeasured.js';

/** How a metric moved against the baseline. `unclear`: the CI reaches past the noise band but not wholly. */
export type ChangeStatus = 'regression' | 'improvement' | 'unchanged' | 'unclear';

/** Rounds each run needs before the change between them gets a bootstrap CI. */
export const MIN_ROUNDS_FOR_CHANGE = 3;

export interface Change {
  metricId: string;
  better: 'higher' | 'lower';
  value: number;
  baselineValue: number;
  /** value ÷ baselineValue. */
  change: number;
  ci: [number, number] | null;
  status: ChangeStatus;
}

export interface GateResult {
  runId: string;
  baselineId: string | null;
  verdicts: MetricAnalysis[];
  changes: Change[];
  /** Fingerprint or setting fields that differ from the baseline's (only with --allow-mismatch). */
  mismatches: string[];
  /** Why the run as a whole cannot pass: incomplete, or ratios of the baseline it lacks. */
  problems: string[];
  noiseBand: number;
  exitCode: number;
}

// GPU model, driver, MIG mode and compute mode: runs that differ in these measure different things.
export { fingerprintMismatches };

/**
 * Settings that change what a ratio means: windows, client counts, CPU pinning, MPS limits, and each
 * shared comparison's workload. One short line per difference, "<what>: <before's> before vs <now's>
 * now" (fleet report rewords that form), never a JSON dump of a workload.
 */
export function settingMismatches(now: Run, before: Run): string[] {
  const out: string[] = [];
  const differ = (what: string, old: unknown, current: unknown) => {
    if (JSON.stringify(old) !== JSON.stringify(current))
      out.push(`${what}: ${settingText(old)} before vs ${settingText(current)} now`);
  };
  differ('window', `${before.config.windowMs} ms`, `${now.config.windowMs} ms`);
  differ('clients', before.config.clientCounts ?? before.config.clients, now.config.clientCounts ?? now.config.clients);
  differ('CPU pinning', before.config.cpuPin, now.config.cpuPin);
  differ('MPS thread percentage', before.config.mps.threadPct, now.config.mps.threadPct);
  differ('MPS memory limit', before.config.mps.memLimit, now.config.mps.memLimit);
  for (const c of now.plan) {
    const old = before.plan.find((b) => b.id === c.id);
    if (!old) continue;
    const params = [...new Set([...Object.keys(old.workload.params), ...Object.keys(c.workload.params)])];
    for (const key of params) differ(`${c.id} ${key}`, old.workload.params[key], c.workload.params[key]);
    // Paths differ between machines; what a custom workload does is its command.
    if (!c.workload.builtin || !old.workload.builtin)
      differ(`${c.id} command`, old.workload.argv.join(' '), c.workload.argv.join(' '));
    const env = (x: typeof c) => x.clientEnv.map((e) => Object.keys(e).sort().join(',') || 'none').join('; ');
    differ(`${c.id} client environment`, env(old), env(c));
  }
  return out;
}

/** A setting's value in a few words: null and undefined as unset, a list joined, an object as key=value. */
function settingText(value: unknown): string {
  if (value === undefined || value === null) return 'unset';
  if (Array.isArray(value)) return value.map(settingText).join(',');
  if (typeof value === 'object')
    return Object.entries(value)
      .map(([k, v]) => `${k}=${settingText(v)}`)
      .join(' ');
  return String(value);
}

const machine = (run: Run): Machine => ({ fingerprint: run.fingerprint, gpuIndex: run.config.gpuIndex });

export function classifyChange(ci: [number, number] | null, better: 'higher' | 'lower', band: number): ChangeStatus {
  if (ci === null) return 'unclear';
  const [lo, hi] = ci;
  const worse = better === 'higher' ? hi < 1 - band : lo > 1 + band;
  const improved = better === 'higher' ? lo > 1 + band : hi < 1 - band;
  if (worse) return 'regression';
  if (improved) return 'improvement';
  return lo >= 1 - band && hi <= 1 + band ? 'unchanged' : 'unclear';
}

/** How `now` moved from `before`: value ratio, its bootstrap CI (ratio of medians), and the status. The one definition of a regression. */
export function metricChange(now: Metric, before: Metric, band: number): Change | null {
  if (now.value === null || before.value === null) return null;
  const enough = now.perRound.length >= MIN_ROUNDS_FOR_CHANGE && before.perRound.length >= MIN_ROUNDS_FOR_CHANGE;
  const ci = enough
    ? bootstrapRatioOfMediansCI(now.perRound, before.perRound, {
        ...DEFAULT_BOOTSTRAP,
        seed: seedOf(`change:${now.id}`),
      })
    : null;
  return {
    metricId: now.id,
    better: now.better,
    value: now.value,
    baselineValue: before.value,
    change: now.value / before.value,
    ci,
    status: classifyChange(ci, now.better, band),
  };
}

/** Every metric both analyses have, with its change from `before` to `now`. */
export function changes(
  now: Analysis,
  before: Analysis,
  band: number,
  only: (m: MetricAnalysis) => boolean = () => true,
): Array<{ now: MetricAnalysis; before: MetricAnalysis; change: Change | null }> {
  const old = new Map(before.metrics.map((m) => [m.metric.id, m]));
  return now.metrics.filter(only).flatMap((m) => {
    const b = old.get(m.metric.id);
    return b ? [{ now: m, before: b, change: metricChange(m.metric, b.metric, band) }] : [];
  });
}

export function gate(
  run: Run,
  baseline: Run | null,
  thresholds: Thresholds,
  options: { allowMismatch: boolean },
): GateResult {
  if (baseline) refuseSimulatedBesideReal([run, baseline], 'gate a run against this baseline');
  const mismatches = baseline
    ? [...fingerprintMismatches(machine(run), machine(baseline)), ...settingMismatches(run, baseline)]
    : [];
  if (mismatches.length > 0 && !options.allowMismatch) {
    throw new UserError(
      `refusing to compare runs measured differently: ${shortList(mismatches)}; --allow-mismatch compares them anyway, listing every difference`,
    );
  }
  const analysis = analyze(run, thresholds);
  const base = baseline ? analyze(baseline, thresholds) : null;
  const graded = new Set(analysis.verdicts.map((v) => v.metric.id));
  const found = base
    ? changes(analysis, base, thresholds.noiseBand, (m) => graded.has(m.metric.id)).flatMap((c) =>
        c.change ? [c.change] : [],
      )
    : [];
  const problems: string[] = [];
  if (run.status !== 'complete')
    problems.push(
      `run ${run.id} is ${run.status}, not complete: finish it with gpushare bench --resume before gating it`,
    );
  const present = new Set(analysis.metrics.filter((m) => m.stats.value !== null).map((m) => m.metric.id));
  const missing = base
    ? base.verdicts.filter((v) => v.stats.value !== null && !present.has(v.metric.id)).map((v) => v.metric.id)
    : [];
  if (missing.length > 0) problems.push(`ratios of the baseline this run did not measure: ${missing.join(', ')}`);
  // A graded ratio that was never measured, or a run that measured nothing, passes nothing.
  problems.push(...[measuredNothing(analysis) ?? [], unmeasuredGraded(run, analysis, thresholds)].flat());
  if (baseline && base)
    problems.push(
      ...[measuredNothing(base) ?? [], unmeasuredGraded(baseline, base, thresholds)]
        .flat()
        .map((line) => `baseline ${baseline.id}: ${line}; gate against a baseline that measured it`),
    );
  const failed = analysis.verdicts.some((v) => v.verdict === 'fail') || found.some((c) => c.status === 'regression');
  const doubtful =
    problems.length > 0 || analysis.verdicts.some((v) => v.verdict === 'invalid' || v.verdict === 'inconclusive');
  return {
    runId: run.id,
    baselineId: baseline?.id ?? null,
    verdicts: analysis.verdicts,
    changes: found,
    mismatches,
    problems,
    noiseBand: thresholds.noiseBand,
    exitCode: failed ? ExitCode.fail : doubtful ? ExitCode.inconclusive : ExitCode.ok,
  };
}
