/**
 * bench's outcome, the one policy behind its exit code and its summary's verdict: a pure function of
 * a run and its analysis. bench is the CI gate on GPU pods: 1 when a graded threshold fails; 3 when a
 * graded ratio is inconclusive, invalid or not measured at all (its comparison skipped as unsupported
 * too), when a mode or comparison measured nothing, or when the run measured nothing at all; 0 otherwise.
 */
import { ExitCode } from '../core/errors.js';
import { unsupportedHere } from './analysis/analyze.js';
import type { Analysis } from './analysis/types.js';
import { measuredNothing, unmeasuredGraded } from './gate/unmeasured.js';
import type { ModeRecord, Run } from './record/schema.js';

export interface BenchOutcome {
  exitCode: number;
  /** Why the exit code is not 0, one line each (failed thresholds first). */
  problems: string[];
}

/** Every mode the run asked for was skipped (MIG disabled, say): it measured nothing at all. */
export function everyModeSkipped(modes: readonly Pick<ModeRecord, 'status'>[]): boolean {
  return modes.length > 0 && modes.every((m) => m.status === 'skipped');
}

export function benchOutcome(run: Run, analysis: Analysis): BenchOutcome {
  const problems = [
    ...(everyModeSkipped(run.modes)
      ? [`nothing was measured: every mode asked for was skipped (${run.modes.map((m) => m.mode).join(', ')})`]
      : []),
    ...run.modes.filter((m) => m.status === 'failed').map((m) => `${m.mode} measured nothing: ${m.reason}`),
    ...analysis.comparisons
      .filter((c) => c.completeRounds === 0 && !unsupportedHere(c))
      .map((c) => `${c.comparison.id} measured nothing: no round completed${c.failure ? ` (${c.failure})` : ''}`),
    ...unmeasuredGraded(run, analysis, analysis.thresholds),
  ];
  // Each comparison skipped as unsupported is no failure; all of them is a run that measured nothing.
  const nothing = measuredNothing(analysis);
  if (problems.length === 0 && nothing !== null) problems.push(nothing);
  const graded = analysis.verdicts.filter((v) => v.threshold !== null);
  const doubtful = graded.filter((v) => v.verdict === 'inconclusive' || v.verdict === 'invalid');
  problems.push(...doubtful.map((v) => `${v.metric.id} is ${v.verdict}${v.reasons[0] ? `: ${v.reasons[0]}` : ''}`));
  if (graded.some((v) => v.verdict === 'fail'))
    return {
      exitCode: ExitCode.fail,
      problems: [
        ...graded
          .filter((v) => v.verdict === 'fail')
          .map((v) => `${v.metric.id} failed its threshold ${v.threshold?.text}: ${v.reasons[0] ?? ''}`),
        ...problems,
      ],
    };
  return { exitCode: problems.length > 0 ? ExitCode.inconclusive : ExitCode.ok, problems };
}
