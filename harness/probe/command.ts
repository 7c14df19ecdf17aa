/** `gpushare probe`: fingerprint → each probe in turn (saved after each) → claims ledger → report. */
import path from 'node:path';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, signalExitCode, UserError } from '../core/errors.js';
import { reportsDir, resultsDir, WORKLOADS_DIR } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { PROBE_FILE } from '../record/kinds.js';
import { newRunId } from '../record/record-file.js';
import { directoryWriter, openRunDirectory, writeOutputFile } from '../record/store.js';
import { busyEvidence } from '../session/busy.js';
import { watchInterrupts } from '../session/interrupts.js';
import { benchBlockers } from '../session/readiness.js';
import { startMpsDaemon } from '../system/mps/daemon.js';
import { prepareMpsDirectory } from '../system/mps/ownership.js';
import { collectFingerprint } from '../system/nvidia/fingerprint.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { Reaper } from '../system/proc/reaper.js';
import { claimsLedger } from './claims.js';
import { probeMarkdown } from './markdown.js';
import { PROBE_FLAGS, type ProbeOptions, resolveProbeOptions } from './options.js';
import { runProbe } from './probes.js';
import { PROBE_SCHEMA_ID, type ProbeRun } from './record.js';

/** `gpushare probe`: flags, options, run. */
export const probeCommand = defineCommand({ flags: PROBE_FLAGS, resolve: resolveProbeOptions, run: probe });

async function probe(options: ProbeOptions, deps: AppDeps): Promise<number> {
  const fingerprint = await collectFingerprint(deps.runner, {
    python: options.python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
  const blockers = benchBlockers(fingerprint, options.gpuIndex);
  if (blockers.length > 0) throw new UserError(`cannot probe here: ${blockers[0]} (run gpushare doctor for details)`);
  const busy = busyEvidence(fingerprint, options.gpuIndex);
  if (busy.length > 0 && !options.allowBusy)
    throw new UserError(
      `GPU ${options.gpuIndex} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy`,
    );
  const gpu = gpuAt(fingerprint, options.gpuIndex);
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, options.gpuIndex, 'probe');
  const inResults = options.out === null;
  const dir = options.out ?? path.join(resultsDir(deps.cwd), id);
  const lock = await openRunDirectory(dir, id);
  const store = directoryWriter(dir);
  const run: ProbeRun = {
    schema: PROBE_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    probes: [],
    cleanup: [],
    warnings: busy.map((b) => `the GPU was busy before the probes: ${b}`),
  };
  const save = () => store.writeText(PROBE_FILE, `${JSON.stringify(run, null, 2)}\n`);

  const reaper = new Reaper();
  const interrupts = watchInterrupts(
    reaper,
    () => lock.release(),
    (signal) => deps.err(`gpushare: ${signal}: finishing the current probe, then stopping (again to stop at once)\n`),
  );
  try {
    await save();
    deps.err(`gpushare probe ${id}: ${options.probes.join(', ')} on ${gpu?.name ?? `GPU ${options.gpuIndex}`}\n`);
    for (const name of options.probes) {
      if (interrupts.signal !== null) break;
      const results = await runProbe(name, {
        runner: deps.runner,
        clock: deps.clock,
        argv: (role, flags) => [options.python, path.join(WORKLOADS_DIR, 'isolation.py'), role, ...flags],
        visibleDevices: gpu?.uuid ?? String(options.gpuIndex),
        startMps: async () =>
          startMpsDaemon(
            deps.runner,
            deps.clock,
            { visibleDevices: gpu?.uuid ?? String(options.gpuIndex), startTimeoutMs: 15_000, quitTimeoutMs: 10_000 },
            await prepareMpsDirectory(id),
          ),
        onForcedExit: (kill) => reaper.add(kill),
      });
      for (const { outcome, cleanup } of results) {
        run.probes.push(outcome);
        run.cleanup.push(cleanup);
        if (cleanup.leftPids.length > 0)
          run.warnings.push(`${name} (${cleanup.mode}) left processes running: ${cleanup.leftPids.join(', ')}`);
        deps.err(
          `  ${name}${'mode' in outcome ? ` (${outcome.mode})` : ''}: ${outcome.status}${outcome.status !== 'measured' ? `: ${outcome.reason}` : ''}\n`,
        );
      }
      await save();
    }
    run.status = interrupts.signal !== null ? 'interrupted' : 'complete';
  } catch (error) {
    run.status = 'failed';
    run.warnings.push(
      `probe stopped by ${error instanceof UserError ? 'an error' : 'an internal error'}: ${error instanceof Error ? error.message : String(error)}`,
    );
    throw error;
  } finally {
    run.finishedAt = deps.clock.nowIso();
    await save().catch(() => undefined);
    interrupts.dispose();
    lock.release();
  }
  const report = inResults ? path.join(reportsDir(deps.cwd), `${id}.md`) : path.join(store.dir, 'report.md');
  await writeOutputFile(report, probeMarkdown(run, VERSION));
  const ledger = claimsLedger(run);
  if (options.json)
    deps.out(
      `${JSON.stringify({ runId: id, dir: store.dir, report, status: run.status, claims: ledger, cleanup: run.cleanup }, null, 2)}\n`,
    );
  else
    deps.out(
      `${ledger.map((c) => `${c.verdict.padEnd(13)} ${c.claim}\n${' '.repeat(14)}${c.measured}`).join('\n')}\nrun: ${store.dir}\nreport: ${report}\n`,
    );
  if (interrupts.signal !== null) return signalExitCode(interrupts.signal);
  const troubles = run.probes.some((o) => o.status === 'failed') || run.cleanup.some((c) => c.leftPids.length > 0);
  return troubles ? ExitCode.inconclusive : ExitCode.ok;
}
