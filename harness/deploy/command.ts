/** `gpushare artifacts` and `gpushare plan`: production files for a GPU, and the answer to "which mode?". */
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { TERMINAL_COLUMNS } from '../core/wrap.js';
import { advise } from './advice.js';
import { artifacts } from './artifacts.js';
import { fleetBundle } from './fleet/files.js';
import { fleetPlanJson, fleetPlanLines, fleetPlanTerminal } from './fleet/render.js';
import {
  ARTIFACTS_FLAGS,
  PLAN_FLAGS,
  type PlanOptions,
  resolveArtifactsOptions,
  resolvePlanOptions,
} from './options.js';
import { planBundle } from './plan-files.js';
import { planJson, planTerminal, planText, serverOutput } from './plan-render.js';
import { planFacts } from './plan-sources.js';
import { writeBundle } from './write-bundle.js';

/** `gpushare artifacts`: flags, options, run. */
export const artifactsCommand = defineCommand({
  flags: ARTIFACTS_FLAGS,
  resolve: resolveArtifactsOptions,
  run: artifacts,
});

/** `gpushare plan`: flags, options, run. */
export const planCommand = defineCommand({ flags: PLAN_FLAGS, resolve: resolvePlanOptions, run: plan });

/** The terminal's width for the one-screen answer: the terminal's own up to TERMINAL_COLUMNS, which a pipe gets. */
function screenWidth(deps: AppDeps): number {
  return deps.terminal.isTty ? Math.min(deps.terminal.columns || TERMINAL_COLUMNS, TERMINAL_COLUMNS) : TERMINAL_COLUMNS;
}

/** Facts (plan-sources.ts) → the decision (advise) → each output: the terminal or JSON, and the --out files. */
async function plan(options: PlanOptions, deps: AppDeps): Promise<number> {
  const facts = await planFacts(options);
  if (facts.kind === 'fleet') {
    deps.out(options.json ? fleetPlanJson(facts) : fleetPlanTerminal(facts));
    const bundle = options.out ? fleetBundle(facts, options, fleetPlanLines(facts).join('\n')) : null;
    if (options.out && bundle)
      await writeBundle({ dir: options.out, force: options.force }, bundle.files, bundle.index, deps);
    else if (options.out) deps.err(`gpushare plan: no files written to ${argText(options.out)}: no mode is advised\n`);
    return facts.choice === null ? ExitCode.inconclusive : ExitCode.ok;
  }
  if (facts.kind === 'server') {
    deps.out(serverOutput(facts, options.json));
    return facts.answer.mode === null ? ExitCode.inconclusive : ExitCode.ok;
  }
  if (facts.otherGpu !== null) deps.err(`gpushare plan: warning: ${facts.otherGpu}\n`);
  const advice = advise(facts.request, facts.gpu, facts.measured);
  deps.out(options.json ? planJson(advice, facts) : planTerminal(advice, facts, screenWidth(deps), options.explain));
  const bundle = options.out ? await planBundle(advice, facts, options, planText(advice, facts)) : null;
  if (options.out && bundle)
    await writeBundle({ dir: options.out, force: options.force }, bundle.files, bundle.index, deps);
  return ExitCode.ok;
}
