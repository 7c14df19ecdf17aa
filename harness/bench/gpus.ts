/**
 * bench --gpus: the cross-GPU check first (in cross/), then one ordinary bench run per GPU (gpu<N>/),
 * side by side only where the check showed the GPUs do not interfere, then the combined report.
 * host.json in the parent directory records all of it; `bench --resume <parent>` continues it.
 */
import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, Interrupted, UserError } from '../core/errors.js';
import { resultsDir } from '../core/paths.js';
import { recordKindIn } from '../record/kinds.js';
import { newRunId, notARunOf } from '../record/record-file.js';
import {
  jsonBinding,
  newSession,
  type RecordBinding,
  resumeSession,
  runAndReport,
  type Session,
} from '../session/lifecycle.js';
import { refuseBusy } from '../session/preflight.js';
import { refuseFailingCommands } from '../session/workload-check.js';
import { type Fingerprint, gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { analyze } from './analysis/analyze.js';
import { CROSS_GPU_TOLERANCE, crossGpuResults, gpuSchedule } from './analysis/cross-gpu.js';
import { crossGpuPlan } from './comparisons.js';
import type { BenchOptions } from './options.js';
import { benchOutcome } from './outcome.js';
import { writeHostReport, writeRunReport } from './outputs/write.js';
import type { ProgressStyle } from './progress.js';
import { HOST_SCHEMA_ID, type HostGpu, type HostRun, loadHostRun } from './record/host-record.js';
import type { Config, Run } from './record/schema.js';
import { loadRun } from './record/store.js';
import {
  benchFingerprint,
  execute,
  newRunSession,
  type PlannedRun,
  refuseBlockedBench,
  resumeRunSession,
} from './run.js';

/** bench --gpus: a new host run of the GPUs `which` names. */
export async function benchGpus(options: BenchOptions, which: 'all' | number[], deps: AppDeps): Promise<number> {
  const { config } = options;
  const fingerprint = await benchFingerprint(config, deps);
  const indices = which === 'all' ? fingerprint.gpus.flatMap((g) => (g.index === null ? [] : [g.index])) : which;
  refuseBlockedBench(config, fingerprint, indices.length > 0 ? indices : [0]);
  await refuseFailingCommands(config, visibleDevice(fingerprint, indices[0] ?? 0), deps);
  for (const index of indices) refuseBusy(fingerprint, index, options.allowBusy, 'its run is then marked contaminated');
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, indices[0] as number, `x${indices.length}`);
  const parent = options.out ?? path.join(resultsDir(deps.cwd), id);
  const host: HostRun = {
    schema: HOST_SCHEMA_ID,
    id,
    createdAt,
    finishedAt: null,
    status: 'running',
    gpus: indices.map((index) => ({
      index,
      uuid: visibleDevice(fingerprint, index),
      name: gpuAt(fingerprint, index)?.name ?? null,
      dir: `gpu${index}`,
      exitCode: null,
    })),
    crossDir: indices.length > 1 ? 'cross' : null,
    schedule: null,
    config,
    allowBusy: options.allowBusy,
    warnings: [],
    resumes: [],
  };
  // The parent is opened like any run directory: a user's directory, or a single run, is refused.
  const session = await newSession(hostBinding(parent), parent, host, deps);
  return hostRun(session, fingerprint, options, deps);
}

/**
 * bench --resume <host dir>: the cross-GPU check and each GPU's run continue where they stopped
 * (a run never started starts, a complete one is kept), and host.json is updated as they end.
 */
