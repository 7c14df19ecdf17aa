/**
 * The CPUs this process may use: the ones its affinity allows (a container's cpuset) and how many at
 * once its cgroup's CPU quota pays for. os.cpus() counts the host's: a pod given 4 CPUs of a 128-CPU
 * host would otherwise start importers for 128 beside its measuring clients, and the quota would
 * throttle those clients, or pin them (--cpu-pin auto) to CPUs outside its cpuset.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** What a run records of its CPUs beside the host's count (see Fingerprint's host). */
export interface CpuAllowance {
  /** The online CPU ids this process may run on (its affinity: a cpuset, taskset), ascending; null: unknown (not Linux). */
  allowedCpus: number[] | null;
  /** CPUs' worth of time its cgroup's quota allows (cpu.max, or cpu.cfs_quota_us / cpu.cfs_period_us); null: no quota. */
  cpuQuota: number | null;
}

/** Reads a file's text, or null where it cannot be read. */
export type ReadText = (file: string) => string | null;

const readText: ReadText = (file) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

/**
 * This process's CPU allowance, read from /proc, sysfs and the cgroup file system (`read`: the seam
 * tests fake). Its affinity mask (Cpus_allowed_list) may name CPUs that are not online (a process in
 * cgroup v2's root cpuset gets every possible CPU: a VM's hotplug headroom, SMT turned off), so it is
 * kept to the online ones; pinning a client to an offline CPU fails.
 */
export function readCpuAllowance(read: ReadText = readText): CpuAllowance {
  const list = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(read('/proc/self/status') ?? '')?.[1];
  const allowed = list === undefined ? null : parseCpuList(list);
  const online = parseCpuList(read('/sys/devices/system/cpu/online') ?? '');
  const ids = allowed !== null && online !== null ? allowed.filter((id) => online.includes(id)) : allowed;
  return { allowedCpus: ids !== null && ids.length > 0 ? ids : null, cpuQuota: cgroupQuota(read) };
}

/** "0-3,8,10-11" (a cpuset's list) → [0, 1, 2, 3, 8, 10, 11]; null where it is not one. */
export function parseCpuList(text: string): number[] | null {
  const ids = new Set<number>();
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return null;
    const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
    if (to < from || to - from > 65_536) return null;
    for (let id = from; id <= to; id++) ids.add(id);
  }
  return ids.size > 0 ? [...ids].sort((a, b) => a - b) : null;
}

/** [0, 1, 2, 3, 8, 10, 11] → "0-3,8,10-11": parseCpuList's inverse. */
export function cpuListText(ids: readonly number[]): string {
  const ranges: Array<[number, number]> = [];
  for (const id of ids) {
    const last = ranges.at(-1);
    if (last !== undefined && id === last[1] + 1) last[1] = id;
    else ranges.push([id, id]);
  }
  return ranges.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',');
}

/**
 * The tightest CPU quota on this process's cgroup and its ancestors, in CPUs; null: none. cgroup v2
 * (`0::/path` → cpu.max, "max 100000" or "<quota> <period>") or v1 (the cpu controller's
 * cpu.cfs_quota_us, -1 for none, over cpu.cfs_period_us). Inside a container its own cgroup may be
 * the mount's root, whatever path /proc names: every directory up to the root is tried.
 */
export function cgroupQuota(read: ReadText): number | null {
  const quotas: Array<number | null> = [];
  for (const line of (read('/proc/self/cgroup') ?? '').split('\n')) {
    const [, id, controllers = '', cgroup = '/'] = /^(\d+):([^:]*):(\/.*)$/.exec(line) ?? [];
    // A cgroup outside this namespace's root ("/../x") has no directory under the mount.
    if (id === undefined || cgroup.startsWith('/..')) continue;
    if (id === '0' && controllers === '') {
      for (const dir of upTo(cgroup)) {
        const [quota, period] = (read(path.posix.join('/sys/fs/cgroup', dir, 'cpu.max')) ?? '').trim().split(/\s+/);
        quotas.push(quotaCpus(quota, period));
      }
    } else if (controllers.split(',').includes('cpu')) {
      for (const mount of ['cpu', 'cpu,cpuacct', 'cpuacct,cpu'])
        for (const dir of upTo(cgroup)) {
          const file = (name: string) => read(path.posix.join('/sys/fs/cgroup', mount, dir, name))?.trim();
          quotas.push(quotaCpus(file('cpu.cfs_quota_us'), file('cpu.cfs_period_us')));
        }
    }
  }
  const found = quotas.filter((q) => q !== null);
  return found.length > 0 ? Math.min(...found) : null;
}

/** "/a/b" → ["/a/b", "/a", "/"]. */
function upTo(cgroup: string): string[] {
  const dirs = [cgroup];
  while (dirs.at(-1) !== '/') dirs.push(path.posix.dirname(dirs.at(-1) as string));
  return dirs;
}

/** A quota and its period (µs, as the cgroup files write them) in CPUs; null for "max", -1 or what is no number. */
function quotaCpus(quota: string | undefined, period: string | undefined): number | null {
  const [q, p] = [Number(quota), Number(period)];
  return /^\d+$/.test(quota ?? '') && Number.isFinite(p) && p > 0 && q > 0 ? q / p : null;
}

/** The CPUs bench counts and pins clients to: their ids, ascending, and how many may run at once. */
export interface UsableCpus {
  ids: number[];
  count: number;
}

/**
 * The CPUs a run may use, from its fingerprint's host: the allowed ones (all `cpus` where a run did
 * not record them), as many at once as the quota pays for, at least one. A fractional quota counts
 * down: 2.5 CPUs of time keep only 2 processes busy without throttling.
 */
export function usableCpus(host: {
  cpus: number;
  allowedCpus?: number[] | null;
  cpuQuota?: number | null;
}): UsableCpus {
  const ids = host.allowedCpus ?? Array.from({ length: host.cpus }, (_, i) => i);
  const quota = host.cpuQuota ?? null;
  return { ids, count: Math.max(1, Math.min(ids.length, quota === null ? ids.length : Math.floor(quota))) };
}
