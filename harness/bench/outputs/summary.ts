/** The console summary: a pure function of a run's analysis, laid out for an 80-column terminal. */

import { termText } from '../../core/escape/terminal.js';
import { TERMINAL_COLUMNS, wrapLine } from '../../core/wrap.js';
import { SIMULATED_TEXT, simulatedJson } from '../../record/simulated.js';
import { timeAccountText } from '../../session/time-account.js';
import { gpuAt, isSimulated } from '../../system/nvidia/schema.js';
import { LOOP_OVERHEAD_LIMIT_PCT } from '../../workload/protocol.js';
import { overLimit } from '../analysis/clients.js';
import { type Analysis, type MetricAnalysis, REPORT_HALF_WIDTH } from '../analysis/types.js';
import { measuredFromAnalysis, modeDecision } from '../analysis/which-mode.js';
import { verdictsJson } from '../gate/outputs.js';
import { benchOutcome } from '../outcome.js';
import type { Run, Stop } from '../record/schema.js';
import { metricsJson } from './metrics-table.js';
import { decisionLine } from './which-mode-text.js';

/** Why a comparison stopped adding rounds, in words (progress already printed the "stopped:" line). */
const STOP_WORDS: Record<Stop['reason'], string> = {
  'ci-target': 'CI on target',
  'max-rounds': 'reached --max-rounds',
  'time-budget': 'time budget spent',
  'fixed-rounds': 'fixed rounds',
  invalid: 'invalid, no more rounds',
  aborted: 'aborted',
  unsupported: 'not supported here',
};

/** A ratio's cells: the table's columns, the verdict last. */
function cells(m: MetricAnalysis) {
  const s = m.stats;
  return {
    name: m.metric.name,
    median: s.value === null ? 'n/a' : `${s.value.toFixed(3)}×`,
    ci: s.ci ? `[${s.ci[0].toFixed(3)}, ${s.ci[1].toFixed(3)}]` : 'n/a',
    halfWidth: s.halfWidth === null ? 'n/a' : `${(s.halfWidth * 100).toFixed(2)}%`,
    better: m.metric.better,
    // The verdict as gate and the report print it: "none" where no threshold grades the ratio.
    verdict: m.threshold ? `${m.verdict} (${m.threshold.text})` : m.verdict,
  };
}

/**
 * The ratios grouped under their comparison (its rounds and why it stopped, said once), each with the
 * direction that is better; columns sized to what they hold, and a verdict that would pass the
 * terminal's edge put on a line of its own.
 */
function table(analysis: Analysis, shown: readonly MetricAnalysis[]): string[] {
  const rows = shown.map((m) => ({ m, c: cells(m) }));
  const width = (key: keyof ReturnType<typeof cells>, title: string) =>
    Math.max(title.length, ...rows.map((r) => r.c[key].length));
  const w = { name: width('name', 'ratio'), median: width('median', 'median'), ci: width('ci', 'within-run 95% CI') };
  const line = (name: string, median: string, ci: string, hw: string, better: string, verdict: string) => {
    const text = `  ${name.padEnd(w.name)}  ${median.padStart(w.median)}  ${ci.padEnd(w.ci)}  ${hw.padStart(6)}  ${better.padEnd(6)}`;
    if (verdict === '') return [text.trimEnd()];
    if (text.length + 2 + verdict.length <= TERMINAL_COLUMNS) return [`${text}  ${verdict}`];
    return [text.trimEnd(), `${' '.repeat(Math.max(4, TERMINAL_COLUMNS - verdict.length))}${verdict}`];
  };
  const lines = line('ratio', 'median', 'within-run 95% CI', '±%', 'better', 'verdict');
  let group: string | null = null;
  for (const { m, c } of rows) {
    if (m.metric.comparisonId !== group) {
      group = m.metric.comparisonId;
      const ca = analysis.comparisons.find((x) => x.comparison.id === group);
      const stop = ca?.stop ? `, ${STOP_WORDS[ca.stop.reason]}` : '';
      lines.push(ca ? `${group} (${ca.completeRounds} rounds${stop})` : group);
    }
    lines.push(...line(c.name, c.median, c.ci, c.halfWidth, c.better, c.verdict));
  }
  return lines;
}

/** The plain-English verdict: bench's exit code and why, and which mode measured cheaper. */
function verdictLines(run: Run, analysis: Analysis): string[] {
  if (run.status !== 'complete')
    return [
      `verdict: none, the run is ${run.status}: its ratios cover only the rounds it finished (gpushare bench --resume <dir> continues it)`,
    ];
  const outcome = benchOutcome(run, analysis);
  const graded = analysis.verdicts.filter((v) => v.threshold !== null);
  const failed = graded.filter((v) => v.verdict === 'fail');
  const lines =
    outcome.exitCode === 0
      ? [
          graded.length > 0
            ? `verdict: PASS (exit 0): all ${graded.length} graded ratio${graded.length > 1 ? 's' : ''} passed ${graded.length > 1 ? 'their thresholds' : 'its threshold'}`
            : 'verdict: measured (exit 0): no threshold grades these ratios',
        ]
      : [
          failed.length > 0
            ? `verdict: FAIL (exit ${outcome.exitCode}): ${failed.length} of ${graded.length} graded ratios failed ${failed.length > 1 ? 'their thresholds' : 'its threshold'}`
            : `verdict: INCONCLUSIVE (exit ${outcome.exitCode}): ${outcome.problems.length} problem${outcome.problems.length > 1 ? 's' : ''}`,
          ...outcome.problems.map((p) => `- ${p}`),
        ];
  const decided = decisionLine(modeDecision(measuredFromAnalysis(run, analysis)));
  if (decided !== null) lines.push(decided);
  return lines;
}