export async function resumeGpus(dir: string, style: ProgressStyle, deps: AppDeps): Promise<number> {
  const load = async (from: string) => (await loadHostRun(from)) ?? Promise.reject(await notARunOf(from, 'host'));
  const recorded = await load(dir);
  const config = recorded.config;
  if (config === undefined)
    throw new UserError(
      `${dir} was made before multi-GPU runs recorded their settings, so it cannot be resumed: continue each of its GPU runs with gpushare bench --resume <its directory>`,
    );
  const fingerprint = await benchFingerprint(config, deps);
  refuseBlockedBench(
    config,
    fingerprint,
    recorded.gpus.map((g) => g.index),
  );
  const session = await resumeSession(hostBinding(dir), dir, deps, {
    load,
    check: (host) => {
      const moved = host.gpus.filter((g) => gpuAt(fingerprint, g.index)?.uuid !== g.uuid);
      if (moved.length > 0)
        throw new UserError(
          `cannot resume ${dir} on a different machine (${moved.map((g) => `GPU ${g.index}: ${g.uuid} before vs ${gpuAt(fingerprint, g.index)?.uuid ?? 'none'} now`).join('; ')})`,
        );
    },
    resumed: (host) => host.resumes.push({ at: deps.clock.nowIso() }),
  });
  const options: BenchOptions = {
    config,
    out: dir,
    dryRun: false,
    style,
    resume: null,
    thresholdsFile: null,
    allowBusy: recorded.allowBusy ?? false,
    gpus: null,
  };
  return hostRun(session, fingerprint, options, deps);
}

function hostBinding(dir: string): RecordBinding<HostRun> {
  return jsonBinding<HostRun>(dir, 'host', 2, {
    // The daemons are the GPU runs' own, in their records.
    daemons: () => [],
    done: (host) => host.gpus.filter((g) => finished(g)).length,
    windDown: 'stopping the GPU runs under way',
  });
}

/** A GPU whose run ended with an exit code of its own (2: it could not run, and runs again on --resume). */
const finished = (gpu: HostGpu) => gpu.exitCode !== null && gpu.exitCode !== ExitCode.usage;

/** The cross-GPU check if it has not decided the schedule yet, each GPU's run not finished yet, then the combined report. */
async function hostRun(
  session: Session<HostRun>,
  fingerprint: Fingerprint,
  options: BenchOptions,
  deps: AppDeps,
): Promise<number> {
  const host = session.record;
  const parent = session.dir;
  const { config } = options;
  const reportDir = session.reportDir ?? path.join(parent, 'report');
  // Each run is an ordinary bench run with the one fingerprint taken before any of them started.
  const runIn = (dir: string, runOptions: BenchOptions, runDeps: AppDeps, planned?: PlannedRun) =>
    benchRunIn(dir, runOptions, fingerprint, reportDir, runDeps, planned);
  const loop = async () => {
    if (host.schedule === null) {
      host.schedule =
        host.crossDir !== null
          ? await crossCheck(host, parent, fingerprint, options, (dir, crossOptions, planned) =>
              runIn(dir, crossOptions, deps, planned),
            )
          : { parallel: false, reason: 'one GPU: nothing to run beside it' };
      if (session.abort.aborted) throw session.interrupted();
      // Pinned clients of runs side by side would share cores: client i of every GPU gets the i-th highest usable CPU.
      if (host.schedule.parallel && config.cpuPin === 'auto')
        host.schedule = {
          parallel: false,
          reason: `${host.schedule.reason.replace(/: the GPUs run in parallel$/, '')}, but --cpu-pin auto would give each GPU's clients the same cores: the GPUs run one after another`,
        };
      await session.save();
    }
    const schedule = host.schedule;
    deps.err(`gpushare: ${schedule.reason}\n`);
    // One GPU's error (a full disk, a daemon that will not start) is that GPU's outcome: the others
    // still run, and the combined report says which failed. An interruption stops them all.
    const runGpu = async (gpu: HostGpu) => {
      if (session.abort.aborted) throw session.interrupted();
      const gpuDeps = schedule.parallel && options.style !== 'json' ? prefixedDeps(deps, `[GPU ${gpu.index}] `) : deps;
      const dir = path.join(parent, gpu.dir);
      try {
        const { code, run } = await runIn(
          dir,
          { ...options, config: { ...config, gpuIndex: gpu.index }, out: dir },
          gpuDeps,
        );
        gpu.exitCode = run.status === 'complete' ? code : null;
      } catch (error) {
        if (error instanceof Interrupted || !(error instanceof UserError)) throw error;
        gpu.exitCode = error.exitCode;
        deps.err(`gpushare: GPU ${gpu.index}: ${error.message}\n`);
      }
      await session.save();
      if (session.abort.aborted) throw session.interrupted();
    };
    const todo = host.gpus.filter((g) => !finished(g));
    if (schedule.parallel) {
      const settled = await Promise.allSettled(todo.map(runGpu));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
    } else {
      for (const gpu of todo) await runGpu(gpu);
    }
    if (!host.gpus.every(finished)) host.status = 'failed';
  };
  const report = async () => {
    const file = await writeHostReport(parent, host, reportDir, false);
    deps.out(
      options.style === 'json'
        ? `${JSON.stringify({ type: 'host-summary', hostId: host.id, dir: parent, report: file, status: host.status, gpus: host.gpus, schedule: host.schedule })}\n`
        : `combined report: ${file}\n`,
    );
    // The worst GPU decides: one that could not run (2) over a failed threshold (1) over an inconclusive one (3) over a pass (0).
    const codes = host.gpus.map((g) => g.exitCode ?? ExitCode.inconclusive);
    return [ExitCode.usage, ExitCode.fail, ExitCode.inconclusive].find((code) => codes.includes(code)) ?? ExitCode.ok;
  };
  return runAndReport(session, loop, report);
}

