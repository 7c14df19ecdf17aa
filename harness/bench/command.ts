/** `gpushare bench`: a single run, a multi-GPU host run (--gpus), or --resume of either; --dry-run prints the plan. */

import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { recordKindIn } from '../record/kinds.js';
import { loadThresholds } from './gate/thresholds.js';
import { benchGpus, resumeGpus } from './gpus.js';
import { BENCH_FLAGS, type BenchOptions, estimateSeconds, resolveBenchOptions } from './options.js';
import { buildPlan, type Plan } from './plan.js';
import type { Config } from './record/schema.js';
import { benchOne, resumeOne } from './run.js';
import { plannedTrials } from './scheduler.js';

/** `gpushare bench`: flags, options, run. */
export const benchCommand = defineCommand({
  flags: BENCH_FLAGS,
  rest: true,
  epilogue:
    'exit 0: measured, and every graded ratio passed its threshold; 1: a graded ratio failed its threshold; 2: a usage error, or this machine cannot bench; 3: a graded ratio is inconclusive or invalid, or a mode or comparison measured nothing; 129/130/131/143: interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM (continue with --resume <dir>)',
  resolve: async (args) => resolveBenchOptions(args, await loadThresholds(args.config)),
  run: bench,
});

async function bench(options: BenchOptions, deps: AppDeps): Promise<number> {
  if (options.dryRun) {
    deps.out(planText(options.config, buildPlan(options.config, null)));
    return ExitCode.ok;
  }
  if (options.gpus !== null) return benchGpus(options, options.gpus, deps);
  if (options.resume !== null)
    return (await recordKindIn(options.resume)) === 'host'
      ? resumeGpus(options.resume, options.style, deps)
      : resumeOne(options.resume, options.style, deps);
  return benchOne(options, deps);
}

function planText(config: Config, plan: Plan): string {
  const lines = ['gpushare bench --dry-run: nothing is measured', ''];
  for (const mode of plan.modes) {
    if (mode.status !== 'ran') {
      lines.push(`${mode.mode}: ${mode.reason}`);
      continue;
    }
    for (const c of plan.comparisons.filter((x) => x.mode === mode.mode)) {
      const rounds = config.roundPolicy.minRounds;
      lines.push(
        `${c.id}: ${c.tenants !== undefined ? `${c.tenants} tenants of one process` : `${c.clientEnv.length} client(s)`}, arms ${c.arms.map((a) => a.id).join(' ')}, at least ${rounds} rounds (ABBA) = ${c.arms.length * rounds} trials`,
      );
      lines.push(`  ${argvText(c.workload.argv)}`); // quoted and escaped: a custom command is the user's verbatim argv
    }
  }
  const trials = plannedTrials({ plan: plan.comparisons, config });
  const policy = config.roundPolicy;
  lines.push(
    '',
    `${plan.comparisons.length} comparisons, at least ${trials} trials, about ${Math.round(estimateSeconds(config, plan.comparisons))} s (estimate), plus up to ${policy.timeBudgetS} s of extra rounds (up to ${policy.maxRounds} per comparison) until every headline CI is within ±${(policy.ciTarget * 100).toFixed(1)}% and every graded one within ±${(policy.gradedCiTarget * 100).toFixed(1)}%`,
  );
  return `${lines.join('\n')}\n`;
}
