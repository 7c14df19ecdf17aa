/** `gpushare gate <run> [--baseline <run>]`: verdicts and regressions, with CI-friendly outputs. */
import type { GateArgs } from '../cli.js';
import type { AppDeps } from '../deps.js';
import { gateJson, gateJunit, gateMarkdown, gateText } from '../export/gate-outputs.js';
import { gate } from '../gate.js';
import { appendOutputFile, loadRun, writeOutputFile } from '../run/store.js';
import { analyze } from '../analysis/analyze.js';
import { checkPatterns, loadThresholds } from '../thresholds.js';

export async function gateCommand(options: GateArgs, deps: AppDeps, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const run = await loadRun(options.run);
  // Without --config, the run is graded by the thresholds it was measured under.
  const thresholds = options.config ? await loadThresholds(options.config) : run.config.thresholds;
  if (options.config) checkPatterns(thresholds, analyze(run, thresholds).metrics.map((m) => m.metric.id), options.config);
  const baseline = options.baseline ? await loadRun(options.baseline) : null;
  const result = gate(run, baseline, thresholds, { allowMismatch: options.allowMismatch ?? false });
  deps.out(options.json ? gateJson(result) : gateText(result));
  if (options.junit) await writeOutputFile(options.junit, gateJunit(result));
  if (env.GITHUB_STEP_SUMMARY) await appendOutputFile(env.GITHUB_STEP_SUMMARY, gateMarkdown(result));
  return result.exitCode;
}
