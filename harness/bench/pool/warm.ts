/**
 * The warm pool: processes serve more than one comparison, and the next comparison's start overlaps
 * this one's measuring. A finished comparison's processes switch to the next workload (protocol
 * `switch`) or stay as a grown comparison's first clients; the next comparison's other processes are
 * prestarted held (they import, and touch the GPU only once told to start); an MPS comparison's daemon
 * starts early for them; processes exit at once when nothing will use them.
 */
import { Interrupted } from '../../core/errors.js';
import type { SessionMpsStart } from '../../session/lifecycle.js';
import type { Comparison, ModeRecord } from '../record/schema.js';
import { laterComparisons, nextComparison, PoolBase } from './base.js';
import { clientLabel, heldEnv, switchedName } from './processes.js';
import { growable, prestartable, processCount, switchable } from './reuse.js';
import type { Carry, ClientGroup, Lease, PoolContext, PoolMode, PoolModule, ReadyReplies } from './types.js';

/** The MPS mode's daemon, started early: how its start went, or what it threw, given to the mode when it begins. */
type EarlyDaemon = { record: ModeRecord } & ({ started: SessionMpsStart } | { error: unknown });

export class WarmPool extends PoolBase {
  /**
   * Later comparisons' processes, prestarted while the current one measures and held (imported, no
   * CUDA yet), in run order; at most one group per comparison.
   */
  private held: ClientGroup[] = [];
  /** The finished comparison's processes, kept for the next one: told to switch (see switchable), or kept as they are (see growable). */
  private carried: (ClientGroup & { carry: Carry }) | null = null;
  /** The MPS mode's daemon, started as the last comparison before that mode began (before its first trial), so that the mode's first clients could import meanwhile. */
  private earlyDaemon: EarlyDaemon | null = null;
  /** Workload commands (commandKey) whose ready line said `holds`: they wait for start, so may be prestarted. */
  private readonly waitsForStart = new Set<string>();

  constructor(ctx: PoolContext) {
    super(ctx);
    const early = ctx.prestarted;
    if (early)
      this.held.push({
        ...early,
        startedFor: early.comparisonId,
        from: 0,
        forget: early.clients.map((client) => ctx.reaper.add(() => client.kill())),
      });
  }

  async acquire(c: Comparison, mode: PoolMode): Promise<Lease> {
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
    const later = new Set(laterComparisons(this.ctx.run, c).map((x) => x.id));
    await this.closeHeld((g) => g !== held && !later.has(g.comparisonId));
    this.held = this.held.filter((g) => g !== held);
    if (carried === null) await this.closeCarried();
    this.carried = null;
    const whole = held === null || held.from + held.clients.length >= processCount(c);
    const startedUs = (whole ? held?.startedUs : undefined) ?? this.ctx.clock.monotonicUs();
    const group = this.startGroup(c, mode, carried, held, whole, kept);
    if (carried?.carry === 'switch')
      for (const [i, client] of group.clients.entries())
        client.switchTo(c.workload.argv.slice(1), clientLabel(c, i), switchedName(c));
    for (const [i, client] of group.clients.slice(0, kept).entries()) client.continueAs(clientLabel(c, i));
    return {
      comparison: c,
      mode,
      group,
      kept,
      startedUs,
      prestarted: held !== null && held.startedUs === undefined && whole,
      carriedFrom: carried && { carry: carried.carry, startedFor: carried.startedFor },
      carryTo: null,
      plain: null,
    };
  }

  /**
   * The processes c runs with: the carried ones (switched, or kept by a grown comparison) and the
   * started ones (held ones told to start; where only some of c's were prestarted, the rest start now).
   */
  private startGroup(
    c: Comparison,
    mode: PoolMode,
    carried: (ClientGroup & { carry: Carry }) | null,
    held: ClientGroup | null,
    whole: boolean,
    kept: number,
  ): ClientGroup {
    if (held && held.startedUs === undefined) for (const client of held.clients) client.start();
    let started: ClientGroup | null;
    if (held !== null)
      started = whole ? held : joined(held, this.spawnGroup(c, mode.env, {}, held.from + held.clients.length));
    else started = carried?.carry === 'switch' ? null : this.spawnGroup(c, mode.env, {}, kept);
    return grownGroup(carried, started);
  }

  protected override async measuring(lease: Lease, ready: ReadyReplies): Promise<void> {
    const c = lease.comparison;
    if (ready.every((r) => r.holds === true)) this.waitsForStart.add(commandKey(c));
    const switches = ready.every((r) => r.switches === true);
    const next = nextComparison(this.ctx.run, c);
    const carry = next === null ? null : carryFor(this.ctx.run.config, c, next, switches);
    lease.carryTo = next !== null && carry !== null ? { next, carry } : null;
    await this.prestart(lease, next, carry);
  }

