/**
 * A fleet of n servers made of the file's kinds (`capacity --serve --fleet`): each kind's count in the
 * file's proportions (largest remainder; every kind at least one once n reaches the number of kinds), the
 * whole fleet's rate scaled by n ÷ the file's size (so the mean load per server stays the file's), and the
 * largest n a mode can hold at all: the GPU's memory, the MPS client limit, --max-servers.
 */
import { zipfShares } from '../../load/traffic/popularity.js';
import { CUDA_CONTEXT_MIB } from '../../system/cuda-context.js';
import { MPS_CLIENT_LIMIT } from '../../system/mps/client-limit.js';
import type { Fleet, FleetServer } from './fleet-file.js';
import { memoryNeed } from './fleet-fit.js';

/** The largest fleet gpushare searches when nothing else limits it (the schema's count limit). */
export const FLEET_SIZE_LIMIT = 1000;

/** A kind of the file: its first server stands for all of them; its count in the file. */
export interface FleetKind {
  server: FleetServer;
  count: number;
}

/** The file's kinds in file order, each with its count. */
export function fleetKinds(fleet: Fleet): FleetKind[] {
  const kinds: FleetKind[] = [];
  for (const s of fleet.servers) {
    const kind = kinds.find((k) => k.server.kind === s.kind);
    if (kind === undefined) kinds.push({ server: s, count: 1 });
    else kind.count++;
  }
  return kinds;
}

/**
 * Each kind's count in a fleet of `n`: `counts` scaled to n by largest remainder (ties to the earlier
 * kind); once n reaches the number of kinds, a kind left at 0 takes one from the kind most over its quota.
 */
export function kindCounts(counts: readonly number[], n: number): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  const quotas = counts.map((c) => (n * c) / total);
  const out = quotas.map(Math.floor);
  const order = quotas.map((q, i) => ({ i, rest: q - Math.floor(q) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  // The leftover is fixed before the loop: the loop's own increments must not shrink its bound.
  const left = n - out.reduce((a, b) => a + b, 0);
  for (let k = 0; k < left; k++) (out[(order[k] as { i: number }).i] as number)++;
  if (n < counts.length) return out;
  for (let i = 0; i < out.length; i++) {
    if (out[i] !== 0) continue;
    let donor = -1;
    for (let j = 0; j < out.length; j++)
      if (
        (out[j] as number) > 1 &&
        (donor === -1 ||
          (out[j] as number) - (quotas[j] as number) > (out[donor] as number) - (quotas[donor] as number))
      )
        donor = j;
    (out[donor] as number)--;
    out[i] = 1;
  }
  return out;
}

/** Each server's share of the sized fleet's requests and its rate, by the file's way of giving them. */
function rates(fleet: Fleet, kinds: readonly FleetKind[], counts: readonly number[], n: number): number[] {
  const t = fleet.traffic;
  if (t.source !== 'generated') throw new RangeError('sizedFleet: a trace replays fixed servers');
  const each = kinds.flatMap((k, i) => Array.from({ length: counts[i] as number }, () => k.server));
  if (t.way === 'rate') return each.map((s) => s.ratePerS as number);
  const total = (t.ratePerS * n) / fleet.servers.length;
  if (t.way === 'popularity') return zipfShares(n, t.popularity?.s ?? 0).map((share) => share * total);
  const sum = each.reduce((a, s) => a + s.share, 0);
  return each.map((s) => (s.share / sum) * total);
}

/**
 * The fleet of `n` servers of the file's kinds: servers in file order of kinds, labelled `<kind>-k` (the
 * kind's name alone when it has one server), indices 1 … n, shares and rates as the file gives them.
 */
export function sizedFleet(fleet: Fleet, n: number): Fleet {
  const kinds = fleetKinds(fleet);
  const counts = kindCounts(
    kinds.map((k) => k.count),
    n,
  );
  const ratesPerS = rates(fleet, kinds, counts, n);
  const all = ratesPerS.reduce((a, b) => a + b, 0);
  const servers: FleetServer[] = [];
  for (const [i, k] of kinds.entries())
    for (let j = 0; j < (counts[i] as number); j++) {
      const index = servers.length + 1;
      const ratePerS = ratesPerS[index - 1] as number;
      servers.push({
        ...k.server,
        index,
        label: counts[i] === 1 ? k.server.kind : `${k.server.kind}-${j + 1}`,
        port: null,
        share: all === 0 ? 0 : ratePerS / all,
        ratePerS,
      });
    }
  const t = fleet.traffic;
  return { ...fleet, servers, traffic: t.source === 'generated' ? { ...t, ratePerS: all } : t };
}

export type SizeLimit = 'memory' | 'mps clients' | 'max servers' | 'size limit';

/** The largest fleet a mode can hold at all, and what set it, in words with its figures. */
export interface SizeTop {
  servers: number;
  limitedBy: SizeLimit;
  text: string;
}

/**
 * The top of a mode's search: the largest n whose servers fit the GPU's memory as the pre-check counts it
 * (fleet-fit.ts: their shares of `gpuMemoryMiB` plus a CUDA context each; where the GPU's memory is not
 * known, their shares adding up to at most 1), scanned up from 1 (the first n over it ends the scan), at
 * most the 48 clients of an MPS server under MPS modes, at most `maxServers`.
 */
export function sizeTop(
  fleet: Fleet,
  mode: string,
  maxServers: number | null,
  gpuMemoryMiB: number | null = null,
): SizeTop {
  const mps = mode === 'mps' || mode === 'mps-threads';
  const caps: Array<{ servers: number; limitedBy: SizeLimit; text: string }> = [
    { servers: FLEET_SIZE_LIMIT, limitedBy: 'size limit', text: `gpushare searches at most ${FLEET_SIZE_LIMIT}` },
    ...(mps
      ? [
          {
            servers: MPS_CLIENT_LIMIT,
            limitedBy: 'mps clients' as const,
            text: `an MPS server accepts ${MPS_CLIENT_LIMIT} clients per GPU`,
          },
        ]
      : []),
    ...(maxServers === null
      ? []
      : [{ servers: maxServers, limitedBy: 'max servers' as const, text: `--max-servers ${maxServers}` }]),
  ];
  const cap = caps.reduce((a, b) => (b.servers <= a.servers ? b : a));
  for (let n = 1; n <= cap.servers; n++) {
    const shares = sizedFleet(fleet, n).servers.map((x) => x.memFraction);
    if (gpuMemoryMiB !== null) {
      const m = memoryNeed(shares, gpuMemoryMiB);
      if (!m.fits)
        return {
          servers: n - 1,
          limitedBy: 'memory',
          text: `${n} servers need ${m.needMiB.toFixed(0)} MiB (Σ mem_fraction ${m.share.toFixed(3)} × ${gpuMemoryMiB} MiB plus ${n} CUDA contexts × ${CUDA_CONTEXT_MIB} MiB), over the GPU's ${gpuMemoryMiB} MiB`,
        };
      continue;
    }
    const memory = shares.reduce((a, b) => a + b, 0);
    if (memory > 1 + 1e-9)
      return {
        servers: n - 1,
        limitedBy: 'memory',
        text: `${n} servers' memory shares add up to ${memory.toFixed(3)} of the GPU (Σ mem_fraction), over 1; the GPU's memory was not read, so their CUDA contexts are not counted`,
      };
  }
  return cap;
}
