/** `gpushare probe`: fingerprint → each probe in turn (saved after each) → claims ledger → report. */

import path from 'node:path';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { termJson, termText } from '../core/escape/terminal.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { notResumable } from '../record/record-file.js';
import { simulatedJson, simulatedLine } from '../record/simulated.js';
import { writeOutputFile } from '../record/store.js';
import { refuseSettingsWithResume } from '../session/flags.js';
import {
  jsonBinding,
  newSession,
  type RecordBinding,
  resumeOnThisMachine,
  runAndReport,
  type Session,
} from '../session/lifecycle.js';
import { newRun } from '../session/preflight.js';
import { gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { claimsLedger } from './claims.js';
import { probeMarkdown } from './markdown.js';
import { PROBE_FLAGS, type ProbeOptions, resolveProbeOptions } from './options.js';
import { runProbe } from './probes.js';
import { loadProbeRun, PROBE_SCHEMA_ID, type ProbeRun } from './record.js';
import { probeSummary } from './summary.js';

/** A new probe run, or --resume of one (with its own settings). */
type ProbeCommandOptions = ({ resume: null } & ProbeOptions) | { resume: string; json: boolean };

/** `gpushare probe`: flags, options, run. */
export const probeCommand = defineCommand({
  flags: PROBE_FLAGS,
  resolve: (args): ProbeCommandOptions => {
    if (args.resume === undefined) return { resume: null, ...resolveProbeOptions(args) };
    refuseSettingsWithResume(PROBE_FLAGS, args);
    return { resume: args.resume, json: args.json ?? false };
  },
  run: probe,
});

async function probe(options: ProbeCommandOptions, deps: AppDeps): Promise<number> {
  if (options.resume !== null) return resumeProbe(options.resume, options.json, deps);
  const { fingerprint, busy, createdAt, id, dir } = await newRun(deps, options, 'probe', 'probe');
  const run: ProbeRun = {
    schema: PROBE_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    requested: options.probes,
    probes: [],
    cleanup: [],
    daemons: [],
    warnings: busy.map((b) => `the GPU was busy before the probes: ${b}`),
    resumes: [],
  };
  return probeRun(await newSession(probeBinding(dir), dir, run, deps), options.python, options.json, deps);
}

/** Continues a probe run: the probes asked for that have no outcome yet run, with the run's own Python and GPU. */
async function resumeProbe(dir: string, json: boolean, deps: AppDeps): Promise<number> {
  const session = await resumeOnThisMachine(probeBinding(dir), dir, deps, {
    load: async (from) => (await loadProbeRun(from)) ?? Promise.reject(await notResumable(from, 'probe')),
    resumed: (run) => (run.resumes ??= []).push({ at: deps.clock.nowIso(), probesKept: run.probes.length }),
    verb: 'probe',
  });
  return probeRun(session, session.record.fingerprint.python.executable, json, deps);
}

function probeBinding(dir: string): RecordBinding<ProbeRun> {
  return jsonBinding<ProbeRun>(dir, 'probe', 2, {
    daemons: (run) => run.daemons ?? [],
    done: (run) => new Set(run.probes.map((o) => o.probe)).size,
    windDown: 'stopping once the probe session under way ends (--resume runs the unfinished probes)',
  });
}

/** Runs the probes of `session`'s run that have no outcome yet, then writes the report and prints the ledger. */
async function probeRun(session: Session<ProbeRun>, python: string, json: boolean, deps: AppDeps): Promise<number> {
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
    if (json)
      deps.out(
        termJson({
          ...simulatedJson(run.fingerprint),
          runId: run.id,
          dir: session.dir,
          report: file,
          status: run.status,
          claims: ledger,
          cleanup: run.cleanup,
        }),
      );
    else
      deps.out(
        `${simulatedLine(run.fingerprint)}${probeSummary(run)}run: ${termText(session.dir)}\nreport: ${termText(file)}\n`,
      );
    const troubles = run.probes.some((o) => o.status === 'failed') || run.cleanup.some((c) => c.leftPids.length > 0);
    return troubles ? ExitCode.inconclusive : ExitCode.ok;
  };
  return runAndReport(session, loop, report);
}
