/**
 * Runs a planned run: per mode (with its MPS daemon where needed), per comparison a group of client
 * processes, and their trials in ABBA order. Every finished trial is saved before the next starts.
 */
import path from 'node:path';
import type { Clock } from '../core/clock.js';
import { Interrupted } from '../core/errors.js';
import type { ProcessRunner } from '../core/process.js';
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import type { SessionDaemon, SessionMpsStart } from '../session/lifecycle.js';
import { type UsableCpus, usableCpus } from '../system/cpus.js';
import { type Sampler, tagSamples } from '../system/nvidia/sampler.js';
import { gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import type { Reaper } from '../system/proc/reaper.js';
import { type ClientReply, WorkloadClient } from '../workload/client.js';
import {
  HOLD_CPUS_ENV,
  HOLD_ENV,
  HOLD_IDLE_ENV,
  type ReadyMessage,
  runCommand,
  TENANTS_ENV,
  type TenantResult,
} from '../workload/protocol.js';
import { releaseLeadMs } from '../workload/release.js';
import { implausibleResult, overlap, overlapShortfall } from '../workload/result-checks.js';
import { analyzeComparison } from './analysis/analyze.js';
import { summarizeLatencies } from './analysis/measures.js';
import type { ComparisonAnalysis } from './analysis/types.js';
import {
  type Ahead,
  armProcesses,
  growable,
  loopCheckMs,
  orderTrials,
  type PlannedTrial,
  pinnedIds,
  prestartable,
  processCount,
  processesToStart,
  roundTrials,
  switchable,
} from './plan.js';
import { budgetShareS, stopDecision, targeted } from './policy.js';
import type { Progress } from './progress.js';
import type { Arm, ClientResult, Comparison, ModeRecord, Run, Stop, Trial } from './record/schema.js';
import type { RunStore } from './record/store.js';

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
  /** Prestart beyond the next comparison (see aheadPolicy); null or absent: the next comparison's processes only. */
  ahead?: Ahead | null;
}

/** Clients started for the first comparison before the scheduler ran, at `startedUs` (CLOCK_MONOTONIC µs): it waits for their ready lines. */
export interface Prestarted {
  comparisonId: string;
  clients: WorkloadClient[];
  startedUs: number;
}

/**
 * The first comparison's clients, started while the run's preamble (the Python probe, which imports
 * PyTorch) goes on: nothing measures yet, so they go through their whole start (CUDA, build, warm-up)
 * beside it. The sampler must be running already: their memory is measured from the idle GPU before
 * them. Null where that comparison may not start so (see startsFirstEarly).
 */
export function prestartFirst(
  config: Run['config'],
  plan: readonly Comparison[],
  fingerprint: Run['fingerprint'],
  runner: ProcessRunner,
  clock: Clock,
): Prestarted | null {
  const first = plan[0];
  if (first === undefined || !startsFirstEarly(config, plan, fingerprint)) return null;
  return {
    comparisonId: first.id,
    startedUs: clock.monotonicUs(),
    clients: startClients(runner, first, visibleDevice(fingerprint, config.gpuIndex), {}, {}),
  };
}

/**
 * Whether prestartFirst starts the first comparison's clients (the run's sampler must start before
 * them): not with --fresh-clients, nor for an MPS comparison (its daemon is not up) or where there is
 * no such GPU. A custom command is checked on the GPU before the run: where it is the run's only one
 * and the first comparison's, one process per client, it is checked on that comparison's client 0
 * (see refuseFailingCommands); any other waits for its check, and so do the clients.
 */
export function startsFirstEarly(
  config: Run['config'],
  plan: readonly Comparison[],
  fingerprint: Run['fingerprint'],
): boolean {
  const first = plan[0];
  if (first === undefined || gpuAt(fingerprint, config.gpuIndex) === undefined) return false;
  if (config.freshClients === true || first.mode === 'mps') return false;
  const custom = [...config.streamsWorkloads, ...config.contentionWorkloads].filter((w) => !w.builtin);
  const checkedOnFirst = (argv: readonly string[]) =>
    !first.workload.builtin &&
    first.tenants === undefined &&
    JSON.stringify(argv) === JSON.stringify(first.workload.argv);
  return custom.every((w) => checkedOnFirst(w.argv));
}

/** Trials of every comparison's minimum rounds: the total a progress display starts from. */
export function plannedTrials(run: Pick<Run, 'plan' | 'config'>): number {
  return run.plan.reduce((n, c) => n + c.arms.length * run.config.roundPolicy.minRounds, 0);
}

export async function executeRun(run: Run, deps: SchedulerDeps): Promise<void> {
  const scheduler = new Scheduler(run, deps);
  try {
    for (const record of run.modes) await scheduler.runMode(record);
  } finally {
    try {
      await scheduler.closeCarried();
      await scheduler.closeHeld(() => true);
    } finally {
      await scheduler.stopEarlyDaemon(); // after the held clients that name it
    }
  }
}

