/**
 * Prestarting ahead (see aheadPolicy in plan.ts): beyond the next comparison, every later comparison's
 * processes are prestarted held as cores free up, importing at idle priority (GPUSHARE_HOLD_IDLE:
 * SCHED_IDLE, which needs CAP_SYS_NICE to leave), and a trial of more clients stops (SIGSTOP) the
 * importers it leaves no core for. Otherwise the warm pool: delete this module and its line in
 * policies.ts to run without it.
 */
import type { WorkloadClient } from '../../workload/client.js';
import { HOLD_IDLE_ENV } from '../../workload/protocol.js';
import { type Ahead, armProcesses, type PlannedTrial, processesToStart } from '../plan.js';
import type { Comparison } from '../record/schema.js';
import { laterComparisons } from './base.js';
import { heldEnv } from './processes.js';
import type { Lease, PoolContext, PoolModule } from './types.js';
import { commandKey, joined, WarmPool } from './warm.js';

export class AheadPool extends WarmPool {
  /** Held processes still importing, stopped for the trial under way (see suspendImports). */
  private suspended: WorkloadClient[] = [];

  constructor(
    ctx: PoolContext,
    private readonly ahead: Ahead,
  ) {
    super(ctx);
  }

  protected override async prestart(lease: Lease): Promise<void> {
    await this.prestartAhead(lease.comparison, lease.mode.env);
  }

  override beforeTrial(lease: Lease, planned: PlannedTrial): () => void {
    this.suspendImports(armProcesses(lease.comparison, planned.arm));
    return () => this.resumeImports();
  }

  /** Processes that have imported free their cores: more may import on them. */
  override async afterTrial(lease: Lease): Promise<void> {
    await this.prestartAhead(lease.comparison, lease.mode.env);
  }

  /**
   * Prestarts, held, the processes later comparisons will start (see processesToStart), in run order,
   * as many as import at once on the cores c's smallest arm leaves free: a process that has imported
   * frees its core. Called before c's trials and after each; a trial of more clients stops the
   * importers it leaves no core for (suspendImports), and the others import at idle priority (see
   * Ahead). At most `ahead.maxHeld` are held at once.
   */
  private async prestartAhead(c: Comparison, modeEnv: Record<string, string>): Promise<void> {
    const waiting = this.held.flatMap((g) => (g.startedUs === undefined ? g.clients : []));
    const importing = this.importing().length;
    // Beside c's smallest arm (its solo ones): a trial of more clients stops the importers it has no core for.
    const fewest = Math.min(...c.arms.map((arm) => armProcesses(c, arm)));
    let free = Math.min(this.ctx.cpus.count - 1 - fewest - importing, this.ahead.maxHeld - waiting.length);
    let prev = c;
    for (const later of laterComparisons(this.ctx.run, c)) {
      if (free <= 0) return;
      const switches = prev.workload.builtin || this.switching.has(commandKey(prev));
      const range = processesToStart(this.ctx.run.config, prev, later, switches);
      prev = later;
      free -= await this.prestartSome(c, later, range, free, modeEnv);
    }
  }

  /** Up to `free` of `later`'s processes in [from, to) not held yet, prestarted held: how many. */
  private async prestartSome(
    c: Comparison,
    later: Comparison,
    [from, to]: [number, number],
    free: number,
    modeEnv: Record<string, string>,
  ): Promise<number> {
    if (from === to || !this.waitsForStartOf(later)) return 0;
    const group = this.held.find((g) => g.comparisonId === later.id);
    if (group !== undefined && group.from !== from) return 0; // held for other kept processes: closed at its turn
    const next = group === undefined ? from : group.from + group.clients.length;
    const count = Math.min(free, to - next);
    if (count <= 0) return 0;
    const env = await this.envFor(c, later, modeEnv);
    if (env === null) return 0;
    this.throwIfAborted();
    const idle = { ...heldEnv(this.ctx.cpus, c), [HOLD_IDLE_ENV]: '1' };
    const spawned = this.spawnGroup(later, env, idle, next, next + count);
    if (group === undefined) this.held.push(spawned);
    else Object.assign(group, joined(group, spawned));
    return count;
  }

  /** Held processes not yet started that have not said they imported: importing (or at the start of their imports). */
  private importing(): WorkloadClient[] {
    return this.held.flatMap((g) =>
      g.startedUs === undefined ? g.clients.filter((client) => !client.imported && client.running) : [],
    );
  }

  /**
   * Before a trial of `active` processes: stops the importers there is no core for beside them and the
   * harness's (the last started first), so that no importer takes a core a measuring client needs;
   * resumeImports lets them go on after it. Importers otherwise run at idle priority.
   */
  private suspendImports(active: number): void {
    const importing = this.importing();
    const over = active + importing.length - (this.ctx.cpus.count - 1);
    this.suspended = over > 0 ? importing.slice(-over) : [];
    for (const client of this.suspended) client.suspend(true);
  }

  private resumeImports(): void {
    for (const client of this.suspended) client.suspend(false);
    this.suspended = [];
  }
}

export const ahead: PoolModule = {
  name: 'ahead',
  // choosePolicy picks this policy only where ctx.ahead is set.
  create: (ctx) => new AheadPool(ctx, ctx.ahead as Ahead),
};
