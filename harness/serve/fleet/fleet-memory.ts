/**
 * Memory used per server of a fleet: the processes nvidia-smi lists on the GPU (system/nvidia/
 * gpu-processes.ts), each given to the server whose process tree (its pid and descendants, read from
 * /proc) holds it, sampled once a mode's servers are warm. Where it cannot be known, null and why.
 */
import { z } from 'zod';
import type { GpuProcesses } from '../../system/nvidia/gpu-processes.js';
import { descendants } from '../../system/proc/process-table.js';

/** One server's memory under one arm: `mode` is a serve mode, or `baseline` (its kind alone). */
export const ServerMemorySchema = z.object({
  mode: z.string(),
  server: z.number().int().positive(),
  memoryMiB: z.number().nonnegative().max(1e9).nullable(),
  /** Why memoryMiB is null; null where it is known. */
  reason: z.string().nullable(),
});
export type ServerMemory = z.infer<typeof ServerMemorySchema>;

/** The seam to /proc: a process and its live descendants, its own pid first ([] when it is gone). */
export type ProcessTree = (pid: number) => Promise<number[]>;

export const procTree: ProcessTree = async (pid) => [pid, ...(await descendants(pid)).map((p) => p.pid)];

/** A server to attribute: its index and its leader's pid (null: not started). */
export interface ServerPid {
  server: number;
  pid: number | null;
}

const MPS_SERVER = 'nvidia-cuda-mps-server';

/** Why none of a server's processes is listed, in words with the figures. */
function unlistedReason(pids: readonly number[], listing: Extract<GpuProcesses, { ok: true }>, mps: boolean): string {
  const listed = listing.processes;
  if (listed.length === 0)
    return 'nvidia-smi lists no process on this GPU (inside some VMs and containers it lists none)';
  const server = listed.find((p) => p.name?.includes(MPS_SERVER));
  if (mps && server !== undefined)
    return `under MPS nvidia-smi lists the MPS server (pid ${server.pid}, ${server.usedMemoryMiB ?? '?'} MiB), not this server's processes`;
  return `none of its ${pids.length} processes (${pids.join(', ')}) is among the ${listed.length} nvidia-smi lists on this GPU (another PID namespace?)`;
}

/**
 * Each server's memory from `listing`, its processes' `trees` (pid → its tree): the sum of what its
 * processes hold; null where the list failed, the server's pid is unknown, none of its processes is
 * listed, or one listed has no figure.
 */
export function attributeMemory(
  mode: string,
  servers: readonly ServerPid[],
  trees: ReadonlyMap<number, readonly number[]>,
  listing: GpuProcesses,
  mps: boolean,
): ServerMemory[] {
  return servers.map(({ server, pid }) => {
    const none = (reason: string): ServerMemory => ({ mode, server, memoryMiB: null, reason });
    if (!listing.ok) return none(`nvidia-smi could not list the GPU's processes: ${listing.error}`);
    const tree = pid === null ? [] : (trees.get(pid) ?? []);
    if (tree.length === 0) return none('its process had exited, or never started');
    const mine = listing.processes.filter((p) => tree.includes(p.pid));
    if (mine.length === 0) return none(unlistedReason(tree, listing, mps));
    const blank = mine.find((p) => p.usedMemoryMiB === null);
    if (blank !== undefined) return none(`nvidia-smi lists its process ${blank.pid} without its memory`);
    return { mode, server, memoryMiB: mine.reduce((n, p) => n + (p.usedMemoryMiB as number), 0), reason: null };
  });
}

/** Samples the memory of `servers` now: the GPU's processes once, each server's tree through `tree`. */
export async function sampleMemory(
  mode: string,
  servers: readonly ServerPid[],
  list: () => Promise<GpuProcesses>,
  mps: boolean,
  tree: ProcessTree = procTree,
): Promise<ServerMemory[]> {
  const listing = await list();
  const trees = new Map<number, number[]>();
  for (const { pid } of servers) if (pid !== null) trees.set(pid, await tree(pid));
  return attributeMemory(mode, servers, trees, listing, mps);
}
