/** `gpushare probe`: fingerprint → each probe in turn (saved after each) → claims ledger → report. */

import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { termText } from '../core/escape/terminal.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { simulatedLine } from '../record/simulated.js';
import { writeOutputFile } from '../record/store.js';
import { jsonBinding, runAndReport, type Session } from '../session/lifecycle.js';
import { defineRunCommand, runJson, whereLines } from '../session/run-command.js';
import { gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { claimsLedger } from './claims.js';
import { probeMarkdown } from './markdown.js';
import { PROBE_FLAGS, type ProbeOptions, resolveProbeOptions } from './options.js';
import { runProbe } from './probes.js';
import { loadProbeRun, PROBE_SCHEMA_ID, type ProbeRun } from './record.js';
import { probeSummary } from './summary.js';

/** `gpushare probe`: flags, options, run; --resume runs the probes asked for that have no outcome yet. */
export const probeCommand = defineRunCommand({
  flags: PROBE_FLAGS,
  kind: 'probe',
  schema: PROBE_SCHEMA_ID,
  verb: 'probe',
  resolve: resolveProbeOptions,
  binding: (dir) =>
    jsonBinding<ProbeRun>(dir, 'probe', 2, {
      daemons: (run) => run.daemons ?? [],
      done: (run) => new Set(run.probes.map((o) => o.probe)).size,
      windDown: 'stopping once the probe session under way ends (--resume runs the unfinished probes)',
    }),
  create: (header, options, { busy }): ProbeRun => ({
    ...header,
    requested: options.probes,
    probes: [],
    cleanup: [],
    daemons: [],
    warnings: busy.map((b) => `the GPU was busy before the probes: ${b}`),
    resumes: [],
  }),
  resume: {
    load: loadProbeRun,
    resumed: (run, deps) => (run.resumes ??= []).push({ at: deps.clock.nowIso(), probesKept: run.probes.length }),
    // With the run's own Python and GPU: the probes to run are the record's.
    options: (run, given): ProbeOptions => ({ ...given, probes: run.requested ?? [] }),
  },
  measure: probeRun,
});

/** Runs the probes of `session`'s run that have no outcome yet, then writes the report and prints the ledger. */
async function probeRun(session: Session<ProbeRun>, options: ProbeOptions, deps: AppDeps): Promise<number> {
  const { python, json } = options;
  const run = session.record;
  const gpu = gpuAt(run.fingerprint, run.gpuIndex);
  const visible = visibleDevice(run.fingerprint, run.gpuIndex);
  // A probe's outcomes are saved together once it has run: one without any has not, and runs (again).
  const todo = (run.requested ?? []).filter((name) => !run.probes.some((o) => o.probe === name));
  const loop = async () => {
    deps.err(
      `gpushare probe ${run.id}: ${todo.join(', ') || 'nothing left'} on ${termText(gpu?.name ?? `GPU ${run.gpuIndex}`)}\n`,
    );
    for (const name of todo) {
      if (session.abort.aborted) throw session.interrupted();
      const results = await runProbe(name, {
        runner: deps.runner,
        clock: deps.clock,
        argv: (role, flags) => [python, path.join(WORKLOADS_DIR, 'isolation.py'), role, ...flags],
        visibleDevices: visible,
        startMps: (probe) =>
          session.startMps(
            (daemon) => (run.daemons ??= []).push(daemon),
            visible,
            `mps/${String((run.daemons?.length ?? 0) + 1).padStart(2, '0')}-${probe}`,
          ),
        onForcedExit: (kill) => session.reaper.add(kill),
      });
      for (const { outcome, cleanup } of results) {
        run.probes.push(outcome);
        run.cleanup.push(cleanup);
        if (cleanup.leftPids.length > 0)
          run.warnings.push(`${name} (${cleanup.mode}) left processes running: ${cleanup.leftPids.join(', ')}`);
        deps.err(
          `  ${name}${'mode' in outcome ? ` (${outcome.mode})` : ''}: ${outcome.status}${outcome.status !== 'measured' ? `: ${termText(outcome.reason)}` : ''}\n`,
        );
      }
      await session.save();
    }
  };
  const report = async () => {
    const file = session.reportFile();
    await writeOutputFile(file, probeMarkdown(run, VERSION));
    const ledger = claimsLedger(run);
    deps.out(
      json
        ? runJson(session, file, { status: run.status, claims: ledger, cleanup: run.cleanup })
        : `${simulatedLine(run.fingerprint)}${probeSummary(run)}${whereLines(session.dir, file)}`,
    );
    const troubles = run.probes.some((o) => o.status === 'failed') || run.cleanup.some((c) => c.leftPids.length > 0);
    return troubles ? ExitCode.inconclusive : ExitCode.ok;
  };
  return runAndReport(session, loop, report);
}
