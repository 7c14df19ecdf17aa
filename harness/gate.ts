/**
 * The CI gate: threshold verdicts of a run and, against a baseline, the change of each headline
 * ratio with its bootstrap CI. A change is a regression only when its whole CI lies beyond the
 * noise band in the worse direction.
 */
import { UserError, ExitCode } from './errors.js';
import { gpuAt, type Fingerprint, type Run } from './run/schema.js';
import { bootstrapRatioOfMediansCI, DEFAULT_BOOTSTRAP, seedOf } from './stats/bootstrap.js';
import { MIN_ROUNDS_FOR_CI } from './stats/summary.js';
import type { Metric } from './stats/metrics.js';
import { runVerdicts, type MetricVerdict } from './stats/verdicts.js';
import type { Thresholds } from './thresholds.js';

/** How a metric moved against the baseline. `unclear`: the CI reaches past the noise band but not wholly. */
export type ChangeStatus = 'regression' | 'improvement' | 'unchanged' | 'unclear';

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
  verdicts: MetricVerdict[];
  changes: Change[];
  /** Fingerprint fields that differ from the baseline's (only with --allow-mismatch). */
  mismatches: string[];
  noiseBand: number;
  exitCode: number;
}

/** A fingerprint and the GPU of it under test. */
export interface Machine {
  fingerprint: Fingerprint;
  gpuIndex: number;
}

/** GPU model, driver, MIG mode and compute mode: runs that differ in these measure different things. */
export function fingerprintMismatches(now: Machine, before: Machine): string[] {
  const gpu = (m: Machine) => gpuAt(m.fingerprint, m.gpuIndex);
  const fields: Array<[string, (m: Machine) => unknown]> = [
    ['GPU model', (m) => gpu(m)?.name],
    ['driver', (m) => m.fingerprint.driverVersion],
    ['MIG mode', (m) => gpu(m)?.migModeCurrent],
    ['compute mode', (m) => gpu(m)?.computeMode],
  ];
  return fields.flatMap(([name, get]) => (get(now) === get(before) ? [] : [`${name}: ${String(get(before))} before vs ${String(get(now))} now`]));
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

/** How `now` moved from `before`: value ratio, its bootstrap CI (ratio of medians), and the status. */
export function metricChange(now: Metric, before: Metric, band: number): Change | null {
  if (now.value === null || before.value === null) return null;
  const enough = now.perRound.length >= MIN_ROUNDS_FOR_CI && before.perRound.length >= MIN_ROUNDS_FOR_CI;
  const ci = enough ? bootstrapRatioOfMediansCI(now.perRound, before.perRound, { ...DEFAULT_BOOTSTRAP, seed: seedOf(`change:${now.id}`) }) : null;
  return { metricId: now.id, better: now.better, value: now.value, baselineValue: before.value, change: now.value / before.value, ci, status: classifyChange(ci, now.better, band) };
}

export function gate(run: Run, baseline: Run | null, thresholds: Thresholds, options: { allowMismatch: boolean }): GateResult {
  const mismatches = baseline ? fingerprintMismatches(machine(run), machine(baseline)) : [];
  if (mismatches.length > 0 && !options.allowMismatch) {
    throw new UserError(`refusing to compare runs of different machines (${mismatches.join('; ')}): use --allow-mismatch to compare anyway`);
  }
  const verdicts = runVerdicts(run, thresholds);
  const base = baseline ? new Map(runVerdicts(baseline, thresholds).map((v) => [v.metric.id, v])) : new Map<string, MetricVerdict>();
  const changes: Change[] = verdicts.flatMap(({ metric }) => {
    const before = base.get(metric.id);
    const change = before ? metricChange(metric, before.metric, thresholds.noiseBand) : null;
    return change ? [change] : [];
  });
  const failed = verdicts.some((v) => v.verdict === 'fail') || changes.some((c) => c.status === 'regression');
  const doubtful = verdicts.some((v) => v.verdict === 'invalid' || v.verdict === 'inconclusive');
  return {
    runId: run.id,
    baselineId: baseline?.id ?? null,
    verdicts,
    changes,
    mismatches,
    noiseBand: thresholds.noiseBand,
    exitCode: failed ? ExitCode.fail : doubtful ? ExitCode.inconclusive : ExitCode.ok,
  };
}
