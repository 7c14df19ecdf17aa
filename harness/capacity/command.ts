/**
 * `gpushare capacity`: per mode and client count, the highest total request rate (open-loop arrivals
 * made inside each workload) whose merged p99 stays within the target, found by a rate search.
 */
import path from 'node:path';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { Interrupted, signalExitCode, UserError } from '../core/errors.js';
import { reportsDir, resultsDir, WORKLOADS_DIR } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { CAPACITY_FILE } from '../record/kinds.js';
import { newRunId } from '../record/record-file.js';
import { directoryWriter, openRunDirectory, writeOutputFile } from '../record/store.js';
import { busyEvidence } from '../session/busy.js';
import { watchInterrupts } from '../session/interrupts.js';
import { benchBlockers } from '../session/readiness.js';
import { type MpsDaemon, startMpsDaemon } from '../system/mps/daemon.js';
import { prepareMpsDirectory } from '../system/mps/ownership.js';
import { collectFingerprint } from '../system/nvidia/fingerprint.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { Reaper } from '../system/proc/reaper.js';
import { capacityMarkdown } from './markdown.js';
import { measurePoint } from './measure.js';
import { CAPACITY_EPILOGUE, CAPACITY_FLAGS, type CapacityOptions, resolveCapacityOptions } from './options.js';
import { CAPACITY_SCHEMA_ID, type CapacityRun } from './record.js';
import { capacityExitCode, capacitySummary, capacityTable } from './table.js';

/** `gpushare capacity`: flags, options, run. */
export const capacityCommand = defineCommand({
  flags: CAPACITY_FLAGS,
  rest: true,
  epilogue: CAPACITY_EPILOGUE,
  resolve: resolveCapacityOptions,
  run: capacity,
});

async function capacity(options: CapacityOptions, deps: AppDeps): Promise<number> {
  const { settings } = options;
  const fingerprint = await collectFingerprint(deps.runner, {
    python: options.python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
  const blockers = benchBlockers(fingerprint, options.gpuIndex);
  if (blockers.length > 0)
    throw new UserError(`cannot measure capacity here: ${blockers[0]} (run gpushare doctor for details)`);
  const busy = busyEvidence(fingerprint, options.gpuIndex);
  if (busy.length > 0 && !options.allowBusy)
    throw new UserError(
      `GPU ${options.gpuIndex} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy`,
    );
  const gpu = gpuAt(fingerprint, options.gpuIndex);
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, options.gpuIndex, 'capacity');
  const dir = options.out ?? path.join(resultsDir(deps.cwd), id);
  const lock = await openRunDirectory(dir, id);
  const store = directoryWriter(dir);
  const run: CapacityRun = {
    schema: CAPACITY_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    settings,
    points: [],
    warnings: [],
  };
  const save = () => store.writeText(CAPACITY_FILE, `${JSON.stringify(run)}\n`);
  const visible = gpu?.uuid ?? String(options.gpuIndex);

  const reaper = new Reaper();
  const interrupts = watchInterrupts(reaper, () => lock.release());
  try {
    await save();
    deps.err(
      `gpushare capacity ${id}: p99 ≤ ${settings.sloP99Ms} ms, ${settings.workload.name}, ${settings.modes.join(', ')} at ${settings.clientCounts.join(', ')} clients\n`,
    );
    for (const mode of settings.modes) {
      let daemon: MpsDaemon | null = null;
      if (mode === 'mps') {
        const started = await startMpsDaemon(
          deps.runner,
          deps.clock,
          { visibleDevices: visible, startTimeoutMs: 15_000, quitTimeoutMs: 10_000 },
          await prepareMpsDirectory(id),
        );
        if (!started.ok) {
          for (const clients of settings.clientCounts)
            run.points.push({
              mode,
              clients,
              status: 'skipped',
              reason: `the MPS daemon did not start: ${started.reason}`,
              steps: [],
            });
          await save();
          continue;
        }
        daemon = started.daemon;
      }
      const forgetDaemon = daemon !== null ? reaper.add(() => daemon.killNow()) : () => undefined;
      try {
        for (const clients of settings.clientCounts) {
          if (interrupts.abort.aborted) break;
          const point = await measurePoint(
            mode,
            clients,
            { ...(daemon?.env ?? {}), CUDA_VISIBLE_DEVICES: visible },
            options,
            deps,
            reaper,
            interrupts.abort,
            run,
            save,
          );
          deps.err(
            `  ${mode} × ${clients}: ${point.status === 'measured' ? `${point.steps.length} steps` : `${point.status}: ${point.reason}`}\n`,
          );
        }
      } finally {
        if (daemon !== null) {
          await daemon.stop();
          await daemon.removeDirectory();
        }
        forgetDaemon();
      }
    }
    run.status = interrupts.signal !== null ? 'interrupted' : 'complete';
  } catch (error) {
    // Ctrl-C while clients start or a step runs: the steps so far stand and are reported.
    if (!(error instanceof Interrupted)) {
      run.status = 'failed';
      run.warnings.push(
        `stopped by ${error instanceof UserError ? 'an error' : 'an internal error'}: ${error instanceof Error ? error.message : String(error)}`,
      );
      throw error;
    }
    run.status = 'interrupted';
  } finally {
    run.finishedAt = deps.clock.nowIso();
    await save().catch(() => undefined);
    interrupts.dispose();
    lock.release();
  }
  const report = options.out === null ? path.join(reportsDir(deps.cwd), `${id}.md`) : path.join(store.dir, 'report.md');
  await writeOutputFile(report, capacityMarkdown(run, VERSION));
  const rows = capacityTable(run);
  if (options.json)
    deps.out(
      `${JSON.stringify({ runId: id, dir: store.dir, report, status: run.status, rows: rows.map(({ steps: _steps, ...row }) => row) }, null, 2)}\n`,
    );
  else deps.out(`${capacitySummary(rows)}run: ${store.dir}\nreport: ${report}\n`);
  if (interrupts.signal !== null || run.status === 'interrupted') return signalExitCode(interrupts.signal ?? 'SIGINT');
  return capacityExitCode(rows);
}
