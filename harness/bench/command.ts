/** `gpushare bench`: fingerprint → plan → sampler → scheduler → summary, saving the run as it goes. */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import {
  ExitCode,
  INTERRUPT_SIGNALS,
  Interrupted,
  type InterruptSignal,
  signalExitCode,
  UserError,
} from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { reportsDir, resultsDir, WORKLOADS_DIR } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { HOST_FILE } from '../record/kinds.js';
import { acquireRunLock, type RunLock } from '../record/lock.js';
import { newRunId } from '../record/record-file.js';
import { openRunDirectory, writeOutputFile } from '../record/store.js';
import { busyEvidence } from '../session/busy.js';
import { benchBlockers } from '../session/readiness.js';
import { refuseFailingCommands } from '../session/workload-check.js';
import { startMpsDaemon, stopOrphanDaemon } from '../system/mps/daemon.js';
import { prepareMpsDirectory } from '../system/mps/ownership.js';
import { salvageMpsLogsSync } from '../system/mps/salvage.js';
import { collectFingerprint } from '../system/nvidia/fingerprint.js';
import { startSmiSampler } from '../system/nvidia/sampler.js';
import { type Fingerprint, gpuAt, isSimulated } from '../system/nvidia/schema.js';
import { Reaper } from '../system/proc/reaper.js';
import { analyze } from './analysis/analyze.js';
import { CROSS_GPU_TOLERANCE, crossGpuResults, gpuSchedule } from './analysis/cross-gpu.js';
import { possibleMetricIds } from './analysis/metrics.js';
import type { Analysis } from './analysis/types.js';
import { fingerprintMismatches } from './gate/gate.js';
import { verdictsJson } from './gate/outputs.js';
import { checkPatterns, loadThresholds } from './gate/thresholds.js';
import { BENCH_FLAGS, type BenchOptions, estimateSeconds, resolveBenchOptions } from './options.js';
import { writeTables, writeTablesSync } from './outputs/csv.js';
import { metricsJson } from './outputs/metrics-table.js';
import { summaryText } from './outputs/summary.js';
import { writeHostReport, writeRunReport } from './outputs/write.js';
import { buildPlan, crossGpuPlan, type Plan } from './plan.js';
import { makeProgress, type ProgressStyle } from './progress.js';
import { HOST_SCHEMA_ID, type HostGpu, type HostRun, loadHostRun } from './record/host-record.js';
import { type Config, RUN_SCHEMA_ID, type Run } from './record/schema.js';
import { fsRunStore, loadRun, type RunStore, removeStaleTempFiles } from './record/store.js';
import { executeRun, plannedTrials } from './scheduler.js';

/** `gpushare bench`: flags, options, run. */
export const benchCommand = defineCommand({
  flags: BENCH_FLAGS,
  rest: true,
  epilogue:
    'exit 0: measured, and every graded ratio passed its threshold; 1: a graded ratio failed its threshold; 2: a usage error, or this machine cannot bench; 3: a graded ratio is inconclusive or invalid, or a mode or comparison measured nothing; 129/130/131/143: interrupted by SIGHUP/SIGINT/SIGQUIT/SIGTERM (continue with --resume <dir>)',
  resolve: async (args) => resolveBenchOptions(args, await loadThresholds(args.config)),
  run: bench,
});

export async function bench(options: BenchOptions, deps: AppDeps): Promise<number> {
  if (options.dryRun) {
    deps.out(planText(options.config, buildPlan(options.config, null)));
    return ExitCode.ok;
  }
  if (options.gpus !== null) return benchGpus(options, options.gpus, deps);
  const resumed = options.resume ? { dir: options.resume, run: await loadRun(options.resume) } : null;
  const config = resumed?.run.config ?? options.config;
  const fingerprint = await benchFingerprint(config, deps);
  refuseBlocked(config, fingerprint, [config.gpuIndex]);
  if (!resumed)
    await refuseFailingCommands(config, gpuAt(fingerprint, config.gpuIndex)?.uuid ?? String(config.gpuIndex), deps);
  const { run, store, lock } = resumed
    ? await resumeRun(resumed.dir, fingerprint, deps)
    : await newRun(options, fingerprint, deps);
  try {
    const inResults = path.dirname(path.resolve(deps.cwd, store.dir)) === resultsDir(deps.cwd);
    return await execute(run, store, lock, options.style, inResults ? reportsDir(deps.cwd) : null, deps);
  } finally {
    lock.release();
  }
}

