/** `gpushare gate <run> [--baseline <run>]`: verdicts and regressions, with CI-friendly outputs. */
import { type ArgsOf, defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { UserError } from '../../core/errors.js';
import { shortList } from '../../core/wrap.js';
import { openRun } from '../../record/evidence.js';
import { kindText, recordKindIn } from '../../record/kinds.js';
import { appendOutputFile, writeOutputFile } from '../../record/store.js';
import { analyze } from '../analysis/analyze.js';
import { possibleMetricIds } from '../analysis/metrics.js';
import { loadRun } from '../record/store.js';
import { loadBaselineRuns } from './baselines.js';
import { gate } from './gate.js';
import { gateJson, gateJunit, gateMarkdown, gateText } from './outputs.js';
import { checkPatterns, loadThresholds } from './thresholds.js';

const GATE_POSITIONALS = { run: { type: 'string', demandOption: true, describe: 'run directory' } } as const;
const GATE_FLAGS = {
  baseline: {
    type: 'string',
    describe:
      'run to compare against, or a directory or quoted glob of runs (3 or more: the between-run band is learned from them; runs measured differently are set aside)',
  },
  history: {
    type: 'string',
    describe:
      'directory or quoted glob of runs to learn the between-run band from (default: the --baseline runs when 3 or more)',
  },
  config: { type: 'string', describe: 'thresholds file (YAML or JSON)' },
  junit: { type: 'string', describe: 'write a JUnit XML report here' },
  json: { type: 'boolean', describe: 'print the result as JSON' },
  'allow-mismatch': { type: 'boolean', describe: 'compare runs from different GPUs, drivers, MIG or compute modes' },
} as const;
type GateArgs = ArgsOf<typeof GATE_FLAGS> & ArgsOf<typeof GATE_POSITIONALS>;

/** `gpushare gate`: flags, options, run. */
export const gateCommand = defineCommand({
  flags: GATE_FLAGS,
  positionals: GATE_POSITIONALS,
  resolve: (args) => args,
  run: (args: GateArgs, deps) => runGate(args, deps),
});

/** Grades `options.run`; GITHUB_STEP_SUMMARY in `env` gets the markdown too. */
export async function runGate(options: GateArgs, deps: AppDeps, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const dir = await openRun(options.run);
  const kind = await recordKindIn(dir);
  if (kind === 'probe' || kind === 'capacity' || kind === 'mix')
    throw new UserError(
      `gate grades bench runs (ratios, their thresholds and baselines); ${options.run} is ${kindText(kind)}, which has none: gpushare show ${options.run} prints its results, gpushare report ${options.run} writes its report`,
    );
  const run = await loadRun(dir);
  // Without --config, the run is graded by the thresholds it was measured under.
  const thresholds = options.config ? await loadThresholds(options.config) : run.config.thresholds;
  if (options.config)
    // Against what the run planned too: a rule on a ratio it planned and did not measure is no typo,
    // and the gate names it as unmeasured (see unmeasured.ts).
    checkPatterns(
      thresholds,
      [...new Set([...analyze(run, thresholds).metrics.map((m) => m.metric.id), ...possibleMetricIds(run.plan)])],
      options.config,
    );
  const named = options.baseline ? await loadBaselineRuns(options.baseline, '--baseline') : null;
  const history = options.history ? await loadBaselineRuns(options.history, '--history') : null;
  if (named && named.runs.length === 0)
    throw new UserError(`--baseline ${options.baseline}: no run there could be read: ${shortList(named.unreadable)}`);
  const baseline = named ? (named.single ? (named.runs[0] ?? null) : named.runs) : null;
  const result = gate(run, baseline, thresholds, {
    allowMismatch: options.allowMismatch ?? false,
    ...(history ? { history: history.runs } : {}),
  });
  result.setAside.unshift(...(named?.unreadable ?? []), ...(history?.unreadable ?? []).map((u) => `history ${u}`));
  deps.out(options.json ? gateJson(result) : gateText(result));
  if (options.junit) await writeOutputFile(options.junit, gateJunit(result));
  if (env.GITHUB_STEP_SUMMARY) await appendOutputFile(env.GITHUB_STEP_SUMMARY, gateMarkdown(result));
  return result.exitCode;
}