/** The cross-GPU check (run, continued, or read when complete) and the schedule it decides. */
async function crossCheck(
  host: HostRun,
  parent: string,
  fingerprint: Fingerprint,
  options: BenchOptions,
  runIn: (dir: string, crossOptions: BenchOptions, planned: PlannedRun) => Promise<{ run: Run }>,
): Promise<NonNullable<HostRun['schedule']>> {
  const { config } = options;
  const indices = host.gpus.map((g) => g.index);
  // Its CIs aim at half the tolerance, so a GPU free of interference can be shown to be.
  const roundPolicy = {
    ...config.roundPolicy,
    ciTarget: Math.min(config.roundPolicy.ciTarget, CROSS_GPU_TOLERANCE / 2),
  };
  const crossConfig: Config = {
    ...config,
    gpuIndex: indices[0] as number,
    modes: ['timeslice'],
    clients: config.clients,
    roundPolicy,
  };
  delete crossConfig.clientCounts;
  const dir = path.join(parent, host.crossDir ?? 'cross');
  const planned: PlannedRun = {
    plan: {
      comparisons: crossGpuPlan(config, fingerprint, indices),
      modes: [{ mode: 'timeslice', status: 'ran', reason: null, mig: null, mps: null }],
    },
    kind: 'cross',
  };
  const { run } = await runIn(dir, { ...options, config: crossConfig, out: dir, thresholdsFile: null }, planned);
  return gpuSchedule(crossGpuResults(analyze(run)));
}

/**
 * The bench run in `dir`: started when there is none, continued when it stopped early, and only read
 * (its report written again) when it is complete already; with bench's exit code for it.
 */
async function benchRunIn(
  dir: string,
  options: BenchOptions,
  fingerprint: Fingerprint,
  reportDir: string,
  deps: AppDeps,
  planned?: PlannedRun,
): Promise<{ code: number; run: Run }> {
  if ((await recordKindIn(dir)) === 'bench') {
    const existing = await loadRun(dir);
    if (existing.status === 'complete') {
      const analysis = analyze(existing);
      await writeRunReport(existing, analysis, reportDir);
      return { code: benchOutcome(existing, analysis).exitCode, run: existing };
    }
    const session = await resumeRunSession(dir, fingerprint, deps);
    return { code: await execute(session, options.style, reportDir, deps), run: session.record };
  }
  const session = await newRunSession({ ...options, out: dir }, fingerprint, deps, planned);
  return { code: await execute(session, options.style, reportDir, deps), run: session.record };
}

/** Output of one of several runs side by side: every line starts with `prefix`, and progress is plain lines. */
function prefixedDeps(deps: AppDeps, prefix: string): AppDeps {
  const prefixed = (write: (text: string) => void) => (text: string) => write(text.replace(/^(?=.)/gm, prefix));
  return {
    ...deps,
    out: prefixed(deps.out),
    err: prefixed(deps.err),
    terminal: { ...deps.terminal, isTty: false },
  };
}