function benchFingerprint(config: Config, deps: AppDeps): Promise<Fingerprint> {
  return collectFingerprint(deps.runner, {
    python: config.python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
}

/** Refuses, with the first blocker, to bench any of `gpuIndices` on this machine. */
function refuseBlocked(config: Config, fingerprint: Fingerprint, gpuIndices: readonly number[]): void {
  const needsPython = [...config.streamsWorkloads, ...config.contentionWorkloads].some((w) => w.builtin);
  const blockers = gpuIndices
    .flatMap((i) => benchBlockers(fingerprint, i))
    .filter((b) => needsPython || (!b.startsWith('Python') && !b.includes('PyTorch')));
  if (blockers.length > 0) throw new UserError(`cannot bench here: ${blockers[0]} (run gpushare doctor for details)`);
}

/**
 * bench --gpus: the cross-GPU check first (in cross/), then one ordinary run per GPU (gpu<N>/),
 * side by side only where the check showed the GPUs do not interfere, then the combined report.
 * host.json in the parent directory records all of it.
 */
async function benchGpus(options: BenchOptions, which: 'all' | number[], deps: AppDeps): Promise<number> {
  const { config } = options;
  const probe = await benchFingerprint(config, deps);
  const indices = which === 'all' ? probe.gpus.flatMap((g) => (g.index === null ? [] : [g.index])) : which;
  refuseBlocked(config, probe, indices.length > 0 ? indices : [0]);
  await refuseFailingCommands(config, gpuAt(probe, indices[0] ?? 0)?.uuid ?? String(indices[0] ?? 0), deps);
  for (const index of indices) {
    const busy = busyEvidence(probe, index);
    if (busy.length > 0 && !options.allowBusy)
      throw new UserError(
        `GPU ${index} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy (its run is then marked contaminated)`,
      );
  }
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, probe, indices[0] as number, `x${indices.length}`);
  const parent = options.out ?? path.join(resultsDir(deps.cwd), id);
  if ((await loadHostRun(parent)) !== null)
    throw new UserError(`${parent} holds a multi-GPU run already: give --out a new directory`);
  const reportDir =
    path.dirname(path.resolve(deps.cwd, parent)) === resultsDir(deps.cwd)
      ? reportsDir(deps.cwd)
      : path.join(parent, 'report');
  const host: HostRun = {
    schema: HOST_SCHEMA_ID,
    id,
    createdAt,
    finishedAt: null,
    status: 'running',
    gpus: indices.map((index) => ({
      index,
      uuid: gpuAt(probe, index)?.uuid ?? String(index),
      name: gpuAt(probe, index)?.name ?? null,
      dir: `gpu${index}`,
      exitCode: null,
    })),
    crossDir: indices.length > 1 ? 'cross' : null,
    schedule: null,
  };
  const saveHost = () => writeOutputFile(path.join(parent, HOST_FILE), `${JSON.stringify(host, null, 2)}\n`);
  await saveHost();
  // Each run is an ordinary bench run with the one fingerprint taken before any of them started.
  const benchOne = async (
    runOptions: BenchOptions,
    runDeps: AppDeps,
    planned?: PlannedRun,
  ): Promise<{ code: number; run: Run }> => {
    const { run, store, lock } = await newRun(runOptions, probe, runDeps, planned);
    try {
      return { code: await execute(run, store, lock, runOptions.style, reportDir, runDeps), run };
    } finally {
      lock.release();
    }
  };
  try {
    if (host.crossDir !== null) {
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
      const comparisons = crossGpuPlan(config, probe, indices);
      const modes: Run['modes'] = [{ mode: 'timeslice', status: 'ran', reason: null, mig: null, mps: null }];
      const cross = await benchOne(
        { ...options, config: crossConfig, out: path.join(parent, host.crossDir), thresholdsFile: null },
        deps,
        { plan: { comparisons, modes }, kind: 'cross' },
      );
      host.schedule = gpuSchedule(crossGpuResults(analyze(cross.run)));
    } else {
      host.schedule = { parallel: false, reason: 'one GPU: nothing to run beside it' };
    }
    // Pinned clients of runs side by side would share cores: client i of every GPU gets core N-1-i.
    if (host.schedule.parallel && config.cpuPin === 'auto')
      host.schedule = {
        parallel: false,
        reason: `${host.schedule.reason.replace(/: the GPUs run in parallel$/, '')}, but --cpu-pin auto would give each GPU's clients the same cores: the GPUs run one after another`,
      };
    await saveHost();
    deps.err(`gpushare: ${host.schedule.reason}\n`);
    // One GPU's error (a full disk, a daemon that will not start) is that GPU's outcome: the others
    // still run, and the combined report says which failed. An interruption stops them all.
    const runGpu = async (gpu: HostGpu) => {
      const gpuDeps =
        host.schedule?.parallel && options.style !== 'json' ? prefixedDeps(deps, `[GPU ${gpu.index}] `) : deps;
      try {
        gpu.exitCode = (
          await benchOne(
            { ...options, config: { ...config, gpuIndex: gpu.index }, out: path.join(parent, gpu.dir) },
            gpuDeps,
          )
        ).code;
      } catch (error) {
        if (error instanceof Interrupted || !(error instanceof UserError)) throw error;
        gpu.exitCode = error.exitCode;
        deps.err(`gpushare: GPU ${gpu.index}: ${error.message}\n`);
      }
      await saveHost();
    };
    if (host.schedule.parallel) {
      const settled = await Promise.allSettled(host.gpus.map(runGpu));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
    } else {
      for (const gpu of host.gpus) await runGpu(gpu);
    }
    host.status = host.gpus.every((g) => g.exitCode !== null && g.exitCode !== ExitCode.usage) ? 'complete' : 'failed';
  } catch (error) {
    host.status = error instanceof Interrupted ? 'interrupted' : 'failed';
    throw error;
  } finally {
    host.finishedAt = deps.clock.nowIso();
    await saveHost();
  }
  const report = await writeHostReport(parent, host, reportDir, false);
  deps.out(
    options.style === 'json'
      ? `${JSON.stringify({ type: 'host-summary', hostId: host.id, dir: parent, report, status: host.status, gpus: host.gpus, schedule: host.schedule })}\n`
      : `combined report: ${report}\n`,
  );
  // The worst GPU decides: one that could not run (2) over a failed threshold (1) over an inconclusive one (3) over a pass (0).
  const codes = host.gpus.map((g) => g.exitCode ?? ExitCode.inconclusive);
  return [ExitCode.usage, ExitCode.fail, ExitCode.inconclusive].find((code) => codes.includes(code)) ?? ExitCode.ok;
}

/** Output of one of several runs side by side: every line starts with `prefix`, and progress is plain lines. */
function prefixedDeps(deps: AppDeps, prefix: string): AppDeps {
  const prefixed = (write: (text: string) => void) => (text: string) => write(text.replace(/^(?=.)/gm, prefix));
  return { ...deps, out: prefixed(deps.out), err: prefixed(deps.err), terminal: { ...deps.terminal, isTty: false } };
}

/** A plan made elsewhere (the cross-GPU check's), and the kind its run id names. */
interface PlannedRun {
  plan: Plan;
  kind: string;
}

async function newRun(
  options: BenchOptions,
  fingerprint: Fingerprint,
  deps: AppDeps,
  planned?: PlannedRun,
): Promise<{ run: Run; store: RunStore; lock: RunLock }> {
  const { config } = options;
  const busy = busyEvidence(fingerprint, config.gpuIndex);
  if (busy.length > 0 && !options.allowBusy) {
    throw new UserError(
      `GPU ${config.gpuIndex} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy (the run is then marked contaminated and the gate trusts none of it)`,
    );
  }
  const plan = planned?.plan ?? buildPlan(config, fingerprint);
  if (options.thresholdsFile)
    checkPatterns(config.thresholds, possibleMetricIds(plan.comparisons), options.thresholdsFile);
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, config.gpuIndex, planned?.kind ?? null);
  const dir = options.out ?? path.join(resultsDir(deps.cwd), id);
  const lock = await openRunDirectory(dir, id);
  const store = fsRunStore(dir);
  const run: Run = {
    schema: RUN_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    tool: { name: 'gpushare', version: VERSION },
    fingerprint,
    config,
    plan: plan.comparisons,
    modes: plan.modes,
    trials: [],
    samples: [],
    sampler: { status: 'ok', error: null },
    warnings: lock.warning !== null ? [lock.warning] : [],
    stops: [],
    contamination: busy,
    resumes: [],
  };
  if (lock.warning !== null) deps.err(`gpushare: warning: ${lock.warning}\n`);
  try {
    await store.saveRun(run);
  } catch (error) {
    lock.release();
    throw error;
  }
  return { run, store, lock };
}

