/**
 * The CI gate: threshold verdicts of a run and, against a baseline (one run or a set of runs), the
 * change of each graded ratio with its within-run 95% CI and its band (bands.ts), judged by
 * verdicts.ts: a change is a regression or an improvement only outside that band. Every run is read
 * through its analysis.
 */

import { UserError } from '../../core/errors.js';
import { shortList } from '../../core/wrap.js';
import { refuseSimulatedBesideReal } from '../../record/simulated.js';
import { fingerprintMismatches, type Machine } from '../../session/machine.js';
import { MIN_RUNS_TO_LEARN } from '../../stats/between-runs.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { analyze } from '../analysis/analyze.js';
import type { Analysis, MetricAnalysis } from '../analysis/types.js';
import { measuredLoop, measuresPlainAlone, type Run } from '../record/schema.js';
import type { Thresholds } from './thresholds.js';
import { measuredNothing, unmeasuredGraded } from './unmeasured.js';
import { type Change, gateExitCode, metricChange } from './verdicts.js';

export interface GateResult {
  runId: string;
  /** The baseline run's id, or "N runs" for a set; null without a baseline. */
  baselineId: string | null;
  /** The ids of every baseline run compared against. */
  baselineIds: string[];
  /** Baseline runs left out, each with why (measured differently, incomplete, the run itself). */
  setAside: string[];
  /** The runs the between-run band was learned from (fewer than 3: the default floors applied). */
  historyIds: string[];
  verdicts: MetricAnalysis[];
  changes: Change[];
  /** Fingerprint or setting fields that differ from the baseline's (only with --allow-mismatch). */
  mismatches: string[];
  /** Why the run as a whole cannot pass: incomplete, or ratios of the baseline it lacks. */
  problems: string[];
  noiseBand: number;
  exitCode: number;
  /** The run was made on gpushare's simulator (a real one is never gated against it): every output says so. */
  simulated?: boolean;
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
  differ('protocol loop', `${measuredLoop(before)}`, `${measuredLoop(now)}`);
  differ('alone', aloneText(before), aloneText(now));
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

/** What a run's slowdowns divide by: the plain process alone (since 2026-12-06), or each mode's own alone. */
const aloneText = (run: Run) => (run.plan.some(measuresPlainAlone) ? 'the plain process' : "each mode's own");

/**
 * Whether two runs' slowdowns divide by different alones: never compared, not even with --allow-mismatch,
 * as a simulated run beside a real one is not (an MPS client alone, say, differs from a plain one by 2–3%).
 */
const otherAlone = (run: Run, other: Run) => aloneText(run) !== aloneText(other);

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

const input = (m: MetricAnalysis) => ({
  id: m.metric.id,
  better: m.metric.better,
  value: m.stats.value,
  ci: m.stats.ci,
  perRound: m.metric.perRound,
});

/** Every metric both analyses have, with its change from `before` to `now`, against the default floor. */
export function changes(
  now: Analysis,
  before: Analysis,
  noiseBand: number,
  only: (m: MetricAnalysis) => boolean = () => true,
): Array<{ now: MetricAnalysis; before: MetricAnalysis; change: Change | null }> {
  const old = new Map(before.metrics.map((m) => [m.metric.id, m]));
  return now.metrics.filter(only).flatMap((m) => {
    const b = old.get(m.metric.id);
    if (!b) return [];
    const reference = {
      values: b.stats.value === null ? [] : [b.stats.value],
      cis: [b.stats.ci],
      perRound: [b.metric.perRound],
    };
    return [{ now: m, before: b, change: metricChange(input(m), reference, [], noiseBand) }];
  });
}

/**
 * The changes of `analysis`'s graded ratios against `references` (one or more analysed runs), their
 * between-run parts learned from `history` (analysed runs; fewer than 3: the default floors).
 */
export function gradedChanges(
  analysis: Analysis,
  references: readonly Analysis[],
  history: readonly Analysis[],
  noiseBand: number,
): Change[] {
  const find = (a: Analysis, id: string) => a.metrics.find((m) => m.metric.id === id);
  const graded = new Set(analysis.verdicts.map((v) => v.metric.id));
  return analysis.metrics
    .filter((m) => graded.has(m.metric.id))
    .flatMap((m) => {
      const id = m.metric.id;
      const measured = references.flatMap((r) => {
        const found = find(r, id);
        return found?.stats.value ? [found] : [];
      });
      const reference = {
        values: measured.map((x) => x.stats.value as number),
        cis: measured.map((x) => x.stats.ci),
        perRound: measured.map((x) => x.metric.perRound),
      };
      const learned = history.flatMap((h) => find(h, id)?.stats.value ?? []);
      const change = metricChange(input(m), reference, learned, noiseBand);
      return change ? [change] : [];
    });
}

/** Whether `other` may stand beside `run` as a baseline: what differs, one phrase each (empty: comparable). */
export function comparability(run: Run, other: Run): string[] {
  if (other.id === run.id) return ['it is the run being gated'];
  if (isSimulated(other.fingerprint) !== isSimulated(run.fingerprint))
    return [`one of the two was made on gpushare's simulator`];
  if (other.status !== 'complete') return [`it is ${other.status}, not complete`];
  if (other.contamination.length > 0) return [contaminatedText(other)];
  return [...measuredOtherwise(run, other), ...generationMismatches(run, other)];
}

/**
 * Whether two runs are of one harness generation: gpushare's version and the release lead before each
 * window (30 → 10 ms moved mps/gemm +1.5%, mps/infer +1.0%). Like the protocol loop, a baseline must share it.
 */
export function generationMismatches(now: Run, before: Run): string[] {
  const [lead, leadNow] = [before.config.releaseLeadMs, now.config.releaseLeadMs];
  return [
    ...(lead === leadNow ? [] : [`release lead: ${lead} ms before vs ${leadNow} ms now`]),
    ...(before.tool.version === now.tool.version
      ? []
      : [`gpushare version: ${before.tool.version} before vs ${now.tool.version} now`]),
  ];
}

/** How two runs were measured differently: GPU, driver and the other machine fields, and the settings. */
export function measuredOtherwise(run: Run, other: Run): string[] {
  return [...fingerprintMismatches(machine(run), machine(other)), ...settingMismatches(run, other)];
}

/** Why a run measured on a busy GPU (bench --allow-busy) is no baseline. */
function contaminatedText(other: Run): string {
  return `it was measured on a busy GPU (${shortList(other.contamination)}): its ratios are no reference`;
}

/**
 * Splits a set of runs into those measured like `run` and those set aside (each "<id>: why"). With
 * `allowMismatch`, runs that differ only in GPU, driver or settings are kept and their differences listed.
 */
export function sortBaselines(
  run: Run,
  candidates: readonly Run[],
  allowMismatch: boolean,
): { kept: Run[]; setAside: string[]; mismatches: string[] } {
  const kept: Run[] = [];
  const setAside: string[] = [];
  const mismatches: string[] = [];
  // A run found twice (two paths, a copy) is one run: counted and named once, under its id.
  const found = new Map<string, number>();
  for (const other of candidates) {
    found.set(other.id, (found.get(other.id) ?? 0) + 1);
    if ((found.get(other.id) as number) > 1) continue;
    const why = comparability(run, other);
    // In a set, a run of other comparisons (a sweep, a custom workload) is no baseline of this one.
    const plan = (r: Run) => r.plan.map((c) => c.id).join(', ');
    if (why.length === 0 && plan(other) !== plan(run)) {
      setAside.push(`${other.id}: other comparisons (${shortList([plan(other)])})`);
      continue;
    }
    const hard =
      other.id === run.id ||
      other.status !== 'complete' ||
      other.contamination.length > 0 ||
      isSimulated(other.fingerprint) !== isSimulated(run.fingerprint) ||
      otherAlone(run, other);
    if (why.length === 0) kept.push(other);
    else if (allowMismatch && !hard) {
      kept.push(other);
      mismatches.push(...why.map((w) => `${other.id}: ${w}`));
    } else setAside.push(`${other.id}: ${shortList(why)}`);
  }
  for (const [id, times] of found)
    if (times > 1) setAside.push(`${id}: found ${times} times (one run id), counted once`);
  return { kept, setAside, mismatches };
}

/**
 * Grades `run`, and compares it with `baseline`: one run (refused when measured differently, unless
 * allowMismatch) or a set of runs (those measured differently set aside, each named). The between-run
 * band is learned from `options.history` when given, else from a baseline set of 3 or more runs, else
 * the default floors apply.
 */
export function gate(
  run: Run,
  baseline: Run | readonly Run[] | null,
  thresholds: Thresholds,
  options: { allowMismatch: boolean; history?: readonly Run[] },
): GateResult {
  let baselines: Run[] = [];
  let mismatches: string[] = [];
  const setAside: string[] = [];
  if (baseline && !Array.isArray(baseline)) {
    const one = baseline as Run;
    refuseSimulatedBesideReal([run, one], 'gate a run against this baseline');
    mismatches = [...measuredOtherwise(run, one), ...generationMismatches(run, one)];
    if (otherAlone(run, one))
      throw new UserError(
        `refusing to compare runs whose slowdowns divide by different alones (${aloneText(one)} in ${one.id}, ${aloneText(run)} in ${run.id}): their ratios differ by what each mode costs a lone client, not by any change; gate against runs measured by the same gpushare`,
      );
    if (mismatches.length > 0 && !options.allowMismatch) {
      throw new UserError(
        `refusing to compare runs measured differently: ${shortList(mismatches)}; --allow-mismatch compares them anyway, listing every difference`,
      );
    }
    baselines = [one];
  } else if (baseline) {
    const sorted = sortBaselines(run, baseline as readonly Run[], options.allowMismatch);
    if (sorted.kept.length === 0)
      throw new UserError(
        `no baseline run was measured like run ${run.id}: ${sorted.setAside.join('; ')}; give runs of the same GPU model, driver and settings (--allow-mismatch keeps those that differ only so)`,
      );
    baselines = sorted.kept;
    setAside.push(...sorted.setAside);
    mismatches = sorted.mismatches;
  }
  let historyRuns: Run[] = [];
  if (options.history) {
    const sorted = sortBaselines(run, options.history, false);
    historyRuns = sorted.kept;
    setAside.push(...sorted.setAside.map((s) => `history ${s}`));
  } else if (baselines.length >= MIN_RUNS_TO_LEARN) historyRuns = baselines;
  const analysis = analyze(run, thresholds);
  const bases = baselines.map((b) => analyze(b, thresholds));
  const history = historyRuns === baselines ? bases : historyRuns.map((h) => analyze(h, thresholds));
  const found = gradedChanges(analysis, bases, history, thresholds.noiseBand);
  const problems: string[] = [];
  if (run.status !== 'complete')
    problems.push(
      `run ${run.id} is ${run.status}, not complete: finish it with gpushare bench --resume before gating it`,
    );
  const present = new Set(analysis.metrics.filter((m) => m.stats.value !== null).map((m) => m.metric.id));
  const missing = [
    ...new Set(
      bases.flatMap((base) =>
        base.verdicts.filter((v) => v.stats.value !== null && !present.has(v.metric.id)).map((v) => v.metric.id),
      ),
    ),
  ];
  if (missing.length > 0) problems.push(`ratios of the baseline this run did not measure: ${missing.join(', ')}`);
  // A graded ratio that was never measured, or a run that measured nothing, passes nothing.
  problems.push(...[measuredNothing(analysis) ?? [], unmeasuredGraded(run, analysis, thresholds)].flat());
  for (const [i, b] of baselines.entries()) {
    const base = bases[i] as Analysis;
    // A set sets such a run aside; one named baseline is named as the problem it is.
    if (b.contamination.length > 0) problems.push(`baseline ${b.id}: ${contaminatedText(b)}`);
    problems.push(
      ...[measuredNothing(base) ?? [], unmeasuredGraded(b, base, thresholds)]
        .flat()
        .map((line) => `baseline ${b.id}: ${line}; gate against a baseline that measured it`),
    );
  }
  const ids = baselines.map((b) => b.id);
  return {
    runId: run.id,
    baselineId: ids.length === 0 ? null : ids.length === 1 ? (ids[0] as string) : `${ids.length} runs`,
    baselineIds: ids,
    setAside,
    historyIds: historyRuns.map((h) => h.id),
    verdicts: analysis.verdicts,
    changes: found,
    mismatches,
    problems,
    noiseBand: thresholds.noiseBand,
    ...(isSimulated(run.fingerprint) ? { simulated: true } : {}),
    exitCode: gateExitCode(
      analysis.verdicts.map((v) => v.verdict),
      found.map((c) => c.status),
      problems.length,
    ),
  };
}
