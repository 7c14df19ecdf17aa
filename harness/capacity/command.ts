/**
 * `gpushare capacity`: per mode and client count, the highest total request rate (open-loop arrivals
 * made inside each workload) whose merged p99 stays within the target, found by a rate search.
 */

import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { termJson, termText } from '../core/escape/terminal.js';
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
  type SessionDaemon,
} from '../session/lifecycle.js';
import { newRun } from '../session/preflight.js';
import { timeAccountText } from '../session/time-account.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { capacityMarkdown } from './markdown.js';
import { measurePoint } from './measure.js';
import { CAPACITY_EPILOGUE, CAPACITY_FLAGS, type CapacityOptions, resolveCapacityOptions } from './options.js';
import { CAPACITY_SCHEMA_ID, type CapacityRun, capacityTimeAccount, loadCapacityRun } from './record.js';
import { capacityExitCode, capacitySummary, capacityTable } from './table.js';

/** A new capacity run, or --resume of one (with its own settings). */
type CapacityCommandOptions = ({ resume: null } & CapacityOptions) | { resume: string; json: boolean };

/** `gpushare capacity`: flags, options, run. */
export const capacityCommand = defineCommand({
  flags: CAPACITY_FLAGS,
  rest: true,
  epilogue: CAPACITY_EPILOGUE,
  resolve: (args): CapacityCommandOptions => {
    if (args.resume === undefined) return { resume: null, ...resolveCapacityOptions(args) };
    refuseSettingsWithResume(CAPACITY_FLAGS, args);
    return { resume: args.resume, json: args.json ?? false };
  },
  run: capacity,
});

async function capacity(options: CapacityCommandOptions, deps: AppDeps): Promise<number> {
  const startedUs = deps.clock.monotonicUs();
  if (options.resume !== null) return resumeCapacity(options.resume, options.json, deps, startedUs);
  const { fingerprint, createdAt, id, dir } = await newRun(deps, options, 'capacity', 'measure capacity');
  const run: CapacityRun = {
    schema: CAPACITY_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    settings: options.settings,
    points: [],
    warnings: [],
    daemons: [],
    current: null,
    resumes: [],
  };
  return capacityRun(await newSession(capacityBinding(dir), dir, run, deps), options, deps, startedUs);
}

/**
 * Continues a capacity run with its own settings: finished points stay, the point that was being
 * measured when it stopped is dropped and measured again, and the points never started run.
 */
async function resumeCapacity(dir: string, json: boolean, deps: AppDeps, startedUs: number): Promise<number> {
  const session = await resumeOnThisMachine(capacityBinding(dir), dir, deps, {
    load: async (from) => (await loadCapacityRun(from)) ?? Promise.reject(await notResumable(from, 'capacity')),
    resumed: (run) => {
      const cut = run.current;
      if (cut) run.points = run.points.filter((p) => p.mode !== cut.mode || p.clients !== cut.clients);
      run.current = null;
      (run.resumes ??= []).push({ at: deps.clock.nowIso(), pointsKept: run.points.length });
    },
    verb: 'measure capacity',
  });
  const run = session.record;
  const options: CapacityOptions = {
    settings: run.settings,
    gpuIndex: run.gpuIndex,
    out: dir,
    python: run.fingerprint.python.executable,
    readyTimeoutMs: READY_TIMEOUT_S * 1000,
    allowBusy: false,
    json,
  };
  return capacityRun(session, options, deps, startedUs);
}

function capacityBinding(dir: string): RecordBinding<CapacityRun> {
  return jsonBinding<CapacityRun>(dir, 'capacity', 0, {
    daemons: (run) => run.daemons ?? [],
    done: (run) => run.points.filter((p) => p.mode !== run.current?.mode || p.clients !== run.current?.clients).length,
    windDown: 'stopping the step under way (--resume measures its point again)',
  });
}

/** Measures every point of `session`'s run not measured yet, per mode (the MPS one under a daemon of its own), then reports. */
async function capacityRun(
  session: Session<CapacityRun>,
  options: CapacityOptions,
  deps: AppDeps,
  startedUs: number,
): Promise<number> {
  const run = session.record;
  const { settings } = run;
  const visible = visibleDevice(run.fingerprint, run.gpuIndex);
  const wall = { startUs: startedUs, endUs: null as number | null };
  (run.wallSpans ??= []).push(wall);
  const loop = async () => {
    try {
      await measureAll();
    } finally {
      wall.endUs = deps.clock.monotonicUs();
      run.timeAccount = capacityTimeAccount(run) ?? undefined;
    }
  };
  const measureAll = async () => {
    deps.err(
      `gpushare capacity ${run.id}: p99 ≤ ${settings.sloP99Ms} ms, ${settings.workload.name}, ${settings.modes.join(', ')} at ${settings.clientCounts.join(', ')} clients\n`,
    );
    for (const mode of settings.modes) {
      const left = settings.clientCounts.filter((c) => !run.points.some((p) => p.mode === mode && p.clients === c));
      if (left.length === 0) continue;
      if (session.abort.aborted) throw session.interrupted();
      let daemon: SessionDaemon | null = null;
      if (mode === 'mps') {
        const started = await session.startMps((d) => (run.daemons ??= []).push(d), visible);
        if (!started.ok) {
          for (const clients of left)
            run.points.push({
              mode,
              clients,
              status: 'skipped',
              reason: `the MPS daemon did not start: ${started.reason}`,
              steps: [],
            });
          await session.save();
          continue;
        }
        daemon = started.daemon;
      }
      try {
        for (const clients of left) {
          if (session.abort.aborted) throw session.interrupted();
          // Saved with the point's first step: a run killed now measures this point again on --resume.
          run.current = { mode, clients };
          const point = await measurePoint(
            mode,
            clients,
            { ...(daemon?.env ?? {}), CUDA_VISIBLE_DEVICES: visible },
            options,
            deps,
            session.reaper,
            session.abort,
            run,
            () => session.save(),
          );
          // Cut short by Ctrl-C: its steps stand in the report, and --resume measures it again.
          if (session.abort.aborted) throw session.interrupted();
          run.current = null;
          await session.save();
          deps.err(
            `  ${mode} × ${clients}: ${point.status === 'measured' ? `${point.steps.length} steps` : `${point.status}: ${termText(point.reason)}`}\n`,
          );
        }
      } finally {
        await daemon?.stop();
      }
    }
  };
  const report = async () => {
    const file = session.reportFile();
    await writeOutputFile(file, capacityMarkdown(run, VERSION));
    const rows = capacityTable(run);
    if (options.json)
      deps.out(
        termJson({
          ...simulatedJson(run.fingerprint),
          runId: run.id,
          dir: session.dir,
          report: file,
          status: run.status,
          rows: rows.map(({ steps: _steps, ...row }) => row),
        }),
      );
    else
      deps.out(
        `${simulatedLine(run.fingerprint)}${capacitySummary(rows)}${run.timeAccount ? `${timeAccountText(run.timeAccount)}\n` : ''}run: ${termText(session.dir)}\nreport: ${termText(file)}\n`,
      );
    return capacityExitCode(rows);
  };
  return runAndReport(session, loop, report);
}
