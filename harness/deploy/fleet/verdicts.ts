/**
 * plan's arithmetic for a fleet of servers on one GPU: which mode (the rule over the modes that kept every
 * server within the SLO, or over the largest fleets capacity found), each server's memory and MPS limits,
 * the servers per kind, and the refusals (past the MPS client limit, memory shares over the GPU). Pure.
 */
import { UserError } from '../../core/errors.js';
import type { ServeMode } from '../../serve/record.js';
import { wilsonInterval } from '../../stats/attainment.js';
import { separate } from '../../stats/intervals.js';
import { MPS_CAP_CONTEXT_MIB } from '../../system/cuda-context.js';
import { MPS_CLIENT_LIMIT } from '../../system/mps/client-limit.js';

/** Where the evidence does not separate two modes, the simpler one: fewer moving parts, fewer limits to keep. */
export const SIMPLER_FIRST: readonly ServeMode[] = ['timeslice', 'mps', 'mps-threads'];

const simpler = (a: ServeMode, b: ServeMode) => SIMPLER_FIRST.indexOf(a) - SIMPLER_FIRST.indexOf(b);

/** A mode a bench fleet run measured, as the rule weighs it. */
export interface MeasuredMode {
  mode: ServeMode;
  /** Every server's attainment interval at or above the target. */
  everyServerWithin: boolean;
  /** The whole fleet's requests within the SLO, and its requests, over the kept windows. */
  good: number;
  requests: number;
  goodPerS: number;
}

/** The mode chosen, and the modes the evidence did not separate from it (they held as well, within noise). */
export interface ModeChoice {
  mode: ServeMode;
  tiedWith: ServeMode[];
}

/**
 * Among the modes that kept every server within the SLO: the one of the highest aggregate goodput, where
 * the whole fleet's attainment (good ÷ requests, a Wilson 95% interval: every mode sent the same schedule,
 * so goodput differs only by it) separates from every other's; where it does not, the simplest of those it
 * does not separate from (SIMPLER_FIRST). Null where no mode kept every server.
 */
export function chooseMeasuredMode(modes: readonly MeasuredMode[]): ModeChoice | null {
  const held = modes.filter((m) => m.everyServerWithin).sort((a, b) => simpler(a.mode, b.mode));
  if (held.length === 0) return null;
  const best = held.reduce((a, b) => (b.goodPerS > a.goodPerS ? b : a));
  const interval = (m: MeasuredMode) => wilsonInterval(m.good, m.requests)?.interval ?? null;
  const bestInterval = interval(best);
  // Best is among them: an interval does not separate from itself.
  const tied = held.filter((m) => {
    const other = interval(m);
    return bestInterval === null || other === null || !separate(bestInterval, other);
  });
  const [chosen, ...rest] = tied as [MeasuredMode, ...MeasuredMode[]];
  return { mode: chosen.mode, tiedWith: rest.map((m) => m.mode) };
}

/**
 * What `capacity --serve --fleet` found per mode, as plan takes it: the largest fleet of the file's kinds
 * that kept every server within the SLO, with its interval (servers), and that fleet's servers per kind.
 */
export interface LargestFleet {
  mode: ServeMode;
  /** Servers in the largest fleet that held; 0: not even the smallest did. */
  servers: number;
  /** Where the largest fleet lies, servers: [low, high]. */
  interval: [number, number];
  perKindCounts: Record<string, number>;
  /** Why a mode has no fleet where the run says more than that none held (an unverified answer). */
  note?: string;
  /** The fleet's servers as the run measured them (label, kind, mps-threads cap), where it recorded them. */
  measured?: Array<{ label: string; kind: string; threadPct: number }>;
}

/**
 * Among the modes whose largest fleet holds at least one server: the most servers, where its interval
 * separates from every other's; where it does not, the simplest of those it does not separate from.
 */
export function chooseCapacityMode(fleets: readonly LargestFleet[]): ModeChoice | null {
  const held = fleets.filter((f) => f.servers > 0).sort((a, b) => simpler(a.mode, b.mode));
  if (held.length === 0) return null;
  // Stryker disable next-line EqualityOperator: capacity's intervals start at their servers, so fleets of equal servers overlap the same others
  const best = held.reduce((a, b) => (b.servers > a.servers ? b : a));
  const tied = held.filter(
    (f) =>
      // Stryker disable next-line ConditionalExpression: a well-formed interval does not separate from itself (best is kept only against a malformed one)
      f === best || !separate(best.interval, f.interval),
  );
  const [chosen, ...rest] = tied as [LargestFleet, ...LargestFleet[]];
  return { mode: chosen.mode, tiedWith: rest.map((f) => f.mode) };
}

/** A server's memory: its share of the GPU, GiB, and its MPS pinned-memory limit (the share plus its CUDA context), MiB. */
export function serverMemory(memFraction: number, gpuMemoryMiB: number): { memGiB: number; limitMiB: number } {
  const shareMiB = Math.floor(memFraction * gpuMemoryMiB);
  return { memGiB: shareMiB / 1024, limitMiB: shareMiB + MPS_CAP_CONTEXT_MIB };
}

/** A server's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: its recorded cap under mps-threads; none under mps or time-slicing. */
export function serverThreadPct(mode: ServeMode, threadPct: number): number | null {
  return mode === 'mps-threads' ? threadPct : null;
}

/** Servers per kind, in the order the kinds first appear. */
export function countsPerKind(servers: readonly { kind: string }[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const s of servers) counts.set(s.kind, (counts.get(s.kind) ?? 0) + 1);
  return [...counts];
}

/** Shares of the GPU's memory may sum past 1 by rounding in a hand-written file, no more. */
const MEMORY_SUM_TOLERANCE = 1e-9;

/**
 * Refuses (one line, exit 2) a fleet plan cannot deploy: more servers than an MPS server accepts per GPU
 * under an MPS mode, or memory shares that sum past the whole GPU.
 */
export function checkDeployable(mode: ServeMode | null, servers: readonly { memFraction: number }[]): void {
  if (mode !== null && mode !== 'timeslice' && servers.length > MPS_CLIENT_LIMIT)
    throw new UserError(
      `${servers.length} servers under ${mode}: an MPS server accepts at most ${MPS_CLIENT_LIMIT} clients per GPU; plan a fleet of at most ${MPS_CLIENT_LIMIT} per GPU`,
    );
  const sum = servers.reduce((n, s) => n + s.memFraction, 0);
  if (sum > 1 + MEMORY_SUM_TOLERANCE)
    throw new UserError(
      // Twelve digits: a sum just past the tolerance must not read as 1.
      `the servers' memory shares sum to ${Number(sum.toPrecision(12))} of the GPU, over 1: lower their mem_fraction so that they add up to 1 at most`,
    );
}
