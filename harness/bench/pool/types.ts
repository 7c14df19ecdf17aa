/**
 * The seam between bench's trial loop and its client pool: the loop asks for a comparison's ready
 * clients, brackets each trial, and gives them back; how processes are started early, kept, switched
 * or grown is the pool policy's alone (fresh.ts, warm.ts).
 */
import type { Clock } from '../../core/clock.js';
import type { ProcessRunner } from '../../core/process.js';
import type { SessionDaemon, SessionMpsStart } from '../../session/lifecycle.js';
import type { UsableCpus } from '../../system/cpus.js';
import type { Reaper } from '../../system/proc/reaper.js';
import type { ClientReply, WorkloadClient } from '../../workload/client.js';
import type { ReadyMessage } from '../../workload/protocol.js';
import type { Comparison, ModeRecord, Run } from '../record/schema.js';
import type { RunStore } from '../record/store.js';

export interface ClientPool {
  /** c's processes, in client order: kept from the comparison before, prestarted (now told to start), or started now. */
  acquire(c: Comparison, mode: PoolMode): Promise<Lease>;
  /** Awaits the lease's ready lines; once all came and fit, records the start (run.clientStarts) and prepares later comparisons. */
  ready(lease: Lease): Promise<Readiness>;
  /** The comparison is over; `finished`: stopped as planned, so its processes may serve the next one. */
  release(lease: Lease, finished: boolean): Promise<void>;
  /** The mode's processes kept for a comparison that did not run: told to exit (before its MPS daemon stops). */
  endMode(): Promise<void>;
  /** The MPS daemon `record`'s mode runs with, started now or already by the policy, and the mode's from now on (it stops it). */
  modeDaemon(record: ModeRecord): Promise<SessionMpsStart>;
  /** Everything the pool still holds, told to exit (or stopped: a daemon its policy started and no mode took). */
  close(): Promise<void>;
}

/** The mode a comparison runs in: its clients' environment (the MPS daemon's) and that daemon. */
export interface PoolMode {
  env: Record<string, string>;
  daemon: SessionDaemon | null;
}

/** A comparison's processes, as started; `forget` takes each off the reaper once it has exited. */
export interface ClientGroup {
  comparisonId: string;
  clients: WorkloadClient[];
  forget: Array<() => void>;
  /** The comparison these processes were started for: `comparisonId`, or an earlier one they switched from. */
  startedFor: string;
  /** The index of its first client: 0, or the first one a grown comparison adds to the processes it keeps. */
  from: number;
  /** Started before the run, not held: when (CLOCK_MONOTONIC µs); absent for held clients, told to start by the pool. */
  startedUs?: number;
}

/** How the finished comparison's processes serve the next one: told to switch workloads, or kept as its first clients. */
export type Carry = 'switch' | 'grow';

/** The processes a comparison runs with, from acquire to release. */
export interface Lease {
  comparison: Comparison;
  mode: PoolMode;
  group: ClientGroup;
  /** How many of them the previous comparison kept (a grown comparison): they said ready already. */
  kept: number;
  /** When its start began, CLOCK_MONOTONIC µs (see clientStarts). */
  startedUs: number;
  /** All of its processes were prestarted, held, and told to start now. */
  prestarted: boolean;
  /** The processes came from the comparison before: switched or grown, and the comparison they were started for. */
  carriedFrom: { carry: Carry; startedFor: string } | null;
  /** Where its processes go once it stops as planned (set when they said ready); null: they exit. */
  carryTo: { next: Comparison; carry: Carry } | null;
  /** The workload's plain process, which measures the alone arm (set when it said ready); null: none. */
  plain: WorkloadClient | null;
}

/** The ready lines of a lease's processes, in client order (a kept one's from its start). */
export type ReadyReplies = readonly ReadyMessage[];

/** Whether a lease's processes can measure: ready, unable to run so here (a skip), or one failed (its index in `clients`). */
export type Readiness =
  | { kind: 'ready' }
  | { kind: 'unsupported'; reason: string }
  | { kind: 'failed'; client: number; clients: WorkloadClient[]; reply: ClientReply<unknown> };

/** The first comparison's clients, started before the run at `startedUs` (CLOCK_MONOTONIC µs): the pool waits for their ready lines. */
export interface Prestarted {
  comparisonId: string;
  clients: WorkloadClient[];
  startedUs: number;
}

/** What every policy works with. */
export interface PoolContext {
  run: Run;
  runner: ProcessRunner;
  clock: Clock;
  reaper: Reaper;
  signal: AbortSignal;
  store: Pick<RunStore, 'writeText'>;
  /** Records a warning in the run and shows it. */
  warn: (message: string) => void;
  /** Starts the MPS daemon of `record`'s mode, its record placed in the mode's record first. */
  startDaemon: (record: ModeRecord) => Promise<SessionMpsStart>;
  gpuUuid: string;
  /** The CPUs this run counts and pins to (its host's, as far as its cpuset and quota allow). */
  cpus: UsableCpus;
  prestarted: Prestarted | null;
  /** Resolves once the sampler has a sample of the GPU taken after `afterUs` (or its deadline passed). */
  sampledAfter: (afterUs: number) => Promise<void>;
}

/** A policy as the registry (policies.ts) lists it. */
export interface PoolModule {
  name: PoolPolicy;
  create: (ctx: PoolContext) => ClientPool;
}

export type PoolPolicy = 'fresh' | 'warm';