/** A comparison's client processes, as started; `forget` takes each off the reaper once it has exited. */
interface ClientGroup {
  comparisonId: string;
  clients: WorkloadClient[];
  forget: Array<() => void>;
  /** The comparison these processes were started for: `comparisonId`, or an earlier one they switched from. */
  startedFor: string;
  /** The index of its first client: 0, or the first one a grown comparison adds to the processes it keeps. */
  from: number;
  /** Started before the run, not held: when (CLOCK_MONOTONIC µs); absent for held clients, told to start by the scheduler. */
  startedUs?: number;
}

/** The MPS mode's daemon, started early (see prestartAfter): how its start went, or what it threw, given to the mode when it begins. */
type EarlyDaemon = { record: ModeRecord } & ({ started: SessionMpsStart } | { error: unknown });

/** How the finished comparison's processes serve the next one: told to switch workloads, or kept as its first clients. */
type Carry = 'switch' | 'grow';

class Scheduler {
  private total: number;
  private readonly gpuUuid: string;
  /** The CPUs this run counts and pins to (its host's, as far as its cpuset and quota allow). */
  private readonly cpus: UsableCpus;
  /** Time spent on rounds beyond the minimum, µs: what the time budget counts. */
  private extraUs = 0;
  /**
   * Later comparisons' clients, started while the current one measures and held (imported, no CUDA
   * yet), in run order; at most one group per comparison. Only the next comparison's without `ahead`.
   */
  private held: ClientGroup[] = [];
  /** The finished comparison's processes, kept for the next one: told to switch (see switchable), or kept as they are (see growable). */
  private carried: (ClientGroup & { carry: Carry }) | null = null;
  /** The MPS mode's daemon, started as the last comparison before that mode began (before its first trial), so that the mode's first clients could import meanwhile. */
  private earlyDaemon: EarlyDaemon | null = null;
  /** Workload commands (argv) whose ready line said they hold when asked: those may be prestarted. */
  private readonly holding = new Set<string>();
  /** Workload commands (argv) whose ready line said they switch: their processes may serve the next comparison. */
  private readonly switching = new Set<string>();
  /** Held processes still importing, stopped for the trial under way (see suspendImports). */
  private suspended: WorkloadClient[] = [];

  constructor(
    private readonly run: Run,
    private readonly deps: SchedulerDeps,
  ) {
    this.total = plannedTrials(run);
    this.gpuUuid = visibleDevice(run.fingerprint, run.config.gpuIndex);
    this.cpus = usableCpus(run.fingerprint.host);
    const early = deps.prestarted;
    if (early)
      this.held.push({
        ...early,
        startedFor: early.comparisonId,
        from: 0,
        forget: early.clients.map((client) => deps.reaper.add(() => client.kill())),
      });
  }