  /** Prestarts what comes after the lease's comparison, once its processes are ready. */
  private async prestart(lease: Lease, next: Comparison | null, carry: Carry | null): Promise<void> {
    const c = lease.comparison;
    if (carry === 'switch' && next !== null) await this.prestartAfterSwitches(c, next, lease.mode.env);
    else await this.prestartAfter(c, next, lease.mode.env, carry === 'grow' ? processCount(c) : 0);
  }

  protected override carryOn(lease: Lease): boolean {
    const to = lease.carryTo;
    if (to === null) return false;
    // Stopped as planned: its processes serve the next comparison.
    const { clients, forget, startedFor } = lease.group;
    this.carried = { comparisonId: to.next.id, clients, forget, startedFor, from: 0, carry: to.carry };
    return true;
  }

  override async endMode(): Promise<void> {
    await this.closeCarried(); // connected to this mode's daemon: they go before it does
  }

  /** The daemon started early for the mode's prestarted clients, handed over once (or what its start threw, thrown now as the start would have); else one started now. */
  override async modeDaemon(record: ModeRecord): Promise<SessionMpsStart> {
    const early = this.earlyDaemon?.record === record ? this.earlyDaemon : null;
    this.earlyDaemon = null;
    if (early === null) return super.modeDaemon(record);
    if ('error' in early) throw early.error;
    return early.started;
  }

  override async close(): Promise<void> {
    try {
      await this.closeCarried();
      await this.closeHeld(() => true);
      await super.close();
    } finally {
      await this.stopEarlyDaemon(); // after the held clients that name it
    }
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
    const waits = next !== null && this.waitsForStartOf(next);
    if (next !== null && this.held.some((g) => g.comparisonId === next.id)) return; // prestarted already, further back
    await this.closeHeld(() => true); // one held for another comparison (never left behind unowned)
    const { config } = this.ctx.run;
    if (next === null || !prestartable(config, c, next, this.ctx.cpus.count, waits, processCount(next) - from)) return;
    const env = await this.envFor(c, next, modeEnv);
    if (env === null) return;
    this.held.push(this.spawnGroup(next, env, heldEnv(this.ctx.cpus, c), from));
  }

  /**
   * Where c's processes will switch to `next` (and maybe on), prestarts the first later comparison of
   * c's mode or the next non-MPS one that needs processes of its own, so that they import for longer
   * than one comparison (streams/pipeline is short). An MPS one waits for the last comparison before it.
   */
  private async prestartAfterSwitches(c: Comparison, next: Comparison, modeEnv: Record<string, string>): Promise<void> {
    const { run } = this.ctx;
    let prev = next;
    let target = nextComparison(run, next);
    while (target !== null && switchable(run.config, prev, target)) {
      prev = target;
      target = nextComparison(run, target);
    }
    if (target === null || growable(run.config, prev, target)) return;
    if (target.mode === 'mps' && c.mode !== 'mps') return;
    await this.prestartAfter(c, target, modeEnv, 0);
  }

  /** Whether `later`'s processes wait for start when held: a built-in, or a command whose ready line said so. */
  private waitsForStartOf(later: Comparison): boolean {
    return later.workload.builtin || this.waitsForStart.has(commandKey(later));
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
      const record = this.ctx.run.modes.find((m) => m.mode === 'mps');
      if (record === undefined) return null;
      try {
        this.earlyDaemon = { record, started: await this.ctx.startDaemon(record) };
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
  private async closeHeld(which: (group: ClientGroup) => boolean): Promise<void> {
    const closing = this.held.filter(which);
    this.held = this.held.filter((g) => !closing.includes(g));
    for (const group of closing) await this.closeGroup(group);
  }

  /** Carried processes whose comparison never ran (an interruption, a failed mode): told to exit. */
  private async closeCarried(): Promise<void> {
    const group = this.carried;
    this.carried = null;
    if (group !== null) await this.closeGroup(group);
  }

  /** The daemon started early for a mode that never ran (an interruption): stopped. */
  private async stopEarlyDaemon(): Promise<void> {
    const early = this.earlyDaemon;
    this.earlyDaemon = null;
    if (early !== null && 'started' in early && early.started.ok) await early.started.daemon.stop();
  }
}

/** How c's processes serve `next`: switched (they said they switch), grown, or not at all. */
function carryFor(
  config: Parameters<typeof switchable>[0],
  c: Comparison,
  next: Comparison,
  switches: boolean,
): Carry | null {
  if (switchable(config, c, next, switches)) return 'switch';
  return growable(config, c, next) ? 'grow' : null;
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

/** A group and the processes started after it for the same comparison, in client order. */
function joined(first: ClientGroup, rest: ClientGroup): ClientGroup {
  return { ...first, clients: [...first.clients, ...rest.clients], forget: [...first.forget, ...rest.forget] };
}

/** How the set of commands whose ready lines said `holds` knows a comparison's: its exact argv. */
function commandKey(c: Pick<Comparison, 'workload'>): string {
  return c.workload.argv.join('\0');
}

export const warm: PoolModule = { name: 'warm', create: (ctx) => new WarmPool(ctx) };
