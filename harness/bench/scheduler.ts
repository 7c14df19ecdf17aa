/**
 * Runs a planned run: per mode (with its MPS daemon where needed), per comparison its client
 * processes from the pool (pool/), and their trials in ABBA order. Every finished trial is saved
 * before the next starts.
 */
import type { Clock } from '../core/clock.js';
import { Interrupted } from '../core/errors.js';
import type { ProcessRunner } from '../core/process.js';
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import type { SessionMpsStart } from '../session/lifecycle.js';
import { usableCpus } from '../system/cpus.js';
import type { Sampler } from '../system/nvidia/sampler.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import type { Reaper } from '../system/proc/reaper.js';
import type { WorkloadClient } from '../workload/client.js';
import { analyzeComparison } from './analysis/analyze.js';
import type { ComparisonAnalysis } from './analysis/types.js';
import { orderTrials, type PlannedTrial, roundTrials } from './comparisons.js';
import { budgetShareS, stopDecision, targeted } from './policy.js';
import {
  type ClientPool,
  createPool,
  type Lease,
  type PoolMode,
  type Prestarted,
  type Readiness,
} from './pool/index.js';
import type { Progress } from './progress.js';
import type { Comparison, ModeRecord, Run, Stop, Trial } from './record/schema.js';
import type { RunStore } from './record/store.js';
import { failure, runTrial, type TrialDeps, trialBase } from './trial.js';

export { idleCpus, type Prestarted, prestartFirst, startsFirstEarly } from './pool/index.js';

export interface SchedulerDeps {
  runner: ProcessRunner;
  clock: Clock;
  store: RunStore;
  progress: Progress;
  sampler: Sampler;
  reaper: Reaper;
  signal: AbortSignal;
  /**
   * The MPS daemon seam: `place` puts the daemon's record in the mode's record, which is saved before
   * the daemon starts; the daemon's stop records how it ended and where its logs went.
   */
  startMps: (place: (daemon: MpsDaemonRecord) => void) => Promise<SessionMpsStart>;
  /** The first comparison's clients, started before the run began (see prestartFirst). */
  prestarted?: Prestarted | null;
}

/** Trials of every comparison's minimum rounds: the total a progress display starts from. */
export function plannedTrials(run: Pick<Run, 'plan' | 'config'>): number {
  return run.plan.reduce((n, c) => n + c.arms.length * run.config.roundPolicy.minRounds, 0);
}

/** How many sampling intervals a wait for the next sample lasts at most. */
const SAMPLE_WAIT_INTERVALS = 3;

export async function executeRun(run: Run, deps: SchedulerDeps): Promise<void> {
  const scheduler = new Scheduler(run, deps);
  try {
    for (const record of run.modes) await scheduler.runMode(record);
  } finally {
    await scheduler.pool.close();
  }
}

class Scheduler {
  private total: number;
  /** Time spent on rounds beyond the minimum, µs: what the time budget counts. */
  private extraUs = 0;
  /** Where each comparison's client processes come from and go to. */
  readonly pool: ClientPool;
  private readonly trialDeps: TrialDeps;

  constructor(
    private readonly run: Run,
    private readonly deps: SchedulerDeps,
  ) {
    this.total = plannedTrials(run);
    this.trialDeps = { config: run.config, clock: deps.clock, signal: deps.signal, sampler: deps.sampler };
    this.pool = createPool(run.config, {
      run,
      runner: deps.runner,
      clock: deps.clock,
      reaper: deps.reaper,
      signal: deps.signal,
      store: deps.store,
      warn: (message) => this.warn(message),
      startDaemon: (record) => this.startDaemon(record),
      gpuUuid: visibleDevice(run.fingerprint, run.config.gpuIndex),
      cpus: usableCpus(run.fingerprint.host),
      prestarted: deps.prestarted ?? null,
      sampledAfter: (afterUs) => this.sampledAfter(afterUs),
    });
  }

