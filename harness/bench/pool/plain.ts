/**
 * The plain processes of a run: for each workload, one process alone on the whole GPU outside every mode
 * (no MPS daemon, no green context, no other tenants), started for the first comparison that measures its
 * alone arm (ALONE_ARM) and kept for every later comparison of that workload, whatever its mode. Every
 * mode's slowdown then divides by throughput measured by one and the same process.
 */
import type { ClientReply, WorkloadClient } from '../../workload/client.js';
import { type Comparison, measuresPlainAlone, type Run } from '../record/schema.js';
import { awaitReady, closeClients, startPlain } from './processes.js';
import { plainKey } from './reuse.js';
import type { PoolContext } from './types.js';

/** The plain process for a comparison: ready (`readyUs`: when, if it was started for it; null: kept), or the reply that said it could not be. */
export type PlainReadiness =
  | { kind: 'ready'; client: WorkloadClient; readyUs: number | null }
  | { kind: 'failed'; client: WorkloadClient; reply: ClientReply<unknown> };

interface Kept {
  client: WorkloadClient;
  forget: Array<() => void>;
  /** The comparison it was started for: its log is named by it. */
  comparisonId: string;
  /** Its entry in run.plainProcesses. */
  record: NonNullable<Run['plainProcesses']>[number];
}

export class PlainProcesses {
  private readonly kept = new Map<string, Kept>();

  constructor(private readonly ctx: PoolContext) {}

  /** c's plain process, kept from an earlier comparison or started now and awaited; null where c has no alone arm. */
  async acquire(c: Comparison): Promise<PlainReadiness | null> {
    if (!measuresPlainAlone(c)) return null;
    const key = plainKey(c);
    const kept = this.kept.get(key);
    if (kept?.client.running) return { kind: 'ready', client: kept.client, readyUs: null };
    // One that crashed or was told to exit is not handed on: it is closed and a new one started.
    if (kept !== undefined) await this.closeOne(key);
    const { clock, run, signal } = this.ctx;
    // A sample of the GPU with the comparison's own processes ready and this one not yet started: the
    // level its memory rises from, which the memory account takes out again (analysis/clients.ts).
    await this.ctx.sampledAfter(clock.monotonicUs());
    const startedUs = clock.monotonicUs();
    const started = startPlain(this.ctx, c, this.ctx.gpuUuid);
    const record = { workload: c.workload.name, comparisonId: c.id, startedUs, readyUs: startedUs };
    this.kept.set(key, { ...started, comparisonId: c.id, record });
    const awaited = await awaitReady([started.client], clock, run.config.timeouts.readyMs, signal);
    if (awaited.status === 'ready') {
      record.readyUs = awaited.readyUs;
      (run.plainProcesses ??= []).push(record);
      return { kind: 'ready', client: started.client, readyUs: awaited.readyUs };
    }
    await this.closeOne(key);
    return { kind: 'failed', client: started.client, reply: awaited.reply };
  }

  /** c is over: its plain process exits unless a later comparison measures the same workload alone. */
  async release(c: Comparison, later: readonly Comparison[]): Promise<void> {
    const key = plainKey(c);
    if (!this.kept.has(key) || later.some((x) => measuresPlainAlone(x) && plainKey(x) === key)) return;
    await this.closeOne(key);
  }

  /** Every plain process still running, told to exit. */
  async close(): Promise<void> {
    for (const key of [...this.kept.keys()]) await this.closeOne(key);
  }

  private async closeOne(key: string): Promise<void> {
    const kept = this.kept.get(key);
    if (kept === undefined) return;
    this.kept.delete(key);
    await closeClients(
      this.ctx,
      { clients: [kept.client], forget: kept.forget },
      () => `plain-${kept.comparisonId.replace(/\//g, '-')}`,
      () => {
        kept.record.endUs = this.ctx.clock.monotonicUs();
      },
    );
  }
}
