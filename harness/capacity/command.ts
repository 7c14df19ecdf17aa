/**
 * `gpushare capacity`: per mode and client count, the highest total request rate (open-loop arrivals
 * made inside each workload) whose merged p99 stays within the target, found by a rate search.
 */
import path from 'node:path';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, Interrupted, signalExitCode, UserError } from '../core/errors.js';
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
import { WorkloadClient } from '../workload/client.js';
import { runCommand } from '../workload/protocol.js';
import { RELEASE_LEAD_MS, releaseLeadMs } from '../workload/release.js';
import { capacityMarkdown } from './markdown.js';
import { CAPACITY_FLAGS, type CapacityOptions, resolveCapacityOptions } from './options.js';
import { CAPACITY_SCHEMA_ID, type CapacityPoint, type CapacityRun } from './record.js';
import { type ClientStep, encodeLatencies, nextRate, type Step } from './search.js';
import { capacityTable } from './table.js';

/** `gpushare capacity`: flags, options, run. */
export const capacityCommand = defineCommand({ flags: CAPACITY_FLAGS, resolve: resolveCapacityOptions, run: capacity });

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
  const id = newRunId(createdAt, gpu?.name, 'capacity');
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
  else
    deps.out(
      `${rows.map((r) => `${r.mode.padEnd(10)} ${String(r.clients).padStart(3)} clients  ${r.capacityQps !== null ? `${r.capacityQps.toFixed(0)} req/s (p99 ${r.at?.p99Ms.toFixed(2)} ms over ${r.at?.requests} requests)` : (r.reason ?? 'nothing passed')}`).join('\n')}\nrun: ${store.dir}\nreport: ${report}\n`,
    );
  if (interrupts.signal !== null || run.status === 'interrupted') return signalExitCode(interrupts.signal ?? 'SIGINT');
  return rows.some((r) => r.status === 'failed') ? ExitCode.inconclusive : ExitCode.ok;
}

/** One mode and client count: start the clients, search the rate, stop them; the point is saved after each step. */
async function measurePoint(
  mode: 'timeslice' | 'mps',
  count: number,
  env: Record<string, string>,
  options: CapacityOptions,
  deps: AppDeps,
  reaper: Reaper,
  signal: AbortSignal,
  run: CapacityRun,
  save: () => Promise<void>,
): Promise<CapacityPoint> {
  const { settings } = options;
  const point: CapacityPoint = { mode, clients: count, status: 'measured', steps: [] };
  run.points.push(point);
  const clients = Array.from({ length: count }, (_, i) =>
    WorkloadClient.start(deps.runner, i, `workload "${settings.workload.name}" (client ${i})`, settings.workload.argv, {
      ...env,
      GPUSHARE_CLIENT_INDEX: String(i),
      PYTHONUNBUFFERED: '1',
    }),
  );
  const forget = clients.map((c) => reaper.add(() => c.kill()));
  const fail = (reason: string) => Object.assign(point, { status: 'failed' as const, reason });
  try {
    const ready = await Promise.all(clients.map((c) => c.awaitReady(options.readyTimeoutMs, signal)));
    const notReady = ready.findIndex((r) => r.kind !== 'message');
    if (notReady !== -1) {
      const reply = ready[notReady];
      const why = reply?.kind === 'failed' ? reply.reason : 'it did not say ready in time';
      const tail = clients[notReady]?.stderrTail().trim().split('\n').filter(Boolean).at(-1) ?? '';
      fail(`client ${notReady} of ${count} never became ready: ${why}${tail ? ` (${tail.slice(0, 300)})` : ''}`);
      return point;
    }
    const old = ready.find((r) => r.kind === 'message' && r.message.protocol < 2);
    if (old) {
      fail('the workload speaks protocol version 1, which has no open-loop load');
      return point;
    }
    // Four halvings below the start at most: lower rates only stretch the windows.
    const policy = {
      startQps: settings.startQps * count,
      tolerance: settings.tolerance,
      maxSteps: settings.maxSteps,
      minQps: (settings.startQps * count) / 16,
    };
    for (let rate = nextRate([], policy); rate !== null && !signal.aborted; ) {
      const step = await runStep(clients, rate, `${mode}@${count}#${point.steps.length}`, options, deps, signal);
      if (typeof step === 'string') {
        fail(step);
        break;
      }
      point.steps.push(step);
      await save();
      const verdicts = capacityTable({ ...run, points: [point] })[0]?.steps ?? [];
      rate = nextRate(verdicts, policy);
    }
    return point;
  } finally {
    await Promise.all(clients.map((c) => c.close(10_000)));
    for (const f of forget) f();
    await save();
  }
}

/** Requests a step is sized for (at its rate), so that its p99 claim can be decided. */
const STEP_REQUESTS = 640;
/** …but no step longer than this: a rate that low is reached only when the ones above it failed. */
const MAX_STEP_MS = 20_000;

/** One rate: every client open-loop at rate ÷ clients for the window; a string says why it failed. */
async function runStep(
  clients: WorkloadClient[],
  totalQps: number,
  trialId: string,
  options: CapacityOptions,
  deps: AppDeps,
  signal: AbortSignal,
): Promise<Step | string> {
  const { settings } = options;
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, clients.length);
  const startAtUs = deps.clock.monotonicUs() + leadMs * 1000;
  // Long enough for STEP_REQUESTS requests: a p99 claim needs 299 with none over the target, 628 with 2.
  const work = {
    kind: 'fixed-duration' as const,
    durationMs: Math.max(settings.windowMs, Math.min(MAX_STEP_MS, Math.ceil((STEP_REQUESTS / totalQps) * 1000))),
  };
  const load = { kind: settings.load, qps: totalQps / clients.length };
  const replies = await Promise.all(
    clients.map((c) =>
      c.run(
        runCommand(trialId, startAtUs, work, { streams: 1 }, clients.length, load),
        trialId,
        work.durationMs + leadMs + 60_000,
        signal,
      ),
    ),
  );
  const steps: ClientStep[] = [];
  for (const [i, reply] of replies.entries()) {
    if (reply.kind !== 'message')
      return `client ${i} at ${totalQps.toFixed(0)} req/s: ${reply.kind === 'failed' ? reply.reason : 'no result in time'}`;
    const m = reply.message;
    // Requests never served (a backlog past a second window) count as over the target.
    const dropped = m.droppedRequests ?? 0;
    steps.push({
      requests: m.latenciesMs.length + dropped,
      overTarget: m.latenciesMs.filter((ms) => ms > settings.sloP99Ms).length + dropped,
      unreported: Math.max(0, m.iterations - m.latenciesMs.length),
      scheduleLagMs: m.scheduleLagMs ?? 0,
      scheduleLagMaxMs: m.scheduleLagMaxMs ?? 0,
      histogram: encodeLatencies(m.latenciesMs),
    });
  }
  return { totalQps, windowS: work.durationMs / 1000, clients: steps };
}
