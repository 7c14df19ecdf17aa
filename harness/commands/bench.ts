/** `gpushare bench`: fingerprint → plan → sampler → scheduler → summary, saving the run as it goes. */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { argvText } from '../argv-text.js';
import { busyEvidence } from '../busy.js';
import type { AppDeps } from '../deps.js';
import { ExitCode, Interrupted, UserError } from '../errors.js';
import { verdictsJson } from '../export/gate-outputs.js';
import { metricsJson } from '../export/metrics-table.js';
import { summaryText } from '../export/summary.js';
import { fingerprintMismatches } from '../gate.js';
import { startMpsDaemon, stopOrphanDaemon } from '../mps/daemon.js';
import { collectFingerprint } from '../nvidia/fingerprint.js';
import { startSmiSampler } from '../nvidia/sampler.js';
import { estimateSeconds, type BenchOptions } from '../options.js';
import { PACKAGE_ROOT, WORKLOADS_DIR } from '../paths.js';
import { buildPlan, type Plan } from '../plan.js';
import { Reaper } from '../proc/reaper.js';
import { makeProgress, type ProgressStyle } from '../progress.js';
import { gpuAt, RUN_SCHEMA_ID, type Config, type Fingerprint, type Run } from '../run/schema.js';
import { fsRunStore, loadRun, openRunDirectory, type RunStore } from '../run/store.js';
import { executeRun, plannedTrials } from '../scheduler.js';
import { analyze, type Analysis } from '../analysis/analyze.js';
import { possibleMetricIds } from '../analysis/metrics.js';
import { checkPatterns } from '../thresholds.js';
import { VERSION } from '../version.js';
import { benchBlockers } from './doctor.js';
import { DEFAULT_REPORTS_DIR, writeRunReport } from './report.js';

