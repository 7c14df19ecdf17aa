/**
 * One bench run in the run lifecycle (session/lifecycle.ts): a new run or a resumed one, its
 * scheduler under the sampler, then its analysis, report and exit code. bench --gpus runs several.
 */
import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { resultsDir } from '../core/paths.js';
import { VERSION } from '../core/version.js';
import { newRunId } from '../record/record-file.js';
import { newSession, type RecordBinding, resumeSession, runAndReport, type Session } from '../session/lifecycle.js';
import { refuseOtherMachine } from '../session/machine.js';
import { machineFingerprint, refuseBlocked, refuseBusy, startMachineFingerprint } from '../session/preflight.js';
import { refuseFailingCommands } from '../session/workload-check.js';
import { type Sampler, startSmiSampler } from '../system/nvidia/sampler.js';
import { type Fingerprint, gpuAt, isSimulated, type Sample, visibleDevice } from '../system/nvidia/schema.js';
import { analyze } from './analysis/analyze.js';
import { possibleMetricIds } from './analysis/metrics.js';
import { buildPlan, type Plan, refuseLostPins } from './comparisons.js';
import { verdictsJson } from './gate/outputs.js';
import { checkPatterns } from './gate/thresholds.js';
import type { BenchOptions } from './options.js';
import { benchOutcome } from './outcome.js';
import { writeTables, writeTablesSync } from './outputs/csv.js';
import { metricsJson } from './outputs/metrics-table.js';
import { summaryText } from './outputs/summary.js';
import { writeRunReport } from './outputs/write.js';
import { makeProgress, type ProgressStyle } from './progress.js';
import { type Config, RUN_SCHEMA_ID, type Run } from './record/schema.js';
import { fsRunStore, loadRun } from './record/store.js';
import { benchTimeAccount } from './record/time.js';
import { executeRun, type Prestarted, plannedTrials, prestartFirst, startsFirstEarly } from './scheduler.js';

/** This machine's fingerprint, as a run of `config` needs it (its Python probed). */
export function benchFingerprint(config: Config, deps: AppDeps): Promise<Fingerprint> {
  return machineFingerprint(deps, config.python);
}

/** Refuses, with the first blocker, to bench any of `gpuIndices` here; Python counts only for built-in workloads. */
export function refuseBlockedBench(config: Config, fingerprint: Fingerprint, gpuIndices: readonly number[]): void {
  const needsPython = [...config.streamsWorkloads, ...config.contentionWorkloads].some((w) => w.builtin);
  refuseBlocked(fingerprint, gpuIndices, 'bench', needsPython);
}

/** run.json and the CSVs of a run directory, as the lifecycle keeps them. */
function runBinding(dir: string): RecordBinding<Run> {
  const store = fsRunStore(dir);
  return {
    kind: 'bench',
    save: (run) => store.saveRun(run),
    saveSync: (run) => store.saveRunSync(run),
    daemons: (run) => run.modes.flatMap((m) => (m.mps !== null ? [m.mps] : [])),
    // CSVs are written once at the end, and on an interruption.
    tables: { write: (run) => writeTables(run, store), writeSync: (run) => writeTablesSync(run, dir) },
    done: (run) => run.trials.length,
    windDown: 'stopping the trial under way, its workloads and the MPS daemon',
  };
}

/** What --allow-busy costs, as the refusal of a busy GPU says it. */
export const BUSY_CONSEQUENCE = 'the run is then marked contaminated and the gate trusts none of it';

/** A plan made elsewhere (the cross-GPU check's), and the kind its run id names. */
export interface PlannedRun {
  plan: Plan;
  kind: string;
}