  /** Waits for the sampler's next sample after `afterUs`: at most a few of its intervals (a stopped sampler sends none). */
  private async sampledAfter(afterUs: number): Promise<void> {
    const { clock, sampler } = this.deps;
    const deadlineUs = afterUs + SAMPLE_WAIT_INTERVALS * this.run.config.sampleIntervalMs * 1000;
    while (
      (sampler.samples.at(-1)?.tUs ?? 0) <= afterUs &&
      clock.monotonicUs() < deadlineUs &&
      !this.deps.signal.aborted
    )
      await clock.sleep(10);
  }

  async runMode(record: ModeRecord): Promise<void> {
    this.deps.progress.emit({ type: 'mode', record });
    if (record.status !== 'ran') return;
    const comparisons = this.run.plan.filter(
      (c) => c.mode === record.mode && !this.run.stops.some((s) => s.comparisonId === c.id),
    );
    if (comparisons.length === 0) return; // finished before a --resume
    if (record.mode !== 'mps') {
      for (const c of comparisons) await this.runComparison(c, { env: {}, daemon: null });
      return;
    }
    this.throwIfAborted();
    const started = await this.pool.modeDaemon(record);
    if (!started.ok) {
      record.status = 'failed';
      record.reason = started.reason;
      for (const c of comparisons) {
        await this.skipRest(
          orderTrials(c, this.run.config.roundPolicy.minRounds),
          `the MPS daemon did not start: ${started.reason}`,
        );
        await this.stop(c, 'aborted');
      }
      this.deps.progress.emit({ type: 'mode', record });
      return;
    }
    const daemon = started.daemon;
    try {
      for (const c of comparisons) await this.runComparison(c, { env: daemon.env, daemon });
    } finally {
      await this.pool.endMode(); // processes connected to this daemon go before it does
      await daemon.stop();
    }
  }

  /**
   * The MPS mode's daemon. Its record is on disk before `nvidia-cuda-mps-control -d` runs: a harness
   * killed with -9 while the daemon starts leaves it behind, and --resume finds it through this record.
   */
  private startDaemon(record: ModeRecord): Promise<SessionMpsStart> {
    return this.deps.startMps((daemon) => {
      record.mps = daemon;
    });
  }

  /** One comparison: its processes from the pool, its rounds, and the processes back to the pool. */
  private async runComparison(c: Comparison, mode: PoolMode): Promise<void> {
    if (this.run.stops.some((stop) => stop.comparisonId === c.id)) return;
    const done = new Set(this.run.trials.map((t) => t.id));
    this.throwIfAborted();
    this.deps.progress.emit({ type: 'comparison', comparison: c });
    const lease = await this.pool.acquire(c, mode);
    let finished = false;
    try {
      const readiness = await this.pool.ready(lease);
      if (readiness.kind === 'ready') finished = await this.runRounds(lease, done);
      else await this.notReady(lease, readiness, done);
    } finally {
      await this.pool.release(lease, finished);
    }
  }

  /** A comparison whose processes cannot measure: skipped (unsupported here) or stopped (one failed). */
  private async notReady(
    lease: Lease,
    readiness: Exclude<Readiness, { kind: 'ready' }>,
    done: ReadonlySet<string>,
  ): Promise<void> {
    const c = lease.comparison;
    const planned = orderTrials(c, this.run.config.roundPolicy.minRounds);
    if (readiness.kind === 'unsupported') {
      await this.skipRest(planned, `skipped: ${readiness.reason}`);
      await this.stop(c, 'unsupported', readiness.reason);
      return;
    }
    const first = planned.find((t) => !done.has(t.id)) as PlannedTrial;
    const readyMs = this.run.config.timeouts.readyMs;
    const outcome = failure(
      this.trialDeps,
      first,
      this.deps.clock.nowIso(),
      readiness.reply,
      readiness.client,
      readiness.clients,
      'ready',
      readyMs,
    );
    await this.record(outcome);
    await this.skipPlanned(c, `comparison stopped: ${'reason' in outcome ? outcome.reason : outcome.status}`);
    await this.stop(c, 'aborted');
  }

