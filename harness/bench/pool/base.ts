/**
 * What every pool policy shares: starting a comparison's processes, awaiting and checking their ready
 * lines, recording their start (run.clientStarts), and closing them with their stderr kept.
 */
import type { SessionMpsStart } from '../../session/lifecycle.js';
import { type ReadyMessage, TENANTS_ENV } from '../../workload/protocol.js';
import type { Comparison, ModeRecord, Run } from '../record/schema.js';
import { PlainProcesses } from './plain.js';
import { awaitReady, closeClients, keepStderr, startClients } from './processes.js';
import { processCount } from './reuse.js';
import type { ClientGroup, ClientPool, Lease, PoolContext, PoolMode, Readiness, ReadyReplies } from './types.js';

export abstract class PoolBase implements ClientPool {
  /** Each workload's plain process, which measures every comparison's alone arm. */
  private readonly plain: PlainProcesses;

  constructor(protected readonly ctx: PoolContext) {
    this.plain = new PlainProcesses(ctx);
  }

  abstract acquire(c: Comparison, mode: PoolMode): Promise<Lease>;

  async ready(lease: Lease): Promise<Readiness> {
    const { clients } = lease.group;
    const { clock, run, signal } = this.ctx;
    // Kept processes said ready when they started: only the others say it now.
    const awaited = await awaitReady(clients.slice(lease.kept), clock, run.config.timeouts.readyMs, signal);
    if (awaited.status === 'not-ready') {
      const { reply } = awaited;
      // A workload that said it cannot run so here (green contexts): a skip, in its words.
      if (reply.kind === 'failed' && reply.unsupported) return { kind: 'unsupported', reason: reply.reason };
      return { kind: 'failed', client: lease.kept + awaited.member, clients, reply };
    }
    const ready = [
      ...clients.slice(0, lease.kept).map((client) => client.lastReady as ReadyMessage),
      ...awaited.messages,
    ];
    const refusal = tenancyRefusal(lease.comparison, ready);
    if (refusal !== null) return { kind: 'unsupported', reason: refusal };
    const plain = await this.plain.acquire(lease.comparison);
    if (plain?.kind === 'failed') return { kind: 'failed', client: 0, clients: [plain.client], reply: plain.reply };
    lease.plain = plain?.client ?? null;
    // A plain process started for this comparison is part of its start-up.
    this.recordStart(lease, ready, plain?.readyUs ?? awaited.readyUs);
    if (lease.mode.daemon) await lease.mode.daemon.serverPids();
    await this.measuring(lease, ready);
    return { kind: 'ready' };
  }

  /** The lease's processes are ready and its trials begin: what the policy prepares meanwhile. */
  protected async measuring(_lease: Lease, _ready: ReadyReplies): Promise<void> {}

  /** Whether the policy carries the finished lease's processes on to the next comparison (it takes them if so). */
  protected carryOn(_lease: Lease): boolean {
    return false;
  }

  async release(lease: Lease, finished: boolean): Promise<void> {
    const { run, clock, signal } = this.ctx;
    const c = lease.comparison;
    const { clients, forget } = lease.group;
    // Kept for the next comparison, or told to exit; their stderr so far is kept either way.
    const carriedOn = finished && !signal.aborted && this.carryOn(lease);
    const start = run.clientStarts?.find((s) => s.comparisonId === c.id && s.startedUs === lease.startedUs);
    const ended = () => {
      if (start) start.endUs = clock.monotonicUs();
    };
    const log = (i: number) => `${c.id.replace(/\//g, '-')}-c${i}`;
    if (carriedOn) {
      ended();
      await keepStderr(this.ctx, clients, log);
    } else await closeClients(this.ctx, { clients, forget }, log, ended);
    // Comparisons run one at a time: every other one not stopped yet is still to come. A comparison that
    // did not finish as planned hands its plain process on to none: it may be why (a crash, a hang).
    const pending = run.plan.filter((x) => x !== c && !run.stops.some((s) => s.comparisonId === x.id));
    await this.plain.release(c, finished && !signal.aborted ? pending : []);
  }

  async endMode(): Promise<void> {}

  modeDaemon(record: ModeRecord): Promise<SessionMpsStart> {
    return this.ctx.startDaemon(record);
  }

