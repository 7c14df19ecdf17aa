/**
 * The one place bench's client pool and trial loop talk to a group of workload processes, through the
 * workload-group primitive (workload/group.ts) that capacity, mix and check use too: start them, await
 * their ready lines, and a trial's window (release a typed command to each, collect the replies). The
 * pool, not the group, owns which processes live across comparisons, and their reaper entries.
 */
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import type { ProcessRunner } from '../../core/process.js';
import type { UsableCpus } from '../../system/cpus.js';
import type { WorkloadClient } from '../../workload/client.js';
import { type KillRegistry, type ReadyOutcome, WorkloadGroup } from '../../workload/group.js';
import {
  HOLD_CPUS_ENV,
  HOLD_ENV,
  type ReadyMessage,
  type ResultMessage,
  type RunCommand,
  TENANTS_ENV,
} from '../../workload/protocol.js';
import { ProtocolMember } from '../../workload/protocol-member.js';
import { pinnedIds } from '../comparisons.js';
import type { Comparison } from '../record/schema.js';
import { plainEnv } from './reuse.js';
import type { PoolContext } from './types.js';

/** A comparison's processes as a workload group: released by run commands, answering results. */
export type ClientsGroup = WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>;

/** Registers nothing: for processes started before the run, which the pool registers once it takes them. */
export const UNREGISTERED: KillRegistry = { add: () => () => undefined };

/**
 * c's client processes (one for in-process tenancy) on GPU `gpuUuid` from index `from` on, with
 * `modeEnv` and `extraEnv` on top of each one's environment, each registered with `reaper`: the
 * clients, and the function per client that takes it off the reaper again.
 */
export function startClients(
  spawn: { runner: ProcessRunner; clock: Clock; reaper: KillRegistry },
  c: Comparison,
  gpuUuid: string,
  modeEnv: Record<string, string>,
  extraEnv: Record<string, string>,
  from = 0,
  to?: number,
): { clients: WorkloadClient[]; forget: Array<() => void> } {
  // In-process tenancy: one process of c.tenants tenants (its env is client 0's, as every tenant's is).
  const processEnv = c.tenants !== undefined ? c.clientEnv.slice(0, 1) : c.clientEnv;
  const members = processEnv.slice(from, to).map((env, k) => {
    const i = from + k;
    return ProtocolMember.process(spawn.runner, i, clientLabel(c, i), c.workload.argv, {
      CUDA_VISIBLE_DEVICES: gpuUuid,
      GPUSHARE_CLIENT_INDEX: String(i),
      PYTHONUNBUFFERED: '1',
      ...modeEnv,
      ...env,
      ...(c.tenants !== undefined ? { [TENANTS_ENV]: String(c.tenants) } : {}),
      ...extraEnv,
    });
  });
  const forget: Array<() => void> = [];
  const keep: KillRegistry = { add: (kill) => remember(forget, spawn.reaper.add(kill)) };
  WorkloadGroup.start(members, spawn.clock, keep);
  return { clients: members.map((m) => m.client), forget };
}

/**
 * The plain process of c's workload (see ALONE_ARM): one process of it on GPU `gpuUuid`, with none of the
 * mode's environment (plainEnv: client 0's CPU pin alone), registered with `reaper` until it has exited.
 */
export function startPlain(
  spawn: { runner: ProcessRunner; clock: Clock; reaper: KillRegistry },
  c: Comparison,
  gpuUuid: string,
): { client: WorkloadClient; forget: Array<() => void> } {
  const member = ProtocolMember.process(spawn.runner, 0, plainLabel(c), c.workload.argv, {
    CUDA_VISIBLE_DEVICES: gpuUuid,
    GPUSHARE_CLIENT_INDEX: '0',
    // Says which process this is to a reader of the process table (and to the simulator's fakes).
    GPUSHARE_PLAIN: '1',
    PYTHONUNBUFFERED: '1',
    ...plainEnv(c),
  });
  const forget: Array<() => void> = [];
  WorkloadGroup.start([member], spawn.clock, { add: (kill) => remember(forget, spawn.reaper.add(kill)) });
  return { client: member.client, forget };
}