  /** c's rounds until the stop rule says so: true where it stopped as planned, false where a trial failed. */
  private async runRounds(lease: Lease, done: ReadonlySet<string>): Promise<boolean> {
    const c = lease.comparison;
    const policy = this.run.config.roundPolicy;
    const left = this.run.plan.filter((x) => !this.run.stops.some((s) => s.comparisonId === x.id)).length;
    let shareUs: number | null = null;
    for (let round = 0; ; round++) {
      const extra = round >= policy.minRounds;
      if (extra) {
        shareUs ??= budgetShareS(policy, this.extraUs / 1e6, left) * 1e6;
        if (!roundTrials(c, round).every((t) => done.has(t.id))) this.total += c.arms.length;
      }
      const roundStartUs = this.deps.clock.monotonicUs();
      if (!(await this.runRound(lease, round, done))) return false;
      if (extra) {
        const spentUs = this.deps.clock.monotonicUs() - roundStartUs;
        this.extraUs += spentUs;
        shareUs = (shareUs ?? 0) - spentUs;
      }
      const reason = stopDecision(this.analysis(c), policy, round + 1, shareUs !== null && shareUs <= 0);
      if (reason) {
        await this.stop(c, reason);
        return true;
      }
    }
  }

  /** The round's trials not run yet, each saved as it ends: false where one failed and the comparison stopped. */
  private async runRound(lease: Lease, round: number, done: ReadonlySet<string>): Promise<boolean> {
    const c = lease.comparison;
    for (const planned of roundTrials(c, round).filter((t) => !done.has(t.id))) {
      // The alone arm is the plain process's (see ALONE_ARM); every other arm, the comparison's processes'.
      if (planned.arm.plain && lease.plain === null)
        throw new Error(`${planned.id}: no plain process for the alone arm`);
      const clients = planned.arm.plain ? [lease.plain as WorkloadClient] : lease.group.clients;
      const outcome = await runTrial(this.trialDeps, planned, clients);
      await this.record(outcome);
      if (outcome.status === 'failed' || outcome.status === 'timeout') {
        await this.skipPlanned(c, `comparison stopped after ${planned.id}: ${outcome.reason}`);
        await this.stop(c, 'aborted');
        return false;
      }
    }
    return true;
  }

  /** Trials of c's minimum rounds that never ran, once the comparison has to stop early. */
  private skipPlanned(c: Comparison, reason: string): Promise<void> {
    const planned = orderTrials(c, this.run.config.roundPolicy.minRounds);
    return this.skipRest(
      planned.filter((t) => !this.run.trials.some((x) => x.id === t.id)),
      reason,
    );
  }

  private analysis(c: Comparison): ComparisonAnalysis {
    return analyzeComparison(this.run, c, this.run.config.thresholds);
  }

  private async stop(c: Comparison, reason: Stop['reason'], detail?: string): Promise<void> {
    const analysis = this.analysis(c);
    const halfWidths = Object.fromEntries(targeted(analysis).map((t) => [t.id, t.halfWidth]));
    this.run.stops.push({
      comparisonId: c.id,
      rounds: analysis.rounds.length,
      reason,
      halfWidths,
      ...(detail !== undefined ? { detail } : {}),
    });
    await this.save();
    this.deps.progress.emit({ type: 'stop', stop: this.run.stops.at(-1) as Stop });
  }

  private async skipRest(trials: PlannedTrial[], reason: string): Promise<void> {
    const now = this.deps.clock.nowIso();
    for (const planned of trials)
      this.run.trials.push({ ...trialBase(this.trialDeps, planned, now), status: 'skipped', reason });
    if (trials.length > 0) await this.save();
  }

  private async record(trial: Trial): Promise<void> {
    this.run.trials.push(trial);
    await this.save();
    const comparison = this.run.plan.find((c) => c.id === trial.comparisonId);
    const running = comparison
      ? (this.analysis(comparison).metrics.find((m) => m.metric.headline)?.metric ?? null)
      : null;
    this.deps.progress.emit({ type: 'trial', trial, done: this.run.trials.length, total: this.total, running });
  }

  private warn(message: string): void {
    this.run.warnings.push(message);
    this.deps.progress.emit({ type: 'warning', message });
  }

  private async save(): Promise<void> {
    this.run.samples = this.deps.sampler.samples;
    this.run.sampler = this.deps.sampler.status();
    await this.deps.store.saveRun(this.run);
  }

  private throwIfAborted(): void {
    if (this.deps.signal.aborted) throw new Interrupted(this.deps.signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT');
  }
}