  /** Every plain process the pool still holds, told to exit (a policy that holds more closes it too). */
  async close(): Promise<void> {
    await this.plain.close();
  }

  /** c's client processes from index `from` on (see startClients), each on the reaper until it has exited. */
  protected spawnGroup(
    c: Comparison,
    modeEnv: Record<string, string>,
    extraEnv: Record<string, string>,
    from = 0,
    to = processCount(c),
  ): ClientGroup {
    const { clients, forget } = startClients(this.ctx, c, this.ctx.gpuUuid, modeEnv, extraEnv, from, to);
    return { comparisonId: c.id, startedFor: c.id, from, clients, forget };
  }

  protected async closeGroup(group: ClientGroup): Promise<void> {
    const exitMs = this.ctx.signal.aborted ? 0 : this.ctx.run.config.timeouts.exitMs;
    await Promise.all(group.clients.map((client) => client.close(exitMs)));
    for (const f of group.forget) f();
  }

  private recordStart(lease: Lease, ready: ReadyReplies, readyUs: number): void {
    const from = lease.carriedFrom;
    (this.ctx.run.clientStarts ??= []).push({
      comparisonId: lease.comparison.id,
      startedUs: lease.startedUs,
      readyUs,
      ...(lease.prestarted ? { prestarted: true as const } : {}),
      ...readyMemory(ready),
      ...(from?.carry === 'switch' ? { switchedFrom: from.startedFor, ...releasedMemory(ready) } : {}),
      ...(from?.carry === 'grow' ? { grownFrom: from.startedFor } : {}),
    });
  }
}

/** A lease of processes started now for the whole of `c`. */
export function freshLease(c: Comparison, mode: PoolMode, group: ClientGroup, startedUs: number): Lease {
  return {
    comparison: c,
    mode,
    group,
    kept: 0,
    startedUs,
    prestarted: false,
    carriedFrom: null,
    carryTo: null,
    plain: null,
  };
}

/** The comparison that runs after `c` in this run (skipped modes and stopped comparisons left out); null: none. */
export function nextComparison(run: Run, c: Comparison): Comparison | null {
  return laterComparisons(run, c)[0] ?? null;
}

/** The comparisons that run after `c` in this run, in order (skipped modes and stopped comparisons left out). */
export function laterComparisons(run: Run, c: Comparison): Comparison[] {
  const ran = new Set(run.modes.filter((m) => m.status === 'ran').map((m) => m.mode));
  const order = run.modes.flatMap((m) =>
    run.plan.filter((x) => x.mode === m.mode && ran.has(x.mode) && !run.stops.some((s) => s.comparisonId === x.id)),
  );
  const at = order.indexOf(c);
  return at === -1 ? [] : order.slice(at + 1);
}

/** Why a ready process cannot serve an in-process comparison (an older protocol, another tenant count); null if it can. */
function tenancyRefusal(c: Comparison, ready: ReadyReplies): string | null {
  if (c.tenants === undefined) return null;
  const m = ready[0] as ReadyMessage;
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
    const values = ready.map(pick);
    return values.every((v): v is number => typeof v === 'number') ? values.reduce((a, b) => a + b, 0) : null;
  };
  const sms = ready[0]?.tenantSms;
  return {
    processes: ready.length,
    memoryReservedMiB: sum((m) => m.memoryReservedMiB),
    graphPoolMiB: sum((m) => m.graphPoolMiB),
    ...(sms !== undefined ? { tenantSms: sms } : {}),
  };
}

/** What switched processes' previous workload held and left once released, summed over the processes, MiB. */
function releasedMemory(ready: ReadyReplies): Pick<NonNullable<Run['clientStarts']>[number], 'released'> {
  const sum = (pick: (r: NonNullable<ReadyMessage['released']>) => number | null) => {
    const values = ready.map((m) => (m.released ? pick(m.released) : null));
    return values.every((v): v is number => v !== null) ? values.reduce((a, b) => a + b, 0) : null;
  };
  return { released: { memoryReservedMiB: sum((r) => r.memoryReservedMiB), leftMiB: sum((r) => r.leftMiB) } };
}
