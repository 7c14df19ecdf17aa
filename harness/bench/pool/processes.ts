/**
 * The one place bench's client pool and trial loop talk to a group of workload processes: start them,
 * await their ready lines, release a command to each and collect the replies. A shared workload-group
 * primitive can replace these three functions without the pool's policies noticing.
 */
import path from 'node:path';
import type { ProcessRunner } from '../../core/process.js';
import type { UsableCpus } from '../../system/cpus.js';
import { type ClientReply, WorkloadClient } from '../../workload/client.js';
import {
  HOLD_CPUS_ENV,
  HOLD_ENV,
  type ReadyMessage,
  type ResultMessage,
  TENANTS_ENV,
} from '../../workload/protocol.js';
import { pinnedIds } from '../plan.js';
import type { Comparison } from '../record/schema.js';

/**
 * c's client processes (one for in-process tenancy) on GPU `gpuUuid` from index `from` on, with
 * `modeEnv` and `extraEnv` on top of each one's environment.
 */
export function startClients(
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

/** Every client's ready line (or why it sent none), in client order. */
export function awaitReady(
  clients: readonly WorkloadClient[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Array<ClientReply<ReadyMessage>>> {
  return Promise.all(clients.map((client) => client.awaitReady(timeoutMs, signal)));
}

/** Releases each client its run command at once and collects every reply, in the order given. */
export function releaseCommands(
  released: ReadonlyArray<{ client: WorkloadClient; command: string }>,
  trialId: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Array<ClientReply<ResultMessage>>> {
  return Promise.all(released.map(({ client, command }) => client.run(command, trialId, timeoutMs, signal)));
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