/** A new run of `options` (busy GPU refused unless allowed), its directory opened and its first record saved. */
export async function newRunSession(
  options: BenchOptions,
  fingerprint: Fingerprint,
  deps: AppDeps,
  planned?: PlannedRun,
): Promise<Session<Run>> {
  const { config } = options;
  const busy = refuseBusy(fingerprint, config.gpuIndex, options.allowBusy, BUSY_CONSEQUENCE);
  const plan = planned?.plan ?? buildPlan(config, fingerprint);
  if (options.thresholdsFile)
    checkPatterns(config.thresholds, possibleMetricIds(plan.comparisons), options.thresholdsFile);
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, config.gpuIndex, planned?.kind ?? null);
  const dir = options.out ?? path.join(resultsDir(deps.cwd), id);
  const run: Run = {
    schema: RUN_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    tool: { name: 'gpushare', version: VERSION },
    loop: 2,
    fingerprint,
    config,
    plan: plan.comparisons,
    modes: plan.modes,
    trials: [],
    samples: [],
    sampler: { status: 'ok', error: null },
    warnings: [],
    stops: [],
    contamination: busy,
    resumes: [],
  };
  return newSession(runBinding(dir), dir, run, deps);
}

/** Continues the run in `dir` on this machine (`fingerprint`): finished trials stay, the rest run. */
export function resumeRunSession(dir: string, fingerprint: Fingerprint, deps: AppDeps): Promise<Session<Run>> {
  return resumeSession(runBinding(dir), dir, deps, {
    load: loadRun,
    check: (run) => {
      refuseOtherMachine(dir, fingerprint, run.fingerprint, run.config.gpuIndex);
      refuseLostPins(dir, fingerprint, run.plan);
    },
    resumed: (run) => run.resumes.push({ at: deps.clock.nowIso(), trialsKept: run.trials.length }),
  });
}

/** bench: one new run on this machine. */
export async function benchOne(options: BenchOptions, deps: AppDeps): Promise<number> {
  const startedUs = deps.clock.monotonicUs();
  const { config } = options;
  const fingerprinting = startMachineFingerprint(deps, config.python);
  const system = await fingerprinting.system;
  // What needs no Python is refused first: nothing of the run touches a GPU it may not use.
  refuseBlocked(system, [config.gpuIndex], 'bench', false);
  refuseBusy(system, config.gpuIndex, options.allowBusy, BUSY_CONSEQUENCE);
  // The first comparison's clients start beside the Python probe (the plan needs no Python), once the
  // sampler has seen the idle GPU before them: their memory's baseline.
  const plan = buildPlan(config, system).comparisons;
  const sampler = startsFirstEarly(config, plan, system) ? await startSamplerOnIdle(config, deps) : null;
  const prestarted = sampler && prestartFirst(config, plan, system, deps.runner, deps.clock);
  let session: Session<Run>;
  try {
    // A custom command is checked while the probe runs (on the first client, where that runs it); both
    // are awaited before either's failure is thrown.
    const first = prestarted?.clients[0];
    const own =
      prestarted && first
        ? {
            argv: plan[0]?.workload.argv ?? [],
            client: first,
            group: prestarted.clients,
            startedUs: prestarted.startedUs,
          }
        : null;
    const [complete, checked] = await Promise.allSettled([
      fingerprinting.complete,
      refuseFailingCommands(config, visibleDevice(system, config.gpuIndex), deps, own),
    ]);
    if (checked.status === 'rejected') throw checked.reason;
    if (complete.status === 'rejected') throw complete.reason;
    const fingerprint = complete.value;
    refuseBlockedBench(config, fingerprint, [config.gpuIndex]);
    session = await newRunSession(options, fingerprint, deps);
  } catch (error) {
    await Promise.all((prestarted?.clients ?? []).map((client) => client.close(0)));
    await sampler?.stop();
    throw error;
  }
  return execute(session, options.style, session.reportDir, deps, startedUs, prestarted, sampler);
}

/** How long the first sample of the GPU before the first clients may take, ms: past it they start without one. */
const FIRST_SAMPLE_DEADLINE_MS = 3000;

/** The run's sampler, started before its first clients, once it has a sample (or failed, or took too long). */
async function startSamplerOnIdle(config: Config, deps: AppDeps): Promise<Sampler> {
  const sampler = startSampler(config, deps);
  const deadlineUs = deps.clock.monotonicUs() + FIRST_SAMPLE_DEADLINE_MS * 1000;
  while (sampler.samples.length === 0 && sampler.status().status === 'ok' && deps.clock.monotonicUs() < deadlineUs)
    await deps.clock.sleep(20);
  return sampler;
}

