/** `gpushare show <run>`: the summary bench ends with, for any saved run, printed (or as JSON) and nothing written. */
import { analyze } from '../analysis/analyze.js';
import type { AppDeps } from '../deps.js';
import { ExitCode } from '../errors.js';
import { summaryJson, summaryText } from '../export/summary.js';
import { loadRun } from '../run/store.js';
import { checkPatterns, loadThresholds } from '../thresholds.js';

export async function showCommand(args: { run: string; all?: boolean; json?: boolean; config?: string }, deps: AppDeps): Promise<number> {
  const run = await loadRun(args.run);
  const thresholds = args.config ? await loadThresholds(args.config) : run.config.thresholds;
  const analysis = analyze(run, thresholds);
  if (args.config) checkPatterns(thresholds, analysis.metrics.map((m) => m.metric.id), args.config);
  deps.out(args.json ? `${JSON.stringify(summaryJson(run, analysis), null, 2)}\n` : summaryText(run, analysis, args.run, args.all ?? false));
  return ExitCode.ok;
}
