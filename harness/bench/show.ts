/** `gpushare show <run>`: the summary bench ends with, for any saved run, printed (or as JSON) and nothing written. */

import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { termJson } from '../core/escape/terminal.js';
import { openRun } from '../record/evidence.js';
import { analyze } from './analysis/analyze.js';
import { checkPatterns, loadThresholds } from './gate/thresholds.js';
import { summaryJson, summaryText } from './outputs/summary.js';
import { loadRun } from './record/store.js';

const SHOW_POSITIONALS = { run: { type: 'string', demandOption: true, describe: 'run directory' } } as const;
const SHOW_FLAGS = {
  all: { type: 'boolean', describe: 'every ratio of the run, not only the headline and graded ones' },
  json: {
    type: 'boolean',
    describe: "the run's verdicts, every ratio and its stops as JSON (as report --json)",
  },
  config: { type: 'string', describe: 'thresholds file (YAML or JSON)' },
} as const;

/** `gpushare show`: flags, options, run. */
export const showCommand = defineCommand({
  flags: SHOW_FLAGS,
  positionals: SHOW_POSITIONALS,
  resolve: (args) => args,
  run: show,
});

async function show(args: ArgsOf<typeof SHOW_FLAGS> & ArgsOf<typeof SHOW_POSITIONALS>, deps: AppDeps): Promise<number> {
  const run = await loadRun(await openRun(args.run));
  const thresholds = args.config ? await loadThresholds(args.config) : run.config.thresholds;
  const analysis = analyze(run, thresholds);
  if (args.config)
    checkPatterns(
      thresholds,
      analysis.metrics.map((m) => m.metric.id),
      args.config,
    );
  deps.out(args.json ? termJson(summaryJson(run, analysis)) : summaryText(run, analysis, args.run, args.all ?? false));
  return ExitCode.ok;
}