/** The nvidia-smi sampler of a run of `config`, its samples in a fresh list (see execute). */
function startSampler(config: Config, deps: AppDeps, initial: Sample[] = []): Sampler {
  return startSmiSampler(deps.runner, deps.clock, {
    gpuIndex: config.gpuIndex,
    intervalMs: config.sampleIntervalMs,
    initial,
  });
}

/** bench --resume <run dir>. */
export async function resumeOne(dir: string, style: ProgressStyle, deps: AppDeps): Promise<number> {
  const startedUs = deps.clock.monotonicUs();
  const { config } = await loadRun(dir);
  const fingerprint = await benchFingerprint(config, deps);
  refuseBlockedBench(config, fingerprint, [config.gpuIndex]);
  const session = await resumeRunSession(dir, fingerprint, deps);
  return execute(session, style, session.reportDir, deps, startedUs);
}

/**
 * Runs `session`'s run under the sampler until its comparisons stop, then writes its report
 * (to `reportDir`, or beside the run for null) and prints its summary; returns bench's exit code.
 * `startedUs`: when the command started (CLOCK_MONOTONIC µs), the start of its wall time.
 */
export function execute(
  session: Session<Run>,
  style: ProgressStyle,
  reportDir: string | null,
  deps: AppDeps,
  startedUs = deps.clock.monotonicUs(),
  prestarted: Prestarted | null = null,
  early: Sampler | null = null,
): Promise<number> {
  const run = session.record;
  const wall = { startUs: startedUs, endUs: null as number | null };
  (run.wallSpans ??= []).push(wall);
  const { config } = run;
  const store = fsRunStore(session.dir);
  const progress = makeProgress(style, { out: deps.out, err: deps.err }, deps.terminal);
  const gpu = gpuAt(run.fingerprint, config.gpuIndex);
  progress.emit({
    type: 'run-start',
    runId: run.id,
    dir: session.dir,
    device: `${gpu?.name ?? '?'}${isSimulated(run.fingerprint) ? " (SIMULATED: gpushare's simulator)" : ''}`,
    comparisons: run.plan.length,
    trials: plannedTrials(run),
  });
  const loop = async () => {
    // The sampler appends to run.samples itself: every save holds the samples so far. One started
    // before the run (beside the first comparison's clients) brings the samples it took meanwhile.
    if (early !== null) run.samples = early.samples;
    const sampler = early ?? startSampler(config, deps, run.samples);
    const forgetSampler = session.reaper.add(() => void sampler.stop());
    try {
      await executeRun(run, {
        runner: deps.runner,
        clock: deps.clock,
        store,
        progress,
        sampler,
        reaper: session.reaper,
        signal: session.abort,
        startMps: (place) => session.startMps(place, visibleDevice(run.fingerprint, config.gpuIndex)),
        prestarted,
      });
    } finally {
      await sampler.stop();
      forgetSampler();
      run.sampler = sampler.status();
      wall.endUs = deps.clock.monotonicUs();
      run.timeAccount = benchTimeAccount(run) ?? undefined;
    }
  };
  const report = async () => {
    const analysis = analyze(run);
    const file = await writeRunReport(run, analysis, reportDir ?? path.join(session.dir, 'report'));
    const outcome = benchOutcome(run, analysis);
    if (style === 'json')
      deps.out(
        `${JSON.stringify({ type: 'summary', runId: run.id, dir: session.dir, report: file, status: run.status, exitCode: outcome.exitCode, problems: outcome.problems, metrics: metricsJson(analysis), verdicts: verdictsJson(analysis.verdicts) })}\n`,
      );
    else deps.out(`${summaryText(run, analysis, session.dir)}report: ${file}\n`);
    // An interrupted run's exit code is the signal's: what it did not measure is no problem of it.
    if (run.status === 'complete') for (const problem of outcome.problems) deps.err(`gpushare: ${problem}\n`);
    return outcome.exitCode;
  };
  return runAndReport(session, loop, report, (status) => progress.emit({ type: 'run-end', status }));
}
