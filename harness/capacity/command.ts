/**
 * `gpushare capacity`: per mode and client count, the highest total request rate (open-loop arrivals
 * made inside each workload) whose merged p99 stays within the target, found by a rate search.
 */

import type { AppDeps } from '../core/deps.js';
import { termText } from '../core/escape/terminal.js';
import { VERSION } from '../core/version.js';
import { simulatedLine } from '../record/simulated.js';
import { writeOutputFile } from '../record/store.js';
import { jsonBinding, runAndReport, type Session, type SessionDaemon } from '../session/lifecycle.js';
import { defineRunCommand, runJson, whereLines } from '../session/run-command.js';
import { timeAccountText } from '../session/time-account.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { capacityMarkdown } from './markdown.js';
import { measurePoint } from './measure.js';
import { CAPACITY_EPILOGUE, CAPACITY_FLAGS, type CapacityOptions, resolveCapacityOptions } from './options.js';
import {
  CAPACITY_SCHEMA_ID,
  type CapacityMode,
  type CapacityRun,
  capacityTimeAccount,
  loadCapacityRun,
} from './record.js';
import { capacityExitCode, capacitySummary, capacityTable } from './table.js';

/** `gpushare capacity`: flags, options, run; --resume continues one with its own settings. */
export const capacityCommand = defineRunCommand({
  flags: CAPACITY_FLAGS,
  rest: true,
  epilogue: CAPACITY_EPILOGUE,
  kind: 'capacity',
  schema: CAPACITY_SCHEMA_ID,
  verb: 'measure capacity',
  resolve: resolveCapacityOptions,
  binding: (dir) =>
    jsonBinding<CapacityRun>(dir, 'capacity', 0, {
      daemons: (run) => run.daemons ?? [],
      done: (run) =>
        run.points.filter((p) => p.mode !== run.current?.mode || p.clients !== run.current?.clients).length,
      windDown: 'stopping the step under way (--resume measures its point again)',
    }),
  create: (header, options): CapacityRun => ({
    ...header,
    settings: options.settings,
    points: [],
    warnings: [],
    daemons: [],
    current: null,
    resumes: [],
  }),
  /**
   * Finished points stay, the point that was being measured when it stopped is dropped and measured
   * again, and the points never started run.
   */
  resume: {
    load: loadCapacityRun,
    resumed: (run, deps) => {
      const cut = run.current;
      if (cut) run.points = run.points.filter((p) => p.mode !== cut.mode || p.clients !== cut.clients);
      run.current = null;
      (run.resumes ??= []).push({ at: deps.clock.nowIso(), pointsKept: run.points.length });
    },
    options: (run, given): CapacityOptions => ({
      ...given,
      settings: run.settings,
      readyTimeoutMs: READY_TIMEOUT_S * 1000,
    }),
  },
  measure: capacityRun,
});

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
      deps.err(
        `gpushare capacity ${run.id}: p99 ≤ ${settings.sloP99Ms} ms, ${settings.workload.name}, ${settings.modes.join(', ')} at ${settings.clientCounts.join(', ')} clients\n`,
      );
      for (const mode of settings.modes) await measureMode(session, mode, visible, options, deps);
    } finally {
      wall.endUs = deps.clock.monotonicUs();
      run.timeAccount = capacityTimeAccount(run) ?? undefined;
    }
  };
  const report = async () => {
    const file = session.reportFile();
    await writeOutputFile(file, capacityMarkdown(run, VERSION));
    const rows = capacityTable(run);
    deps.out(
      options.json
        ? runJson(session, file, { status: run.status, rows: rows.map(({ steps: _steps, ...row }) => row) })
        : `${simulatedLine(run.fingerprint)}${capacitySummary(rows)}${run.timeAccount ? `${timeAccountText(run.timeAccount)}\n` : ''}${whereLines(session.dir, file)}`,
    );
    return capacityExitCode(rows);
  };
  return runAndReport(session, loop, report);
}

/** The points of `mode` not measured yet on GPU `visible`, the MPS ones under a daemon of their own (skipped where it does not start). */
async function measureMode(
  session: Session<CapacityRun>,
  mode: CapacityMode,
  visible: string,
  options: CapacityOptions,
  deps: AppDeps,
): Promise<void> {
  const run = session.record;
  const left = run.settings.clientCounts.filter((c) => !run.points.some((p) => p.mode === mode && p.clients === c));
  if (left.length === 0) return;
  if (session.abort.aborted) throw session.interrupted();
  let daemon: SessionDaemon | null = null;
  if (mode === 'mps') {
    const started = await session.startMps((d) => (run.daemons ??= []).push(d), visible);
    if (!started.ok) {
      const reason = `the MPS daemon did not start: ${started.reason}`;
      for (const clients of left) run.points.push({ mode, clients, status: 'skipped', reason, steps: [] });
      await session.save();
      return;
    }
    daemon = started.daemon;
  }
  try {
    for (const clients of left) {
      if (session.abort.aborted) throw session.interrupted();
      // Saved with the point's first step: a run killed now measures this point again on --resume.
      run.current = { mode, clients };
      const env = { ...(daemon?.env ?? {}), CUDA_VISIBLE_DEVICES: visible };
      const point = await measurePoint(mode, clients, env, options, deps, session.reaper, session.abort, run, () =>
        session.save(),
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