/**
 * `all`: every ratio; otherwise the headline and graded ratios, with the rest one flag or the report
 * away. Lines are folded at `columns` (Infinity: not folded).
 */
export function summaryText(
  run: Run,
  analysis: Analysis,
  dir: string,
  all = false,
  columns = TERMINAL_COLUMNS,
): string {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  const counts = new Map<string, number>();
  for (const t of run.trials) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const lines = [
    ...(isSimulated(run.fingerprint) ? [SIMULATED_TEXT] : []),
    `run ${run.id} (${run.status})`,
    `${gpu?.name ?? 'unknown GPU'}, driver ${run.fingerprint.driverVersion ?? '?'}, CUDA ${run.fingerprint.cudaVersion ?? '?'}; trials: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}`,
  ];
  for (const mode of run.modes) if (mode.status !== 'ran') lines.push(`${mode.mode}: ${mode.status}: ${mode.reason}`);
  lines.push(...ratioLines(analysis, all ? analysis.metrics : analysis.verdicts));
  for (const warning of run.warnings) lines.push(`warning: ${warning}`);
  if (run.sampler.error) lines.push(`warning: ${run.sampler.error}`);
  if (run.timeAccount) lines.push(timeAccountText(run.timeAccount));
  lines.push(...loopSummary(analysis));
  lines.push(...verdictLines(run, analysis));
  // Each line shown escaped (the GPU's name, reasons and warnings are the run's text), then folded;
  // the run's directory last and whole, for a script or a reader to copy.
  return `${[...lines.flatMap((line) => wrapLine(termText(line), columns)), termText(`results: ${dir}`)].join('\n')}\n`;
}

/** The ratios `shown` as a table, how many more there are, then each one's reasons, warnings and diagnosis. */
function ratioLines(analysis: Analysis, shown: Analysis['metrics']): string[] {
  if (shown.length === 0) return [];
  const lines = ['', ...table(analysis, shown)];
  const more = analysis.metrics.length - shown.length;
  if (more > 0) lines.push(`(${more} more ratios in the report and in gpushare show --all)`);
  lines.push('');
  for (const v of shown) for (const reason of [...v.reasons, ...v.warnings]) lines.push(`${v.metric.id}: ${reason}`);
  for (const v of shown)
    if (v.diagnosis.length > 0)
      lines.push(
        `${v.metric.id}: wider than ±${((v.target ?? REPORT_HALF_WIDTH) * 100).toFixed(0)}%: ${v.diagnosis.join('; ')}`,
      );
  return lines;
}

/** One line on gpushare's own loop over every process checked (a flagged comparison also says so in its notes); none before 2026-11-27. */
function loopSummary(analysis: Analysis): string[] {
  const checks = analysis.comparisons.flatMap((c) => c.loopCheck.checks);
  if (checks.length === 0) return [];
  const worst = Math.max(...checks.map((c) => c.overhead.overheadPct));
  const over = checks.filter(overLimit).length;
  return [
    `protocol loop: at most ${worst >= 0 ? '+' : ''}${worst.toFixed(2)}% of a request beyond a bare loop of the same step (${checks.length} process checks, each where it ran alone; ${over === 0 ? 'none' : over} over the ${LOOP_OVERHEAD_LIMIT_PCT}% limit)`,
  ];
}

/** A run's analysis as JSON: `report --json` and `show --json` print this. */
export function summaryJson(run: Run, analysis: Analysis) {
  const gpu = gpuAt(run.fingerprint, run.config.gpuIndex);
  return {
    run: {
      id: run.id,
      status: run.status,
      createdAt: run.createdAt,
      finishedAt: run.finishedAt,
      gpu: gpu?.name ?? null,
      driver: run.fingerprint.driverVersion,
      cuda: run.fingerprint.cudaVersion,
      ...simulatedJson(run.fingerprint),
    },
    verdicts: verdictsJson(analysis.verdicts),
    metrics: metricsJson(analysis),
    modes: run.modes.map((m) => ({ mode: m.mode, status: m.status, reason: m.reason })),
    stops: run.stops,
    loopChecks: analysis.comparisons.flatMap((c) =>
      c.loopCheck.checks.map((x) => ({ comparison: c.comparison.id, ...x })),
    ),
    ...(run.timeAccount ? { time: run.timeAccount } : {}),
  };
}
