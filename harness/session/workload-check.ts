/**
 * gpushare check as a command runs it, and before a run of a custom command: the workload checked
 * with Ctrl-C handled (the workload stopped, the interruption's exit code), before any run directory exists.
 */

import type { AppDeps } from '../core/deps.js';
import { Interrupted, UserError } from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { Reaper } from '../system/proc/reaper.js';
import { type CheckOutcome, type CheckSettings, checkRunClient, checkWorkload } from '../workload/check.js';
import type { WorkloadClient } from '../workload/client.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { watchInterrupts } from './interrupts.js';

/** Checks one workload command; a first SIGINT/SIGTERM stops it and throws Interrupted, a second kills it at once. */
export function runCheck(settings: CheckSettings, deps: AppDeps): Promise<CheckOutcome> {
  return underInterrupts((reaper, signal) => checkWorkload(deps.runner, deps.clock, settings, reaper, signal));
}

/** `check` with Ctrl-C handled: what it put on the reaper is killed, and Interrupted thrown. */
async function underInterrupts(
  check: (reaper: Reaper, signal: AbortSignal) => Promise<CheckOutcome>,
): Promise<CheckOutcome> {
  const reaper = new Reaper();
  const interrupts = watchInterrupts(() => reaper.killAll());
  try {
    const outcome = await check(reaper, interrupts.abort);
    if (interrupts.signal !== null) throw new Interrupted(interrupts.signal);
    return outcome;
  } finally {
    interrupts.dispose();
  }
}

/**
 * A run's own first client, already started (at `startedUs`), that the check of its command uses
 * instead of a process of its own; `group`: every client started with it, killed too on a forced exit.
 */
export interface OwnClient {
  argv: readonly string[];
  client: WorkloadClient;
  group: readonly WorkloadClient[];
  startedUs: number;
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
 * trials. Built-in workloads are gpushare's own and are not checked. The command `own` runs is checked
 * on that client (see checkRunClient), which the run then keeps: its exit is not checked before the
 * run, only seen (and warned of) as its comparison ends.
 */
export async function refuseFailingCommands(
  run: RunWorkloads,
  gpu: string,
  deps: AppDeps,
  own: OwnClient | null = null,
): Promise<void> {
  const custom = [...run.streamsWorkloads, ...run.contentionWorkloads].filter((w) => !w.builtin);
  const commands = new Map(custom.map((w) => [JSON.stringify(w.argv), w.argv]));
  for (const argv of commands.values()) {
    deps.err(`gpushare: checking the workload command first (gpushare check -- ${argvText(argv)})\n`);
    const settings = {
      argv,
      env: { CUDA_VISIBLE_DEVICES: gpu, GPUSHARE_CLIENT_INDEX: '0' },
      readyTimeoutMs: run.timeouts.readyMs,
      trialTimeoutMs: run.timeouts.trialMs,
      exitTimeoutMs: run.timeouts.exitMs,
    };
    const outcome =
      own !== null && JSON.stringify(own.argv) === JSON.stringify(argv)
        ? await underInterrupts((reaper, signal) => {
            for (const client of own.group) reaper.add(() => client.kill());
            return checkRunClient(own.client, deps.clock, settings, signal, own.startedUs);
          })
        : await runCheck(settings, deps);
    if (outcome.status === 'failed')
      throw new UserError(
        `the workload command failed gpushare check at ${outcome.step}: ${outcome.reason}; nothing was run (try it with gpushare check -- ${argvText(argv)})`,
      );
  }
}
