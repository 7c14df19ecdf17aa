/** `gpushare bench`: fingerprint → plan → sampler → scheduler → summary, saving the run as it goes. */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { AppDeps } from '../deps.js';
import { ExitCode, Interrupted, UserError } from '../errors.js';
import { summaryText } from '../export/summary.js';
import { startMpsDaemon } from '../mps/daemon.js';
import { collectFingerprint } from '../nvidia/fingerprint.js';
import { startSmiSampler } from '../nvidia/sampler.js';
import { estimateSeconds, type BenchOptions } from '../options.js';
import { PACKAGE_ROOT, WORKLOADS_DIR } from '../paths.js';
import { buildPlan, type Plan } from '../plan.js';
import { Reaper } from '../proc/reaper.js';
import { makeProgress } from '../progress.js';
import { RUN_SCHEMA_ID, type Config, type Fingerprint, type Run } from '../run/schema.js';
import { openRunDirectory } from '../run/store.js';
import { executeRun } from '../scheduler.js';
import { runMetrics } from '../stats/metrics.js';
import { runVerdicts } from '../stats/verdicts.js';
import { verdictsJson } from '../export/gate-outputs.js';
import { VERSION } from '../version.js';
import { benchBlockers } from './doctor.js';

export async function bench(options: BenchOptions, deps: AppDeps): Promise<number> {
  const { config } = options;
  if (options.dryRun) {
    deps.out(planText(config, buildPlan(config, null)));
    return ExitCode.ok;
  }
  const fingerprint = await collectFingerprint(deps.runner, {
    python: config.python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
  const needsPython = [...config.streamsWorkloads, ...config.contentionWorkloads].some((w) => w.builtin);
  const blockers = benchBlockers(fingerprint, config.gpuIndex).filter((b) => needsPython || !b.startsWith('Python') && !b.includes('PyTorch'));
  if (blockers.length > 0) throw new UserError(`cannot bench here: ${blockers[0]} (run gpushare doctor for details)`);

  const plan = buildPlan(config, fingerprint);
  const createdAt = deps.clock.nowIso();
  const id = runId(createdAt, fingerprint, config.gpuIndex);
  const dir = options.out ?? path.join(PACKAGE_ROOT, 'results', id);
  const store = await openRunDirectory(dir, id);
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
  };
  await store.saveRun(run);

  const progress = makeProgress(options.style, { out: deps.out, err: deps.err });
  const gpu = fingerprint.gpus.find((g) => g.index === config.gpuIndex);
  progress.emit({ type: 'run-start', runId: id, dir, device: gpu?.name ?? '?', comparisons: plan.comparisons.length, trials: plan.comparisons.reduce((n, c) => n + c.rounds * c.arms.length, 0) });

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
  const sampler = startSmiSampler(deps.runner, deps.clock, { gpuIndex: config.gpuIndex, intervalMs: config.sampleIntervalMs });
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
    run.samples = sampler.samples;
    run.sampler = sampler.status();
    run.finishedAt = deps.clock.nowIso();
    await store.saveRun(run);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', onExit);
    if (run.status !== 'complete') deps.err(`gpushare: run ${run.status}; ${run.trials.length} finished trials are saved in ${dir}\n`);
  }
  const metrics = runMetrics(run);
  const verdicts = runVerdicts(run, config.thresholds);
  if (options.style === 'json') deps.out(`${JSON.stringify({ type: 'summary', runId: id, dir, status: run.status, metrics, verdicts: verdictsJson(verdicts) })}\n`);
  else deps.out(summaryText(run, metrics, verdicts, dir));
  return ExitCode.ok;
}

/** `<date>-<gpu>-<6 hex>`, e.g. 2026-11-21-h200-3fa9c2. */
function runId(createdAt: string, fingerprint: Fingerprint, gpuIndex: number): string {
  const name = fingerprint.gpus.find((g) => g.index === gpuIndex)?.name ?? 'gpu';
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
      lines.push(`${c.id}: ${c.clientEnv.length} client(s), arms ${c.arms.map((a) => a.id).join(' ')}, ${c.rounds} rounds (ABBA) = ${c.arms.length * c.rounds} trials`);
      lines.push(`  ${c.workload.argv.join(' ')}`);
    }
  }
  const trials = plan.comparisons.reduce((n, c) => n + c.arms.length * c.rounds, 0);
  lines.push('', `${plan.comparisons.length} comparisons, ${trials} trials, about ${Math.round(estimateSeconds(config, plan.comparisons))} s (estimate)`);
  return `${lines.join('\n')}\n`;
}
