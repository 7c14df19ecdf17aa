/** `gpushare bench`: a single run, a multi-GPU host run (--gpus), or --resume of either; --dry-run prints the plan. */

import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { argvText, termJson } from '../core/escape/terminal.js';
import { commandLines } from '../core/wrap.js';
import { recordKindIn } from '../record/kinds.js';
import { checkNewRunDirectory } from '../record/store.js';
import { refuseBusy } from '../session/preflight.js';
import { usableCpus } from '../system/cpus.js';
import { type Fingerprint, gpuAt } from '../system/nvidia/schema.js';
import { possibleMetricIds } from './analysis/metrics.js';
import { checkPatterns, loadThresholds } from './gate/thresholds.js';
import { benchGpus, resumeGpus } from './gpus.js';
import {
  BENCH_FLAGS,
  type BenchOptions,
  ESTIMATE_ASSUMPTIONS_S,
  estimateSeconds,
  resolveBenchOptions,
} from './options.js';

/** The share of an estimate inside windows, %. */
const measuringShare = (e: { wallS: number; windowsS: number }) => (e.wallS > 0 ? (100 * e.windowsS) / e.wallS : 0);

import { buildPlan, type Plan } from './comparisons.js';
import { everyModeSkipped } from './outcome.js';
import type { Config } from './record/schema.js';
import { BUSY_CONSEQUENCE, benchFingerprint, benchOne, refuseBlockedBench, resumeOne } from './run.js';
import { plannedTrials } from './scheduler.js';

/** `gpushare bench`: flags, options, run. */
export const benchCommand = defineCommand({
  flags: BENCH_FLAGS,
  rest: true,
  epilogue:
    'exit 0: measured, and every graded ratio passed its threshold; 1: a graded ratio failed its threshold; 2: a usage error, or this machine cannot bench; 3: a graded ratio is inconclusive, invalid or not measured (its comparison skipped or failed), a mode or comparison measured nothing, or the run measured nothing (every mode or comparison skipped); --dry-run exits as the real run would before measuring (0, 2, or 3 when every mode would be skipped); 129/130/131/143: interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM (continue with --resume <dir>)',
  resolve: async (args) => resolveBenchOptions(args, await loadThresholds(args.config)),
  run: bench,
});

async function bench(options: BenchOptions, deps: AppDeps): Promise<number> {
  if (options.dryRun) return dryRun(options, deps);
  if (options.gpus !== null) return benchGpus(options, options.gpus, deps);
  if (options.resume !== null)
    return (await recordKindIn(options.resume)) === 'host'
      ? resumeGpus(options.resume, options.style, deps)
      : resumeOne(options.resume, options.style, deps);
  return benchOne(options, deps);
}

/**
 * bench --dry-run: the plan this machine would run, printed first (as JSON with --json) so that it
 * shows anywhere, then every check the real run makes before it measures, with the real run's
 * refusal and exit code: the thresholds file against the plan's ratios, the output directory, this
 * machine's readiness and a busy GPU. Nothing is started: a command after -- is not run (gpushare
 * check runs it), and no directory is made.
 */
async function dryRun(options: BenchOptions, deps: AppDeps): Promise<number> {
  const { config } = options;
  // This machine's refusal is kept until the plan is printed: the plan shows anywhere.
  let fingerprint: Fingerprint | null = null;
  let refusal: UserError | null = null;
  // A --gpu this machine does not have is the flag's value to fix, not the machine: refused before the plan.
  let noSuchGpu = false;
  try {
    const found = await benchFingerprint(config, deps);
    noSuchGpu = !found.nvidiaSmi.error && !gpuAt(found, config.gpuIndex);
    refuseBlockedBench(config, found, [config.gpuIndex]);
    refuseBusy(found, config.gpuIndex, options.allowBusy, BUSY_CONSEQUENCE);
    fingerprint = found;
  } catch (error) {
    if (!(error instanceof UserError) || noSuchGpu) throw error;
    refusal = error;
  }
  const plan = buildPlan(config, fingerprint);
  // The estimate counts prestarts by this machine's cores (unknown where the machine was refused).
  const cpus = fingerprint ? usableCpus(fingerprint.host).count : null;
  deps.out(
    options.style === 'json'
      ? termJson(planJson(config, plan, cpus))
      : planText(config, plan, cpus, deps.terminal.columns),
  );
  if (options.thresholdsFile)
    checkPatterns(config.thresholds, possibleMetricIds(plan.comparisons), options.thresholdsFile);
  if (options.out !== null) await checkNewRunDirectory(options.out, 'bench');
  if (refusal) throw refusal;
  if (everyModeSkipped(plan.modes)) {
    throw new UserError(
      `nothing would be measured: every mode asked for is skipped on this machine (${plan.modes.map((m) => m.mode).join(', ')}); bench would exit 3`,
      ExitCode.inconclusive,
    );
  }
  return ExitCode.ok;
}

/** The plan as JSON: what --dry-run --json prints. */
function planJson(config: Config, plan: Plan, cpus: number | null) {
  const policy = config.roundPolicy;
  return {
    dryRun: true,
    modes: plan.modes.map((m) => ({ mode: m.mode, status: m.status, reason: m.reason })),
    comparisons: plan.comparisons.map((c) => ({
      id: c.id,
      mode: c.mode,
      workload: c.workload.name,
      argv: c.workload.argv,
      clients: c.clientEnv.length,
      arms: c.arms.map((a) => a.id),
      minTrials: c.arms.length * policy.minRounds,
    })),
    minTrials: plannedTrials({ plan: plan.comparisons, config }),
    estimateS: Math.round(estimateSeconds(config, plan.comparisons, cpus).wallS),
    estimateMeasuringPct: Math.round(measuringShare(estimateSeconds(config, plan.comparisons, cpus))),
    roundPolicy: policy,
  };
}

/** What the round policy may add after the first rounds: none where --max-rounds is --rounds. */
function extraRoundsText(policy: Config['roundPolicy']): string {
  const extra = policy.maxRounds - policy.minRounds;
  if (extra <= 0) return `no extra rounds (--max-rounds ${policy.maxRounds} is --rounds)`;
  return `plus up to ${policy.timeBudgetS} s of extra rounds (up to ${extra} more per comparison, ${policy.maxRounds} in all) until every headline CI is within ±${(policy.ciTarget * 100).toFixed(1)}% and every graded one within ±${(policy.gradedCiTarget * 100).toFixed(1)}%`;
}

function planText(config: Config, plan: Plan, cpus: number | null, columns: number): string {
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
      // Quoted and escaped (a custom command is the user's verbatim argv), folded as a shell reads it.
      lines.push(
        ...commandLines(
          c.workload.argv.map((word) => argvText([word])),
          columns,
        ),
      );
    }
  }
  const trials = plannedTrials({ plan: plan.comparisons, config });
  const policy = config.roundPolicy;
  const estimate = estimateSeconds(config, plan.comparisons, cpus);
  const a = ESTIMATE_ASSUMPTIONS_S;
  lines.push(
    '',
    `${plan.comparisons.length} comparisons, at least ${trials} trials, about ${Math.round(estimate.wallS)} s (estimate), ${extraRoundsText(policy)}`,
    `estimate: ${Math.round(measuringShare(estimate))}% of it inside measurement windows, assuming ${a.coldStart} s to start a comparison's clients cold (and each workload's plain process, once), ${a.prestartedStart} s prestarted and ${a.switchedStart} s switched from the previous comparison's processes${config.freshClients ? ' (neither with --fresh-clients)' : ''}, and ${a.outside} s outside comparisons`,
  );
  return `${lines.join('\n')}\n`;
}