/** How failures and warnings name c's plain process. */
export function plainLabel(c: Comparison): string {
  return `workload "${c.workload.name}" (plain, alone)`;
}

function remember(forget: Array<() => void>, f: () => void): () => void {
  forget.push(f);
  return f;
}

/** Started processes as a group (the pool keeps their lifetime): for awaiting their ready lines, or a trial's window. */
export function clientsGroup(clients: readonly WorkloadClient[], clock: Clock): ClientsGroup {
  return WorkloadGroup.of(
    clients.map((client) => ProtocolMember.over(client)),
    clock,
  );
}

/** Every client's ready line, in client order, or the first (in client order) that sent none. */
export function awaitReady(
  clients: readonly WorkloadClient[],
  clock: Clock,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ReadyOutcome<ReadyMessage>> {
  return clientsGroup(clients, clock).ready(timeoutMs, signal);
}

/** How failures and warnings name client `i` of `c` (or its one process of tenants). */
export function clientLabel(c: Comparison, i: number): string {
  return c.tenants !== undefined
    ? `workload "${c.workload.name}" (${c.tenants} tenants)`
    : `workload "${c.workload.name}" (client ${i})`;
}

/** The workload a built-in's script names in its ready line (serve("gemm", ...) in gemm.py); null for a custom command's. */
export function switchedName(c: Comparison): string | null {
  const script = c.workload.argv[1];
  return c.workload.builtin && script !== undefined ? path.basename(script, '.py') : null;
}

/** What a prestarted process is started with: held (HOLD_ENV), on the cores c's clients leave idle where they are pinned. */
export function heldEnv(cpus: UsableCpus, c: Comparison): Record<string, string> {
  const idle = idleCpus(cpus, c);
  return { [HOLD_ENV]: '1', ...(idle.length > 0 ? { [HOLD_CPUS_ENV]: idle.join(',') } : {}) };
}

/** CPUs a held client imports on: neither the harness's (the lowest usable) nor one a measuring client of `c` is pinned to; [] where `c` is not pinned. */
export function idleCpus(cpus: UsableCpus | null, c: Pick<Comparison, 'clientEnv'>): number[] {
  const pinned = pinnedIds(c);
  if (cpus === null || pinned.length === 0) return [];
  return cpus.ids.filter((id, i) => i !== 0 && !pinned.includes(id));
}

/** What closing processes needs of the pool: the run (its exit timeout), whether it was interrupted, its warnings and its store. */
type Closing = Pick<PoolContext, 'run' | 'signal' | 'warn' | 'store'>;

/**
 * Tells `clients` to exit (at once where the run was interrupted), takes them off the reaper once they
 * have, warns of each that had to be killed, and keeps each one's stderr (see keepStderr). `exited` runs
 * once they have all exited, before the warnings.
 */
export async function closeClients(
  ctx: Closing,
  group: { clients: readonly WorkloadClient[]; forget: ReadonlyArray<() => void> },
  log: (i: number) => string,
  exited: () => void = () => undefined,
): Promise<void> {
  const exitMs = ctx.signal.aborted ? 0 : ctx.run.config.timeouts.exitMs;
  const closed = await Promise.all(group.clients.map((client) => client.close(exitMs)));
  exited();
  for (const f of group.forget) f();
  for (const [i, client] of group.clients.entries())
    if (closed[i] === 'killed' && !ctx.signal.aborted)
      ctx.warn(`${client.label} did not exit within ${exitMs} ms of the exit command and was killed`);
  await keepStderr(ctx, group.clients, log);
}

/** Each client's stderr so far, if any, written to `logs/<log(i)>.stderr.log`. */
export async function keepStderr(
  ctx: Pick<PoolContext, 'store'>,
  clients: readonly WorkloadClient[],
  log: (i: number) => string,
): Promise<void> {
  for (const [i, client] of clients.entries()) {
    const stderr = client.stderrTail();
    if (stderr) await ctx.store.writeText(`logs/${log(i)}.stderr.log`, stderr);
  }
}
