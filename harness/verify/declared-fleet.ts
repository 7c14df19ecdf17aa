/**
 * What a fleet's launcher (`plan --run <fleet run> --out`: gpushare-fleet-server.sh) declares: each
 * server's own MPS limits, set in its environment before it starts. Pure: it reads the text
 * deploy/fleet/files.ts writes (its tests parse that generator's output).
 */
import { UserError } from '../core/errors.js';
import { FLEET_LAUNCHER } from '../deploy/fleet/files.js';

/** One server's limits as the launcher sets them. */
export interface DeclaredServer {
  server: string;
  /** CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's size for device 0, MiB; null: none. */
  memLimitMiB: number | null;
  /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; null: none. */
  threadPct: number | null;
}

const unreadable = (why: string) =>
  new UserError(
    `${FLEET_LAUNCHER}: ${why}: verify reads the files gpushare plan --out wrote; regenerate it (or remove it from the directory)`,
  );

/** One `  <server>) export NAME=value … ;;` arm of the launcher's case. */
function serverOf(server: string, exports: string): DeclaredServer {
  const vars = new Map(
    exports
      .split(' ')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
  );
  const mem = vars.get('CUDA_MPS_PINNED_DEVICE_MEM_LIMIT');
  const thread = vars.get('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE');
  const memMatch = mem === undefined ? null : /^0=(\d+)M$/.exec(mem);
  if (mem !== undefined && (memMatch === null || Number(memMatch[1]) < 1))
    throw unreadable(`server ${server} has a memory limit of ${mem}, not 0=<MiB>M`);
  const pct = thread === undefined ? null : Number(thread);
  if (pct !== null && !(Number.isInteger(pct) && pct >= 1 && pct <= 100))
    throw unreadable(`server ${server} has a thread percentage of ${thread}, not a whole number from 1 to 100`);
  return { server, memLimitMiB: memMatch === null ? null : Number(memMatch[1]), threadPct: pct };
}

export function serversFromLauncher(text: string): DeclaredServer[] {
  const arms = [...text.matchAll(/^ {2}([A-Za-z0-9][A-Za-z0-9._-]*)\)((?: export [^;\n]*)?) ;;$/gm)];
  if (arms.length === 0) throw unreadable('it declares no server');
  return arms.map((m) => serverOf(m[1] as string, (m[2] as string).replace(/^ export /, '')));
}

/** The distinct limits among the servers, each with the servers that have it: one probe each, not one per server. */
export function distinctLimits(
  servers: readonly DeclaredServer[],
  pick: (s: DeclaredServer) => number | null,
): Array<{ value: number; servers: string[] }> {
  const by = new Map<number, string[]>();
  for (const s of servers) {
    const v = pick(s);
    if (v !== null) by.set(v, [...(by.get(v) ?? []), s.server]);
  }
  return [...by].sort((a, b) => a[0] - b[0]).map(([value, names]) => ({ value, servers: names }));
}
