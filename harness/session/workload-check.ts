/**
 * gpushare check as a command runs it, and before a run of a custom command: the workload checked
 * with Ctrl-C handled (the workload stopped, the interruption's exit code), before any run directory exists.
 */

import type { AppDeps } from '../core/deps.js';
import { Interrupted, UserError } from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { Reaper } from '../system/proc/reaper.js';
import { type CheckOutcome, type CheckSettings, checkWorkload } from '../workload/check.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { watchInterrupts } from './interrupts.js';

/** Checks one workload command; a first SIGINT/SIGTERM stops it and throws Interrupted, a second kills it at once. */
export async function runCheck(settings: CheckSettings, deps: AppDeps): Promise<CheckOutcome> {
  const reaper = new Reaper();
  const interrupts = watchInterrupts(() => reaper.killAll());
  try {
    const outcome = await checkWorkload(deps.runner, deps.clock, settings, reaper, interrupts.abort);
    if (interrupts.signal !== null) throw new Interrupted(interrupts.signal);
    return outcome;
  } finally {
    interrupts.dispose();
  }
}

/** What a run says of its workloads and timeouts: all that the check before it needs. */
export interface RunWorkloads {
  streamsWorkloads: readonly WorkloadSpec[];
  contentionWorkloads: readonly WorkloadSpec[];
  timeouts: { readyMs: number; trialMs: number; exitMs: number };
}

/**
 * Before a run: every custom command among its workloads must pass gpushare check on `gpu` (what
 * CUDA_VISIBLE_DEVICES gets), or the run is refused in one line, before its directory exists: a
 * command that cannot start, or prints what is not the protocol, would only fill a run with failed
 * trials. Built-in workloads are gpushare's own and are not checked.
 */
export async function refuseFailingCommands(run: RunWorkloads, gpu: string, deps: AppDeps): Promise<void> {
  const custom = [...run.streamsWorkloads, ...run.contentionWorkloads].filter((w) => !w.builtin);
  const commands = new Map(custom.map((w) => [JSON.stringify(w.argv), w.argv]));
  for (const argv of commands.values()) {
    deps.err(`gpushare: checking the workload command first (gpushare check -- ${argvText(argv)})\n`);
    const outcome = await runCheck(
      {
        argv,
        env: { CUDA_VISIBLE_DEVICES: gpu, GPUSHARE_CLIENT_INDEX: '0' },
        readyTimeoutMs: run.timeouts.readyMs,
        trialTimeoutMs: run.timeouts.trialMs,
        exitTimeoutMs: run.timeouts.exitMs,
      },
      deps,
    );
    if (outcome.status === 'failed')
      throw new UserError(
        `the workload command failed gpushare check at ${outcome.step}: ${outcome.reason}; nothing was run (try it with gpushare check -- ${argvText(argv)})`,
      );
  }
}