/**
 * Continues a run whose harness was killed or interrupted: finished trials stay, the rest run. It
 * locks the directory first, so a harness still running it (or a second --resume) is refused.
 */
async function resumeRun(
  dir: string,
  fingerprint: Fingerprint,
  deps: AppDeps,
): Promise<{ run: Run; store: RunStore; lock: RunLock }> {
  const lock = await acquireRunLock(dir);
  try {
    // Read again under the lock: another harness may have written it since.
    const run = await loadRun(dir);
    if (run.status === 'complete') throw new UserError(`${dir} holds a complete run: there is nothing to resume`);
    const mismatches = fingerprintMismatches(
      { fingerprint, gpuIndex: run.config.gpuIndex },
      { fingerprint: run.fingerprint, gpuIndex: run.config.gpuIndex },
    );
    if (mismatches.length > 0)
      throw new UserError(`cannot resume ${dir} on a different machine (${mismatches.join('; ')})`);
    const store = fsRunStore(dir);
    if (lock.warning !== null) {
      run.warnings.push(lock.warning);
      deps.err(`gpushare: warning: ${lock.warning}\n`);
    }
    // Temp files of a harness killed mid-write: nobody else writes here while we hold the lock.
    await removeStaleTempFiles(dir);
    await stopRecordedDaemons(run, store, deps, { prefix: 'interrupted', leftBy: 'the interrupted harness' });
    run.status = 'running';
    run.finishedAt = null;
    run.resumes.push({ at: deps.clock.nowIso(), trialsKept: run.trials.length });
    await store.saveRun(run);
    return { run, store, lock };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * Stops every MPS daemon run.json still records as running or starting (left by a killed harness,
 * or by an error that cut the scheduler's own shutdown short), acting only on what is provably this
 * run's; saves its logs as `mps/<prefix>-*.log` and removes its private directory once they are saved.
 */
async function stopRecordedDaemons(
  run: Run,
  store: RunStore,
  deps: AppDeps,
  { prefix, leftBy }: { prefix: string; leftBy: string },
): Promise<void> {
  for (const record of run.modes) {
    const mps = record.mps;
    if ((mps?.shutdown !== 'running' && mps?.shutdown !== 'starting') || mps.pipeDirectory === null) continue;
    const orphan = await stopOrphanDaemon(deps.runner, deps.clock, {
      runId: run.id,
      controlPid: mps.controlPid,
      serverPids: mps.serverPids,
      pipeDirectory: mps.pipeDirectory,
    });
    const logFiles = orphan.logs.map((l) => `mps/${prefix}-${l.name}`);
    let saved = true;
    for (const [i, log] of orphan.logs.entries()) {
      saved &&= await store.writeText(logFiles[i] as string, log.content).then(
        () => true,
        () => false,
      );
    }
    // Logs that could not be saved (a full disk) stay in the private directory for the next --resume.
    if (saved) await orphan.removeRoot();
    record.mps = {
      ...mps,
      controlPid: orphan.controlPid,
      shutdown: saved ? `daemon of ${leftBy}: ${orphan.outcome}` : mps.shutdown,
      logFiles: saved ? logFiles : mps.logFiles,
    };
    if (orphan.outcome !== 'left alone')
      run.warnings.push(`MPS daemon ${orphan.controlPid ?? '(no PID logged)'} left by ${leftBy}: ${orphan.outcome}`);
    run.warnings.push(...orphan.leftAlone);
  }
}

async function execute(
  run: Run,
  store: RunStore,
  lock: RunLock,
  style: ProgressStyle,
  reportDir: string | null,
  deps: AppDeps,
): Promise<number> {
  const { config } = run;
  const progress = makeProgress(style, { out: deps.out, err: deps.err }, deps.terminal);
  const gpu = gpuAt(run.fingerprint, config.gpuIndex);
  const planned = plannedTrials(run);
  progress.emit({
    type: 'run-start',
    runId: run.id,
    dir: store.dir,
    device: `${gpu?.name ?? '?'}${isSimulated(run.fingerprint) ? " (SIMULATED: gpushare's simulator)" : ''}`,
    comparisons: run.plan.length,
    trials: planned,
  });

  const reaper = new Reaper();
  const controller = new AbortController();
  let firstSignal: InterruptSignal | null = null;
  const sampler = startSmiSampler(deps.runner, deps.clock, {
    gpuIndex: config.gpuIndex,
    intervalMs: config.sampleIntervalMs,
    initial: run.samples,
  });
  // SIGHUP (the SSH session dropped) and SIGQUIT end the run like SIGINT and SIGTERM.
  const onSignal = (signal: InterruptSignal) => {
    if (firstSignal === null) {
      firstSignal = signal;
      return controller.abort(signal);
    }
    // A second signal: stop waiting for a clean shutdown, but never leave processes behind, and
    // save what can be saved synchronously. process.exit follows once every listener has run, so a
    // run beside this one (bench --gpus) saves its own too.
    reaper.killAll();
    saveForcedExitSync(run, store, sampler.samples, signal, deps);
    lock.release();
    setImmediate(() => process.exit(signalExitCode(signal)));
  };
  // Whatever ends this process (a closed pipe, a bug), nothing it started may outlive it.
  const onExit = () => {
    reaper.killAll();
    lock.release();
  };
  for (const signal of INTERRUPT_SIGNALS) process.on(signal, onSignal);
  process.on('exit', onExit);
  const stopSampler = reaper.add(() => void sampler.stop());
  let failure: unknown = null;
  try {
    await executeRun(run, {
      runner: deps.runner,
      clock: deps.clock,
      store,
      progress,
      sampler,
      reaper,
      signal: controller.signal,
      startMps: async (recordDirectory) => {
        const prepared = await prepareMpsDirectory(run.id);
        try {
          await recordDirectory(prepared.pipeDirectory);
        } catch (error) {
          await rm(prepared.root, { recursive: true, force: true });
          throw error;
        }
        return startMpsDaemon(
          deps.runner,
          deps.clock,
          { visibleDevices: gpu?.uuid ?? String(config.gpuIndex), startTimeoutMs: 15_000, quitTimeoutMs: 10_000 },
          prepared,
        );
      },
    });
    run.status = 'complete';
  } catch (error) {
    // The scheduler knows SIGINT and SIGTERM only: report the signal that really came.
    failure = error instanceof Interrupted && firstSignal !== null ? new Interrupted(firstSignal) : error;
    run.status = error instanceof Interrupted ? 'interrupted' : 'failed';
    if (!(error instanceof Interrupted))
      run.warnings.push(
        `run stopped by ${error instanceof UserError ? 'an error' : 'an internal error'}: ${error instanceof UserError ? error.message : String(error)}`,
      );
  } finally {
    await sampler.stop();
    stopSampler();
    run.samples = sampler.samples;
    run.sampler = sampler.status();
    run.finishedAt = deps.clock.nowIso();
    // Every path tries to save what it can, even when the disk is refusing writes.
    const saved = await stopRecordedDaemons(run, store, deps, {
      prefix: 'failed',
      leftBy: 'this harness, whose shutdown an error cut short',
    })
      .then(() => store.saveRun(run))
      .then(() => writeTables(run, store))
      .then(
        () => null,
        (error: unknown) => error,
      );
    failure ??= saved;
    for (const signal of INTERRUPT_SIGNALS) process.off(signal, onSignal);
    process.off('exit', onExit);
    progress.emit({ type: 'run-end', status: run.status });
    // A store error says where the trials are and how to continue in its one line already.
    if (run.status !== 'complete' && !(failure instanceof UserError))
      deps.err(
        `gpushare: run ${run.status}; ${run.trials.length} finished trials are saved in ${store.dir} (continue with gpushare bench --resume ${store.dir})\n`,
      );
  }
  if (failure !== null) throw failure;
  const analysis = analyze(run);
  // The report goes to reports/ for runs in results/, and beside the run for one given --out.
  const report = await writeRunReport(run, analysis, reportDir ?? path.join(store.dir, 'report'));
  const outcome = benchOutcome(run, analysis);
  if (style === 'json')
    deps.out(
      `${JSON.stringify({ type: 'summary', runId: run.id, dir: store.dir, report, status: run.status, exitCode: outcome.exitCode, problems: outcome.problems, metrics: metricsJson(analysis), verdicts: verdictsJson(analysis.verdicts) })}\n`,
    );
  else deps.out(`${summaryText(run, analysis, store.dir)}report: ${report}\n`);
  for (const problem of outcome.problems) deps.err(`gpushare: ${problem}\n`);
  return outcome.exitCode;
}

/**
 * bench is the CI gate on GPU pods: 1 when a graded threshold fails; 3 when a graded ratio is
 * inconclusive or invalid, or when a mode or comparison measured nothing; 0 otherwise.
 */
export function benchOutcome(run: Run, analysis: Analysis): { exitCode: number; problems: string[] } {
  const problems = [
    ...run.modes.filter((m) => m.status === 'failed').map((m) => `${m.mode} measured nothing: ${m.reason}`),
    ...analysis.comparisons
      .filter((c) => c.completeRounds === 0)
      .map((c) => `${c.comparison.id} measured nothing: no round completed`),
  ];
  const graded = analysis.verdicts.filter((v) => v.threshold !== null);
  const doubtful = graded.filter((v) => v.verdict === 'inconclusive' || v.verdict === 'invalid');
  problems.push(...doubtful.map((v) => `${v.metric.id} is ${v.verdict}${v.reasons[0] ? `: ${v.reasons[0]}` : ''}`));
  if (graded.some((v) => v.verdict === 'fail'))
    return {
      exitCode: ExitCode.fail,
      problems: [
        ...graded
          .filter((v) => v.verdict === 'fail')
          .map((v) => `${v.metric.id} failed its threshold ${v.threshold?.text}: ${v.reasons[0] ?? ''}`),
        ...problems,
      ],
    };
  return { exitCode: problems.length > 0 ? ExitCode.inconclusive : ExitCode.ok, problems };
}

/**
 * The forced exit's save (second signal): run.json marked `interrupted`, and the logs of an MPS
 * daemon the reaper just killed copied into the run directory. A daemon still starting is left
 * recorded, for --resume to stop.
 */
function saveForcedExitSync(
  run: Run,
  store: RunStore,
  samples: Run['samples'],
  signal: InterruptSignal,
  deps: AppDeps,
): void {
  run.status = 'interrupted';
  run.finishedAt = deps.clock.nowIso();
  run.samples = samples;
  for (const record of run.modes) {
    const mps = record.mps;
    if (mps?.shutdown !== 'running' || mps.pipeDirectory === null) continue;
    const logFiles = salvageMpsLogsSync(mps.pipeDirectory, run.id, store.dir);
    record.mps = { ...mps, shutdown: `killed by PID on a forced exit (a second ${signal})`, logFiles };
  }
  try {
    store.saveRunSync(run);
    writeTablesSync(run, store.dir);
  } catch {
    // The last save before the signal stands; --resume continues from it.
  }
}

function planText(config: Config, plan: Plan): string {
  const lines = ['gpushare bench --dry-run: nothing is measured', ''];
  for (const mode of plan.modes) {
    if (mode.status !== 'ran') {
      lines.push(`${mode.mode}: ${mode.reason}`);
      continue;
    }
    for (const c of plan.comparisons.filter((x) => x.mode === mode.mode)) {
      const rounds = config.roundPolicy.minRounds;
      lines.push(
        `${c.id}: ${c.clientEnv.length} client(s), arms ${c.arms.map((a) => a.id).join(' ')}, at least ${rounds} rounds (ABBA) = ${c.arms.length * rounds} trials`,
      );
      lines.push(`  ${argvText(c.workload.argv)}`); // quoted and escaped: a custom command is the user's verbatim argv
    }
  }
  const trials = plannedTrials({ plan: plan.comparisons, config });
  const policy = config.roundPolicy;
  lines.push(
    '',
    `${plan.comparisons.length} comparisons, at least ${trials} trials, about ${Math.round(estimateSeconds(config, plan.comparisons))} s (estimate), plus up to ${policy.timeBudgetS} s of extra rounds (up to ${policy.maxRounds} per comparison) until every headline CI is within ±${(policy.ciTarget * 100).toFixed(1)}% and every graded one within ±${(policy.gradedCiTarget * 100).toFixed(1)}%`,
  );
  return `${lines.join('\n')}\n`;
}