  async runMode(record: ModeRecord): Promise<void> {
    this.deps.progress.emit({ type: 'mode', record });
    if (record.status !== 'ran') return;
    const comparisons = this.run.plan.filter(
      (c) => c.mode === record.mode && !this.run.stops.some((s) => s.comparisonId === c.id),
    );
    if (comparisons.length === 0) return; // finished before a --resume
    if (record.mode !== 'mps') {
      for (const c of comparisons) await this.runComparison(c, {}, null);
      return;
    }
    this.throwIfAborted();
    const early = this.earlyDaemon?.record === record ? this.earlyDaemon : null;
    this.earlyDaemon = null;
    if (early !== null && 'error' in early) throw early.error; // as the start would have thrown here
    const started = early?.started ?? (await this.startDaemon(record));
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
      for (const c of comparisons) await this.runComparison(c, daemon.env, daemon);
    } finally {
      await this.closeCarried(); // connected to this daemon: they go before it does
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

  /** The daemon started early for a mode that never ran (an interruption): stopped. */
  async stopEarlyDaemon(): Promise<void> {
    const early = this.earlyDaemon;
    this.earlyDaemon = null;
    if (early !== null && 'started' in early && early.started.ok) await early.started.daemon.stop();
  }

  private async runComparison(
    c: Comparison,
    modeEnv: Record<string, string>,
    daemon: SessionDaemon | null,
  ): Promise<void> {
    if (this.run.stops.some((stop) => stop.comparisonId === c.id)) return;
    const done = new Set(this.run.trials.map((t) => t.id));
    this.throwIfAborted();
    this.deps.progress.emit({ type: 'comparison', comparison: c });
    const config = this.run.config;
    // Started while the previous comparison measured: told now, once that one's clients have exited, to
    // start CUDA; its start is this moment, so the memory baseline before it is the idle GPU. Or the
    // previous comparison's processes, told now to switch to this workload.
    // A grown comparison keeps the previous one's processes and starts (or was prestarted) only the rest.
    const carried = this.carried?.comparisonId === c.id ? this.carried : null;
    const kept = carried?.carry === 'grow' ? carried.clients.length : 0;
    // Processes switched to c are all it runs: one held for it (a switch not foreseen) is closed.
    const held =
      carried?.carry === 'switch' ? null : (this.held.find((g) => g.comparisonId === c.id && g.from === kept) ?? null);
    // Held for a comparison that will not run, now or later (held for this one with other processes kept).
    const later = new Set(laterComparisons(this.run, c).map((x) => x.id));
    await this.closeHeld((g) => g !== held && !later.has(g.comparisonId));
    this.held = this.held.filter((g) => g !== held);
    if (carried === null) await this.closeCarried();
    this.carried = null;
    const whole = held === null || held.from + held.clients.length >= processCount(c);
    const startedUs = (whole ? held?.startedUs : undefined) ?? this.deps.clock.monotonicUs();
    // Held clients are told to start; where only some of c's processes were prestarted, the rest start now.
    if (held && held.startedUs === undefined) for (const client of held.clients) client.start();
    const started =
      held === null
        ? carried?.carry === 'switch'
          ? null
          : this.spawnClients(c, modeEnv, {}, kept)
        : whole
          ? held
          : joined(held, this.spawnClients(c, modeEnv, {}, held.from + held.clients.length));
    const group = grownGroup(carried, started);
    const { clients, forget } = group;
    if (carried?.carry === 'switch')
      for (const [i, client] of clients.entries())
        client.switchTo(c.workload.argv.slice(1), clientLabel(c, i), switchedName(c));
    for (const [i, client] of clients.slice(0, kept).entries()) client.continueAs(clientLabel(c, i));
    // Kept processes said ready when they started: only the others say it now.
    const keptReady = clients
      .slice(0, kept)
      .map((client): ClientReply<ReadyMessage> => ({ kind: 'message', message: client.lastReady as ReadyMessage }));
    const policy = config.roundPolicy;
    // Trials of the minimum rounds that never ran, once the comparison has to stop early.
    const skipPlanned = (reason: string) =>
      this.skipRest(
        orderTrials(c, policy.minRounds).filter((t) => !this.run.trials.some((x) => x.id === t.id)),
        reason,
      );
    try {
      const ready = [
        ...keptReady,
        ...(await Promise.all(
          clients.slice(kept).map((client) => client.awaitReady(config.timeouts.readyMs, this.deps.signal)),
        )),
      ];
      const notReady = ready.findIndex((r) => r.kind !== 'message');
      const unsupported =
        notReady === -1 ? tenancyRefusal(c, ready as ReadyReplies) : unsupportedReply(ready[notReady]);
      if (unsupported !== null) {
        await this.skipRest(orderTrials(c, policy.minRounds), `skipped: ${unsupported}`);
        await this.stop(c, 'unsupported', unsupported);
        return;
      }
      if (notReady !== -1) {
        const first = orderTrials(c, policy.minRounds).find((t) => !done.has(t.id)) as PlannedTrial;
        const outcome = this.failure(
          first,
          this.deps.clock.nowIso(),
          ready[notReady] as ClientReply<unknown>,
          notReady,
          clients,
          'ready',
          config.timeouts.readyMs,
        );
        await this.record(outcome);
        await skipPlanned(`comparison stopped: ${'reason' in outcome ? outcome.reason : outcome.status}`);
        await this.stop(c, 'aborted');
        return;
      }
      (this.run.clientStarts ??= []).push({
        comparisonId: c.id,
        startedUs,
        readyUs: this.deps.clock.monotonicUs(),
        ...(held && held.startedUs === undefined && whole ? { prestarted: true as const } : {}),
        ...readyMemory(ready as ReadyReplies),
        ...(carried?.carry === 'switch'
          ? { switchedFrom: carried.startedFor, ...releasedMemory(ready as ReadyReplies) }
          : {}),
        ...(carried?.carry === 'grow' ? { grownFrom: carried.startedFor } : {}),
      });
      if (daemon) await daemon.serverPids();
      if ((ready as ReadyReplies).every((r) => r.message.holds === true)) this.holding.add(commandKey(c));
      const switches = (ready as ReadyReplies).every((r) => r.message.switches === true);
      if (switches) this.switching.add(commandKey(c));
      const next = nextComparison(this.run, c);
      const carry: Carry | null =
        next === null
          ? null
          : switchable(this.run.config, c, next, switches)
            ? 'switch'
            : growable(this.run.config, c, next)
              ? 'grow'
              : null;
      if (this.deps.ahead) await this.prestartAhead(c, modeEnv, this.deps.ahead);
      else if (carry === 'switch' && next !== null) await this.prestartAfterSwitches(c, next, modeEnv);
      else await this.prestartAfter(c, next, modeEnv, carry === 'grow' ? processCount(c) : 0);
      const left = this.run.plan.filter((x) => !this.run.stops.some((s) => s.comparisonId === x.id)).length;
      let shareUs: number | null = null;
      for (let round = 0; ; round++) {
        const extra = round >= policy.minRounds;
        if (extra) {
          shareUs ??= budgetShareS(policy, this.extraUs / 1e6, left) * 1e6;
          if (!roundTrials(c, round).every((t) => done.has(t.id))) this.total += c.arms.length;
        }
        const roundStartUs = this.deps.clock.monotonicUs();
        for (const planned of roundTrials(c, round).filter((t) => !done.has(t.id))) {
          if (this.deps.ahead) this.suspendImports(armProcesses(c, planned.arm));
          let outcome: Trial;
          try {
            outcome = await this.runTrial(planned, clients);
          } finally {
            this.resumeImports();
          }
          await this.record(outcome);
          if (outcome.status === 'failed' || outcome.status === 'timeout') {
            await skipPlanned(`comparison stopped after ${planned.id}: ${outcome.reason}`);
            await this.stop(c, 'aborted');
            return;
          }
          // Processes that have imported free their cores: more may import on them.
          if (this.deps.ahead) await this.prestartAhead(c, modeEnv, this.deps.ahead);
        }
        if (extra) {
          const spentUs = this.deps.clock.monotonicUs() - roundStartUs;
          this.extraUs += spentUs;
          shareUs = (shareUs ?? 0) - spentUs;
        }
        const reason = stopDecision(this.analysis(c), policy, round + 1, shareUs !== null && shareUs <= 0);
        if (reason) {
          await this.stop(c, reason);
          // Stopped as planned: its processes serve the next comparison.
          if (next !== null && carry !== null && !this.deps.signal.aborted)
            this.carried = { comparisonId: next.id, clients, forget, startedFor: group.startedFor, from: 0, carry };
          break;
        }
      }
    } finally {
      // Kept for the next comparison (this.carried), or told to exit; their stderr so far is kept either way.
      const carriedOn = this.carried?.clients === clients;
      const exitMs = this.deps.signal.aborted ? 0 : config.timeouts.exitMs;
      const closed = carriedOn ? [] : await Promise.all(clients.map((client) => client.close(exitMs)));
      const start = this.run.clientStarts?.find((s) => s.comparisonId === c.id && s.startedUs === startedUs);
      if (start) start.endUs = this.deps.clock.monotonicUs();
      if (!carriedOn) for (const f of forget) f();
      for (const [i, client] of clients.entries()) {
        if (closed[i] === 'killed' && !this.deps.signal.aborted)
          this.warn(`${client.label} did not exit within ${exitMs} ms of the exit command and was killed`);
        const stderr = client.stderrTail();
        if (stderr) await this.deps.store.writeText(`logs/${c.id.replace(/\//g, '-')}-c${i}.stderr.log`, stderr);
      }
    }
  }

  /** c's client processes from index `from` on (see startClients), each on the reaper until it has exited. */
  private spawnClients(
    c: Comparison,
    modeEnv: Record<string, string>,
    extraEnv: Record<string, string>,
    from = 0,
    to = processCount(c),
  ): ClientGroup {
    const clients = startClients(this.deps.runner, c, this.gpuUuid, modeEnv, extraEnv, from, to);
    return {
      comparisonId: c.id,
      startedFor: c.id,
      from,
      clients,
      forget: clients.map((client) => this.deps.reaper.add(() => client.kill())),
    };
  }

  /**
   * Starts the clients of the comparison after `c` from index `from` on (those a grown comparison adds),
   * held: they import while c measures and touch the GPU only once told to start (see prestartable). For
   * the first comparison of the MPS mode, the mode's daemon is started first: their environment names it.
   */
  private async prestartAfter(
    c: Comparison,
    next: Comparison | null,
    modeEnv: Record<string, string>,
    from: number,
  ): Promise<void> {
    const holds = next !== null && this.holds(next);
    if (next !== null && this.held.some((g) => g.comparisonId === next.id)) return; // prestarted already, further back
    await this.closeHeld(() => true); // one held for another comparison (never left behind unowned)
    if (next === null || !prestartable(this.run.config, c, next, this.cpus.count, holds, processCount(next) - from))
      return;
    const env = await this.envFor(c, next, modeEnv);
    if (env === null) return;
    this.held.push(this.spawnClients(next, env, holdEnv(this.cpus, c), from));
  }

  /**
   * Where c's processes will switch to `next` (and maybe on), prestarts the first later comparison of
   * c's mode or the next non-MPS one that needs processes of its own, so that they import for longer
   * than one comparison (streams/pipeline is short). An MPS one waits for the last comparison before it.
   */
  private async prestartAfterSwitches(c: Comparison, next: Comparison, modeEnv: Record<string, string>): Promise<void> {
    let prev = next;
    let target = nextComparison(this.run, next);
    while (target !== null && switchable(this.run.config, prev, target)) {
      prev = target;
      target = nextComparison(this.run, target);
    }
    if (target === null || growable(this.run.config, prev, target)) return;
    if (target.mode === 'mps' && c.mode !== 'mps') return;
    await this.prestartAfter(c, target, modeEnv, 0);
  }

  /**
   * Prestarts, held, the processes later comparisons will start (see processesToStart), in run order,
   * as many as import at once on the cores c's smallest arm leaves free: a process that said holding
   * has imported and frees its core. Called before c's trials and after each; a trial of more clients
   * stops the importers it leaves no core for (suspendImports), and the others import at idle priority
   * (see Ahead). At most `ahead.maxHeld` are held at once.
   */
  private async prestartAhead(c: Comparison, modeEnv: Record<string, string>, ahead: Ahead): Promise<void> {
    const waiting = this.held.flatMap((g) => (g.startedUs === undefined ? g.clients : []));
    const importing = this.importing().length;
    // Beside c's smallest arm (its solo ones): a trial of more clients stops the importers it has no core for.
    const fewest = Math.min(...c.arms.map((arm) => armProcesses(c, arm)));
    let free = Math.min(this.cpus.count - 1 - fewest - importing, ahead.maxHeld - waiting.length);
    let prev = c;
    for (const later of laterComparisons(this.run, c)) {
      if (free <= 0) return;
      const switches = prev.workload.builtin || this.switching.has(commandKey(prev));
      const [from, to] = processesToStart(this.run.config, prev, later, switches);
      prev = later;
      if (from === to || !this.holds(later)) continue;
      const group = this.held.find((g) => g.comparisonId === later.id);
      if (group !== undefined && group.from !== from) continue; // held for other kept processes: closed at its turn
      const next = group === undefined ? from : group.from + group.clients.length;
      const count = Math.min(free, to - next);
      if (count <= 0) continue;
      const env = await this.envFor(c, later, modeEnv);
      if (env === null) continue;
      this.throwIfAborted();
      const spawned = this.spawnClients(
        later,
        env,
        { ...holdEnv(this.cpus, c), [HOLD_IDLE_ENV]: '1' },
        next,
        next + count,
      );
      if (group === undefined) this.held.push(spawned);
      else Object.assign(group, joined(group, spawned));
      free -= count;
    }
  }

  /** Held processes not yet started that have not said holding: importing (or at the start of their imports). */
  private importing(): WorkloadClient[] {
    return this.held.flatMap((g) =>
      g.startedUs === undefined ? g.clients.filter((client) => !client.holding && client.running) : [],
    );
  }

  /**
   * Before a trial of `active` processes: stops the importers there is no core for beside them and the
   * harness's (the last started first), so that no importer takes a core a measuring client needs;
   * resumeImports lets them go on after it. Importers otherwise run at idle priority.
   */
  private suspendImports(active: number): void {
    const importing = this.importing();
    const over = active + importing.length - (this.cpus.count - 1);
    this.suspended = over > 0 ? importing.slice(-over) : [];
    for (const client of this.suspended) client.suspend(true);
  }

  private resumeImports(): void {
    for (const client of this.suspended) client.suspend(false);
    this.suspended = [];
  }

  /** Whether `later`'s processes hold when asked: a built-in, or a command whose ready line said so. */
  private holds(later: Comparison): boolean {
    return later.workload.builtin || this.holding.has(commandKey(later));
  }

  /**
   * The environment `later`'s processes start with while c measures: c's mode's, or for an MPS
   * comparison prestarted from another mode, the MPS mode's daemon's, started now (once) for it; null
   * where that daemon did not start (the MPS mode says so at its turn).
   */
  private async envFor(
    c: Comparison,
    later: Comparison,
    modeEnv: Record<string, string>,
  ): Promise<Record<string, string> | null> {
    if (later.mode === c.mode) return modeEnv;
    if (later.mode !== 'mps') return {};
    if (this.earlyDaemon === null) {
      const record = this.run.modes.find((m) => m.mode === 'mps');
      if (record === undefined) return null;
      try {
        this.earlyDaemon = { record, started: await this.startDaemon(record) };
      } catch (error) {
        // Not this comparison's failure: the MPS mode throws it when it begins, as it would have.
        if (error instanceof Interrupted) throw error;
        this.earlyDaemon = { record, error };
      }
    }
    const early = this.earlyDaemon;
    return 'started' in early && early.started.ok ? early.started.daemon.env : null;
  }

  /** Held groups `which` picks (comparisons that will not run): told to exit. */
  async closeHeld(which: (group: ClientGroup) => boolean): Promise<void> {
    const closing = this.held.filter(which);
    this.held = this.held.filter((g) => !closing.includes(g));
    for (const group of closing) await this.closeGroup(group);
  }

  /** Carried processes whose comparison never ran (an interruption, a failed mode): told to exit. */
  async closeCarried(): Promise<void> {
    const group = this.carried;
    this.carried = null;
    if (group !== null) await this.closeGroup(group);
  }

  private async closeGroup(group: ClientGroup): Promise<void> {
    const exitMs = this.deps.signal.aborted ? 0 : this.run.config.timeouts.exitMs;
    await Promise.all(group.clients.map((client) => client.close(exitMs)));
    for (const f of group.forget) f();
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

  private async runTrial(planned: PlannedTrial, clients: WorkloadClient[]): Promise<Trial> {
    const { clock, signal } = this.deps;
    const config = this.run.config;
    const startedAt = clock.nowIso();
    const work = planned.arm.work;
    const leadMs = releaseLeadMs(config.releaseLeadMs, planned.arm.clients.length);
    const check = loopCheckMs(planned);
    const timeoutMs =
      (work.kind === 'fixed-duration' ? work.durationMs : 0) + leadMs + (check ?? 0) + config.timeouts.trialMs;
    const startAtUs = clock.monotonicUs() + leadMs * 1000;
    if (planned.comparison.tenants !== undefined)
      return this.runTenantsTrial(planned, clients[0] as WorkloadClient, startAtUs, timeoutMs, startedAt, check);
    const released = planned.arm.clients.map((a) => ({ arm: a, client: clients[a.client] as WorkloadClient }));
    const replies = await Promise.all(
      released.map(({ arm, client }) =>
        client.run(
          runCommand(planned.id, startAtUs, work, arm.variant, released.length, null, null, check),
          planned.id,
          timeoutMs,
          signal,
        ),
      ),
    );
    const receivedUs = clock.monotonicUs();
    const bad = replies.findIndex((r) => r.kind !== 'message');
    if (bad !== -1) {
      return this.failure(
        planned,
        startedAt,
        replies[bad] as ClientReply<unknown>,
        released[bad]?.arm.client ?? null,
        clients,
        'window',
        timeoutMs,
      );
    }
    const results: ClientResult[] = replies.map((reply, i) => {
      const message = (reply as Extract<typeof reply, { kind: 'message' }>).message;
      const { arm, client } = released[i] as (typeof released)[number];
      return clientResult(arm, client.pid, message);
    });
    return this.checkedTrial(planned, startedAt, startAtUs, receivedUs, results);
  }

  /** One trial of an in-process comparison: one run command naming the arm's tenants, one result per tenant. */
  private async runTenantsTrial(
    planned: PlannedTrial,
    client: WorkloadClient,
    startAtUs: number,
    timeoutMs: number,
    startedAt: string,
    check: number | null,
  ): Promise<Trial> {
    const { clock, signal } = this.deps;
    const work = planned.arm.work;
    const tenants = planned.arm.clients.map((a) => a.client);
    const variant = planned.arm.clients[0]?.variant ?? { streams: 1 };
    const command = runCommand(planned.id, startAtUs, work, variant, tenants.length, null, tenants, check);
    const reply = await client.run(command, planned.id, timeoutMs, signal);
    const receivedUs = clock.monotonicUs();
    if (reply.kind !== 'message') return this.failure(planned, startedAt, reply, 0, [client], 'window', timeoutMs);
    const byTenant = new Map((reply.message.tenants ?? []).map((t) => [t.tenant, t]));
    const missing = tenants.filter((k) => !byTenant.has(k));
    if (missing.length > 0 || byTenant.size !== tenants.length) {
      const reason = `${client.label} answered for tenants [${[...byTenant.keys()].join(', ')}] instead of [${tenants.join(', ')}]`;
      return this.failure(
        planned,
        startedAt,
        { kind: 'failed', reason, exitCode: null },
        0,
        [client],
        'window',
        timeoutMs,
      );
    }
    const results = planned.arm.clients.map((arm) =>
      clientResult(arm, client.pid, byTenant.get(arm.client) as TenantResult),
    );
    return this.checkedTrial(planned, startedAt, startAtUs, receivedUs, results);
  }

  /** A trial's results through the checks of a result (plausible, overlapping windows): ok or invalid. */
  private checkedTrial(
    planned: PlannedTrial,
    startedAt: string,
    startAtUs: number,
    receivedUs: number,
    results: ClientResult[],
  ): Trial {
    const config = this.run.config;
    const work = planned.arm.work;
    tagSamples(
      this.deps.sampler.samples,
      planned.id,
      Math.min(...results.map((r) => r.windowStartUs)),
      Math.max(...results.map((r) => r.windowEndUs)),
    );
    const base = this.trialBase(planned, startedAt);
    const shared = results.length > 1 ? overlap(results) : null;
    const implausible = results
      .map((r) => implausibleResult(r, startAtUs, receivedUs, work))
      .find((why) => why !== null);
    if (implausible) return { ...base, status: 'invalid', reason: implausible, clients: results, overlap: shared };
    const short = shared && overlapShortfall(shared, config.minOverlap);
    if (short) return { ...base, status: 'invalid', reason: short, clients: results, overlap: shared };
    return { ...base, status: 'ok', clients: results, overlap: shared };
  }

  private failure(
    planned: PlannedTrial,
    startedAt: string,
    reply: ClientReply<unknown>,
    client: number | null,
    clients: WorkloadClient[],
    phase: 'ready' | 'window',
    timeoutMs: number,
  ): Trial {
    const base = this.trialBase(planned, startedAt);
    const label = client !== null ? (clients[client]?.label ?? `client ${client}`) : 'a client';
    if (reply.kind === 'failed') {
      return {
        ...base,
        status: 'failed',
        reason: reply.reason,
        client,
        exitCode: reply.exitCode,
        stderrTail: client !== null ? (clients[client]?.stderrTail().slice(-4000) ?? '') : '',
      };
    }
    const what = phase === 'ready' ? 'did not say ready' : 'sent no result';
    return {
      ...base,
      status: 'timeout',
      phase,
      reason: `${label} ${what} within ${Math.round(timeoutMs / 1000)} s`,
      client,
    };
  }

  private trialBase(planned: PlannedTrial, startedAt: string) {
    return {
      id: planned.id,
      comparisonId: planned.comparison.id,
      arm: planned.arm.id,
      round: planned.round,
      startedAt,
      finishedAt: this.deps.clock.nowIso(),
    };
  }

  private async skipRest(trials: PlannedTrial[], reason: string): Promise<void> {
    const now = this.deps.clock.nowIso();
    for (const planned of trials) this.run.trials.push({ ...this.trialBase(planned, now), status: 'skipped', reason });
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

/**
 * c's client processes (one for in-process tenancy) on GPU `gpuUuid` from index `from` on, with
 * `modeEnv` and `extraEnv` on top of each one's environment.
 */
function startClients(
  runner: ProcessRunner,
  c: Comparison,
  gpuUuid: string,
  modeEnv: Record<string, string>,
  extraEnv: Record<string, string>,
  from = 0,
  to?: number,
): WorkloadClient[] {
  // In-process tenancy: one process of c.tenants tenants (its env is client 0's, as every tenant's is).
  const processEnv = c.tenants !== undefined ? c.clientEnv.slice(0, 1) : c.clientEnv;
  return processEnv.slice(from, to).map((env, k) => {
    const i = from + k;
    return WorkloadClient.start(runner, i, clientLabel(c, i), c.workload.argv, {
      CUDA_VISIBLE_DEVICES: gpuUuid,
      GPUSHARE_CLIENT_INDEX: String(i),
      PYTHONUNBUFFERED: '1',
      ...modeEnv,
      ...env,
      ...(c.tenants !== undefined ? { [TENANTS_ENV]: String(c.tenants) } : {}),
      ...extraEnv,
    });
  });
}

/**
 * The processes a comparison runs with: the carried ones (switched, or kept by a grown comparison) and
 * the started ones (held or new; for a grown comparison, the ones it adds), in client order.
 */
function grownGroup(carried: (ClientGroup & { carry: Carry }) | null, started: ClientGroup | null): ClientGroup {
  if (carried === null) return started as ClientGroup;
  if (started === null) return carried;
  return {
    comparisonId: started.comparisonId,
    startedFor: carried.startedFor,
    from: 0,
    clients: [...carried.clients, ...started.clients],
    forget: [...carried.forget, ...started.forget],
  };
}

/** How the sets of commands whose ready lines said holds or switches know a comparison's: its exact argv. */
function commandKey(c: Pick<Comparison, 'workload'>): string {
  return c.workload.argv.join('\0');
}

/** A group and the processes started after it for the same comparison, in client order. */
function joined(first: ClientGroup, rest: ClientGroup): ClientGroup {
  return { ...first, clients: [...first.clients, ...rest.clients], forget: [...first.forget, ...rest.forget] };
}

/** What a held process is started with: hold, on the cores c's clients leave idle where they are pinned. */
function holdEnv(cpus: UsableCpus, c: Comparison): Record<string, string> {
  const idle = idleCpus(cpus, c);
  return { [HOLD_ENV]: '1', ...(idle.length > 0 ? { [HOLD_CPUS_ENV]: idle.join(',') } : {}) };
}

/** The comparison that runs after `c` in this run (skipped modes and stopped comparisons left out); null: none. */
function nextComparison(run: Run, c: Comparison): Comparison | null {
  return laterComparisons(run, c)[0] ?? null;
}

/** The comparisons that run after `c` in this run, in order (skipped modes and stopped comparisons left out). */
function laterComparisons(run: Run, c: Comparison): Comparison[] {
  const ran = new Set(run.modes.filter((m) => m.status === 'ran').map((m) => m.mode));
  const order = run.modes.flatMap((m) =>
    run.plan.filter((x) => x.mode === m.mode && ran.has(x.mode) && !run.stops.some((s) => s.comparisonId === x.id)),
  );
  const at = order.indexOf(c);
  return at === -1 ? [] : order.slice(at + 1);
}

/** CPUs a held client imports on: neither the harness's (the lowest usable) nor one a measuring client of `c` is pinned to; [] where `c` is not pinned. */
export function idleCpus(cpus: UsableCpus | null, c: Pick<Comparison, 'clientEnv'>): number[] {
  const pinned = pinnedIds(c);
  if (cpus === null || pinned.length === 0) return [];
  return cpus.ids.filter((id, i) => i !== 0 && !pinned.includes(id));
}

type ReadyReplies = Array<Extract<ClientReply<ReadyMessage>, { kind: 'message' }>>;

/** How failures and warnings name client `i` of `c` (or its one process of tenants). */
function clientLabel(c: Comparison, i: number): string {
  return c.tenants !== undefined
    ? `workload "${c.workload.name}" (${c.tenants} tenants)`
    : `workload "${c.workload.name}" (client ${i})`;
}

/** What switched processes' previous workload held and left once released, summed over the processes, MiB. */
function releasedMemory(ready: ReadyReplies): Pick<NonNullable<Run['clientStarts']>[number], 'released'> {
  const sum = (pick: (r: NonNullable<ReadyMessage['released']>) => number | null) => {
    const values = ready.map((r) => (r.message.released ? pick(r.message.released) : null));
    return values.every((v): v is number => v !== null) ? values.reduce((a, b) => a + b, 0) : null;
  };
  return { released: { memoryReservedMiB: sum((r) => r.memoryReservedMiB), leftMiB: sum((r) => r.leftMiB) } };
}

/** One client's (or tenant's) result as the run records it. */
function clientResult(
  arm: Arm['clients'][number],
  pid: number | null,
  m: Pick<
    TenantResult,
    | 'windowStartUs'
    | 'windowEndUs'
    | 'iterations'
    | 'gpuMs'
    | 'latenciesMs'
    | 'chunkIterations'
    | 'stepHostUs'
    | 'loopOverhead'
  >,
): ClientResult {
  return {
    client: arm.client,
    pid,
    variant: arm.variant,
    windowStartUs: m.windowStartUs,
    windowEndUs: m.windowEndUs,
    iterations: m.iterations,
    gpuMs: m.gpuMs,
    latency: summarizeLatencies(m.latenciesMs),
    chunkIterations: m.chunkIterations,
    ...(m.stepHostUs !== undefined ? { stepHostUs: m.stepHostUs } : {}),
    ...(m.loopOverhead !== undefined ? { loopOverhead: m.loopOverhead } : {}),
  };
}

/** The workload a built-in's script names in its ready line (serve("gemm", ...) in gemm.py); null for a custom command's. */
function switchedName(c: Comparison): string | null {
  const script = c.workload.argv[1];
  return c.workload.builtin && script !== undefined ? path.basename(script, '.py') : null;
}

/** A workload that said it cannot run so here (green contexts): its words; null for any other failure. */
function unsupportedReply(reply: ClientReply<ReadyMessage> | undefined): string | null {
  return reply?.kind === 'failed' && reply.unsupported ? reply.reason : null;
}

/** Why a ready process cannot serve an in-process comparison (an older protocol, another tenant count); null if it can. */
function tenancyRefusal(c: Comparison, ready: ReadyReplies): string | null {
  if (c.tenants === undefined) return null;
  const m = (ready[0] as ReadyReplies[number]).message;
  if (m.protocol < 3)
    return `workload "${c.workload.name}" speaks protocol ${m.protocol}, which has no tenants: in-process modes need protocol 3 (gpushare_protocol.serve speaks it)`;
  if ((m.tenants ?? 1) !== c.tenants)
    return `workload "${c.workload.name}" built ${m.tenants ?? 1} tenant(s) where ${TENANTS_ENV}=${c.tenants} asked for ${c.tenants}`;
  return null;
}

/** What the ready lines say the processes' allocators hold, for the record (see clientStarts in the run schema). */
function readyMemory(
  ready: ReadyReplies,
): Pick<NonNullable<Run['clientStarts']>[number], 'processes' | 'memoryReservedMiB' | 'graphPoolMiB' | 'tenantSms'> {
  const sum = (pick: (m: ReadyMessage) => number | null | undefined) => {
    const values = ready.map((r) => pick(r.message));
    return values.every((v): v is number => typeof v === 'number') ? values.reduce((a, b) => a + b, 0) : null;
  };
  const sms = ready[0]?.message.tenantSms;
  return {
    processes: ready.length,
    memoryReservedMiB: sum((m) => m.memoryReservedMiB),
    graphPoolMiB: sum((m) => m.graphPoolMiB),
    ...(sms !== undefined ? { tenantSms: sms } : {}),
  };
}
