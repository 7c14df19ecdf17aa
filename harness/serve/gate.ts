/**
 * The gate of a server run (`gpushare gate <server run> --baseline <server run>`): per mode and number of
 * copies, how each headline ratio against the dedicated copy moved from the baseline run, judged as
 * bench's gate judges a change (stats/between-runs.ts `classifyAgainstBand`): `unchanged` inside its band,
 * `regression` or `improvement` outside it. Pure: the command reads the runs, this compares them.
 */
import { refuseSimulatedBesideReal } from '../record/simulated.js';
import { fingerprintMismatches } from '../session/machine.js';
import { analyzeServe, type GroupAnalysis, type RatioName } from './analysis.js';
import type { ServeRun } from './record.js';
import { type ServeChange, serveChange, serveGateExitCode } from './verdicts.js';

/** The ratios gated, and which way is better: the two the summary and `plan` act on. */
export const GATED_RATIOS: ReadonlyArray<{ name: RatioName; better: 'higher' | 'lower' }> = [
  { name: 'throughput', better: 'higher' },
  { name: 'ttftP99', better: 'lower' },
];

export interface ServeGateResult {
  runId: string;
  baselineId: string;
  changes: ServeChange[];
  /** Fingerprint or setting fields that differ (only with --allow-mismatch). */
  mismatches: string[];
  /** Why the run cannot pass: incomplete, a group of the baseline it did not measure, nothing to compare. */
  problems: string[];
  exitCode: number;
}

/** What differs between two server runs that changes what their ratios mean, one phrase each. */
export function serveMismatches(now: ServeRun, before: ServeRun): string[] {
  const machine = (r: ServeRun) => ({ fingerprint: r.fingerprint, gpuIndex: r.gpuIndex });
  const out = fingerprintMismatches(machine(now), machine(before));
  const s = (r: ServeRun) => r.settings;
  const fields: Array<[string, (r: ServeRun) => unknown]> = [
    ['measure', (r) => s(r).measure],
    ['server command', (r) => s(r).serve],
    ['api', (r) => s(r).api],
    ['requests resident per copy', (r) => s(r).concurrency],
    ['input tokens', (r) => `${s(r).inputTokens}${s(r).inputTokensMax === null ? '' : `-${s(r).inputTokensMax}`}`],
    ['output tokens', (r) => s(r).outputTokens],
    ['window', (r) => `${s(r).windowMs} ms`],
    ['MPS thread percentage', (r) => s(r).threadPct],
    ['MPS memory cap', (r) => s(r).mpsMemCap],
  ];
  for (const [name, get] of fields)
    if (get(now) !== get(before)) out.push(`${name}: ${String(get(before))} before vs ${String(get(now))} now`);
  return out;
}

const groupName = (g: Pick<GroupAnalysis, 'mode' | 'copies'>) => `${g.mode} ×${g.copies}`;

/**
 * Compares `run` with `baseline`, both server runs of `bench --serve` (a capacity run has no rounds).
 * Exit 1 on a regression; else 3 when anything is in doubt (a problem: incomplete, a group missing,
 * nothing compared); else 0.
 */
export function serveGate(run: ServeRun, baseline: ServeRun, mismatches: readonly string[]): ServeGateResult {
  refuseSimulatedBesideReal([run, baseline], 'gate a server run against this baseline');
  const now = analyzeServe(run).groups.filter((g) => g.mode !== 'dedicated');
  const before = analyzeServe(baseline).groups.filter((g) => g.mode !== 'dedicated');
  const problems: string[] = [];
  if (run.status !== 'complete')
    problems.push(`run ${run.id} is ${run.status}, not complete: finish it with gpushare bench --resume`);
  const changes: ServeChange[] = [];
  for (const b of before) {
    if (b.status !== 'measured' || b.ratios === null) continue;
    const n = now.find((g) => g.mode === b.mode && g.copies === b.copies);
    if (n?.status !== 'measured' || n.ratios === null) {
      problems.push(`${groupName(b)}: measured in the baseline, ${n ? n.status : 'not planned'} in this run`);
      continue;
    }
    for (const { name, better } of GATED_RATIOS) {
      const c = serveChange(groupName(b), name, better, n.ratios[name], b.ratios[name]);
      if (c) changes.push(c);
    }
  }
  // As bench's gate: an unclear change alone (too few rounds for a CI) neither fails nor doubts the run,
  // but a comparison in which no change had a band compared nothing.
  if (changes.every((c) => c.status === 'unclear'))
    problems.push(
      changes.length === 0
        ? 'no ratio was measured in both runs: nothing to compare'
        : 'no change has a band (each needs 6 rounds in both runs for its CI): nothing was compared',
    );
  const exitCode = serveGateExitCode(changes, problems.length);
  return { runId: run.id, baselineId: baseline.id, changes, mismatches: [...mismatches], problems, exitCode };
}