export async function bench(options: BenchOptions, deps: AppDeps): Promise<number> {
  if (options.dryRun) {
    deps.out(planText(options.config, buildPlan(options.config, null)));
    return ExitCode.ok;
  }
  const resumed = options.resume ? { dir: options.resume, run: await loadRun(options.resume) } : null;
  const config = resumed?.run.config ?? options.config;
  const fingerprint = await collectFingerprint(deps.runner, {
    python: config.python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
  const needsPython = [...config.streamsWorkloads, ...config.contentionWorkloads].some((w) => w.builtin);
  const blockers = benchBlockers(fingerprint, config.gpuIndex).filter((b) => needsPython || (!b.startsWith('Python') && !b.includes('PyTorch')));
  if (blockers.length > 0) throw new UserError(`cannot bench here: ${blockers[0]} (run gpushare doctor for details)`);
  const { run, store } = resumed ? await resumeRun(resumed.dir, resumed.run, fingerprint, deps) : await newRun(options, fingerprint, deps);
  const inResults = path.dirname(path.resolve(store.dir)) === path.join(PACKAGE_ROOT, 'results');
  return execute(run, store, options.style, inResults ? DEFAULT_REPORTS_DIR : null, deps);
}

async function newRun(options: BenchOptions, fingerprint: Fingerprint, deps: AppDeps): Promise<{ run: Run; store: RunStore }> {
  const { config } = options;
  const busy = busyEvidence(fingerprint, config.gpuIndex);
  if (busy.length > 0 && !options.allowBusy) {
    throw new UserError(`GPU ${config.gpuIndex} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy (the run is then marked contaminated and the gate trusts none of it)`);
  }
  const plan = buildPlan(config, fingerprint);
  if (options.thresholdsFile) checkPatterns(config.thresholds, possibleMetricIds(plan.comparisons), options.thresholdsFile);
  const createdAt = deps.clock.nowIso();
  const id = runId(createdAt, fingerprint, config.gpuIndex);
  const store = await openRunDirectory(options.out ?? path.join(PACKAGE_ROOT, 'results', id), id);
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
    warnings: [],
    stops: [],
    contamination: busy,
    resumes: [],
  };
  await store.saveRun(run);
  return { run, store };
}

/** Continues a run whose harness was killed or interrupted: finished trials stay, the rest run. */
async function resumeRun(dir: string, run: Run, fingerprint: Fingerprint, deps: AppDeps): Promise<{ run: Run; store: RunStore }> {
  if (run.status === 'complete') throw new UserError(`${dir} holds a complete run: there is nothing to resume`);
  const mismatches = fingerprintMismatches({ fingerprint, gpuIndex: run.config.gpuIndex }, { fingerprint: run.fingerprint, gpuIndex: run.config.gpuIndex });
  if (mismatches.length > 0) throw new UserError(`cannot resume ${dir} on a different machine (${mismatches.join('; ')})`);
  const store = fsRunStore(dir);
  for (const record of run.modes) {
    const mps = record.mps;
    if (mps?.shutdown !== 'running' || mps.controlPid === null || mps.pipeDirectory === null) continue;
    const orphan = await stopOrphanDaemon(deps.runner, deps.clock, { controlPid: mps.controlPid, serverPids: mps.serverPids, pipeDirectory: mps.pipeDirectory });
    for (const log of orphan.logs) await store.writeText(`mps/interrupted-${log.name}`, log.content);
    record.mps = { ...mps, shutdown: `daemon of the interrupted harness: ${orphan.outcome}`, logFiles: orphan.logs.map((l) => `mps/interrupted-${l.name}`) };
    run.warnings.push(`MPS daemon ${mps.controlPid} left by the interrupted harness: ${orphan.outcome}`);
  }
  run.status = 'running';
  run.finishedAt = null;
  run.resumes.push({ at: deps.clock.nowIso(), trialsKept: run.trials.length });
  await store.saveRun(run);
  return { run, store };
}

async function execute(run: Run, store: RunStore, style: ProgressStyle, reportDir: string | null, deps: AppDeps): Promise<number> {
  const { config } = run;
  const progress = makeProgress(style, { out: deps.out, err: deps.err });
  const gpu = gpuAt(run.fingerprint, config.gpuIndex);
  const planned = plannedTrials(run);
  progress.emit({ type: 'run-start', runId: run.id, dir: store.dir, device: gpu?.name ?? '?', comparisons: run.plan.length, trials: planned });

  const reaper = new Reaper();
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) return controller.abort(signal);
    // A second signal: stop waiting for a clean shutdown, but never leave processes behind.
    reaper.killAll();
    process.exit(signal === 'SIGTERM' ? ExitCode.sigterm : ExitCode.sigint);
  };
  // Whatever ends this process (a closed pipe, a bug), nothing it started may outlive it.
  const onExit = () => reaper.killAll();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', onExit);
  const sampler = startSmiSampler(deps.runner, deps.clock, { gpuIndex: config.gpuIndex, intervalMs: config.sampleIntervalMs, initial: run.samples });
  const stopSampler = reaper.add(() => void sampler.stop());
  try {
    await executeRun(run, {
      runner: deps.runner,
      clock: deps.clock,
      store,
      progress,
      sampler,
      reaper,
      signal: controller.signal,
      startMps: () => startMpsDaemon(deps.runner, deps.clock, { visibleDevices: gpu?.uuid ?? String(config.gpuIndex), startTimeoutMs: 15_000, quitTimeoutMs: 10_000 }),
    });
    run.status = 'complete';
  } catch (error) {
    run.status = error instanceof Interrupted ? 'interrupted' : 'failed';
    if (!(error instanceof Interrupted)) run.warnings.push(`run stopped by an internal error: ${String(error)}`);
    throw error;
  } finally {
    await sampler.stop();
    stopSampler();
    run.samples = sampler.samples;
    run.sampler = sampler.status();
    run.finishedAt = deps.clock.nowIso();
    await store.saveRun(run);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', onExit);
    if (run.status !== 'complete') deps.err(`gpushare: run ${run.status}; ${run.trials.length} finished trials are saved in ${store.dir} (continue with gpushare bench --resume ${store.dir})\n`);
  }
  const analysis = analyze(run);
  // The report goes to reports/ for runs in results/, and beside the run for one given --out.
  const report = await writeRunReport(run, analysis, reportDir ?? path.join(store.dir, 'report'));
  const outcome = benchOutcome(run, analysis);
  if (style === 'json') deps.out(`${JSON.stringify({ type: 'summary', runId: run.id, dir: store.dir, report, status: run.status, exitCode: outcome.exitCode, problems: outcome.problems, metrics: metricsJson(analysis), verdicts: verdictsJson(analysis.verdicts) })}\n`);
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
    ...analysis.comparisons.filter((c) => c.completeRounds === 0).map((c) => `${c.comparison.id} measured nothing: no round completed`),
  ];
  const graded = analysis.verdicts.filter((v) => v.threshold !== null);
  const doubtful = graded.filter((v) => v.verdict === 'inconclusive' || v.verdict === 'invalid');
  problems.push(...doubtful.map((v) => `${v.metric.id} is ${v.verdict}${v.reasons[0] ? `: ${v.reasons[0]}` : ''}`));
  if (graded.some((v) => v.verdict === 'fail')) return { exitCode: ExitCode.fail, problems: [...graded.filter((v) => v.verdict === 'fail').map((v) => `${v.metric.id} failed its threshold ${v.threshold?.text}: ${v.reasons[0] ?? ''}`), ...problems] };
  return { exitCode: problems.length > 0 ? ExitCode.inconclusive : ExitCode.ok, problems };
}

/** `<date>-<gpu>-<6 hex>`, e.g. 2026-11-21-h200-3fa9c2. */
function runId(createdAt: string, fingerprint: Fingerprint, gpuIndex: number): string {
  const name = gpuAt(fingerprint, gpuIndex)?.name ?? 'gpu';
  const slug = name.toLowerCase().replace(/^nvidia\s+/, '').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'gpu';
  return `${createdAt.slice(0, 10)}-${slug}-${randomBytes(3).toString('hex')}`;
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
      lines.push(`${c.id}: ${c.clientEnv.length} client(s), arms ${c.arms.map((a) => a.id).join(' ')}, at least ${rounds} rounds (ABBA) = ${c.arms.length * rounds} trials`);
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
