/**
 * One window of a mix run: who an arm releases and what runs beside each, their release at one
 * CLOCK_MONOTONIC time (processes of their own, or tenants of one process), and what each side gave,
 * through bench's result checks.
 */
import type { WindowOutcome } from '../experiment/rounds.js';
import { openLoopCheck, type WorkloadGroup } from '../workload/group.js';
import { encodeLatencies } from '../workload/open-loop.js';
import {
  type Beside,
  type Load,
  type ReadyMessage,
  type ResultMessage,
  type RunCommand,
  runCommandOf,
  type TenantResult,
} from '../workload/protocol.js';
import { RELEASE_LEAD_MS, releaseLeadMs } from '../workload/release.js';
import type { WorkloadSpec } from '../workload/spec.js';
import type { Arm } from './arms.js';
import { type AggressorWindow, type MixMode, type MixRun, PAIR, type VictimWindow } from './record.js';

/** A mix run's processes, released window by window. */
export type MixGroup = WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>;

/** What one window gave: each side's result, why the checks refused it (or null), and the victim's count over a target. */
export interface Measured {
  victim: VictimWindow | null;
  aggressor: AggressorWindow | null;
  partner: AggressorWindow | null;
  invalid: string | null;
  overTarget(targetMs: number): number;
}

/** The members of a window's group it releases (null: not in it). */
export interface ArmClients {
  victim: number | null;
  aggressor: number | null;
  partner: number | null;
}

/** The victim's load in a window, and what runs beside each side released. */
export interface ArmRelease {
  load: Load | null;
  beside: Beside[];
  aggressorBeside: Beside[];
  partnerBeside: Beside[];
}

/** An aggressor process of a mode: its aggressor and cap, its workload, and its member of the group. */
export interface AggressorProcess {
  aggressor: string;
  threadPct: number | null;
  workload: WorkloadSpec;
  member: number;
}

/**
 * Who an arm of a mode with a process per client releases, and what each runs beside: the victim
 * (member 0) at its share of `capacityQps`, the aggressor process of the arm's cap, and, in the pair
 * arm, the uncapped partner.
 */
export function processArmRelease(
  arm: Arm,
  aggressors: readonly AggressorProcess[],
  settings: MixRun['settings'],
  capacityQps: number,
): { clients: ArmClients; release: ArmRelease } {
  const agg =
    arm.aggressor === null
      ? null
      : aggressors.find((a) => a.aggressor === arm.aggressor && a.threadPct === arm.threadPct);
  const qps = arm.load === null ? null : arm.load * capacityQps;
  const partner =
    arm.arm === 'pair' ? aggressors.find((a) => a.aggressor === PAIR[1] && a.threadPct === null) : undefined;
  const clients = {
    victim: arm.arm === 'aggressor-alone' || arm.arm === 'pair' ? null : 0,
    aggressor: arm.arm === 'victim-alone' ? null : (agg?.member ?? null),
    partner: partner?.member ?? null,
  };
  const together = clients.victim !== null && clients.aggressor !== null;
  const besidePartner = partner ? [{ workload: partner.workload.name, threadPct: null, qps: null }] : [];
  return {
    clients,
    release: {
      load: qps === null ? null : { kind: settings.arrivals, qps },
      beside: together && agg ? [{ workload: agg.workload.name, threadPct: agg.threadPct, qps: null }] : [],
      aggressorBeside: together ? [{ workload: settings.victim.name, threadPct: null, qps }] : besidePartner,
      partnerBeside: agg && partner ? [{ workload: agg.workload.name, threadPct: null, qps: null }] : [],
    },
  };
}

/** Releases the clients of an arm (members of `group`) together for one window; failed: why no answer came. */
export async function runWindow(
  group: MixGroup,
  clients: ArmClients,
  plan: ArmRelease,
  trial: string,
  durationMs: number,
  signal: AbortSignal,
): Promise<WindowOutcome<Measured>> {
  // In this order they are released and their windows checked: the victim, the aggressor, its partner.
  const released = (
    [
      [clients.victim, plan.load, plan.beside],
      [clients.aggressor, null, plan.aggressorBeside],
      [clients.partner, null, plan.partnerBeside],
    ] as const
  ).flatMap(([member, load, beside]) => (member === null ? [] : [{ member, load, beside }]));
  const senders = released.length;
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, senders);
  const work = { kind: 'fixed-duration' as const, durationMs };
  const window = await group.window(
    {
      leadMs,
      releases: (startAtUs) =>
        released.map(({ member, load, beside }) => ({
          member,
          command: { ...runCommandOf(trial, startAtUs, work, { streams: 1 }, senders, load), beside },
        })),
      timeoutMs: durationMs * 2 + leadMs + 60_000,
      check: openLoopCheck(durationMs),
    },
    signal,
  );
  if (window.status === 'lost') return lostOutcome(window, trial);
  const resultOf = (member: number | null) =>
    member === null ? null : (window.results[released.findIndex((r) => r.member === member)] ?? null);
  const v = resultOf(clients.victim);
  const closed = (m: ResultMessage | null): AggressorWindow | null =>
    m === null ? null : { iterations: m.iterations, windowS: (m.windowEndUs - m.windowStartUs) / 1e6 };
  return {
    status: 'ok',
    window: {
      victim: v === null ? null : victimWindow(v, plan.load?.qps ?? 0),
      aggressor: closed(resultOf(clients.aggressor)),
      partner: closed(resultOf(clients.partner)),
      invalid: window.invalid,
      overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
    },
  };
}

/** Why a window got no answer from a member, as the mode's failure says it. */
function lostOutcome(
  window: Extract<Awaited<ReturnType<MixGroup['window']>>, { status: 'lost' }>,
  trial: string,
): WindowOutcome<never> {
  const { label, reply } = window;
  if (reply.kind === 'malformed') return { status: 'failed', reason: `${label} in window ${trial} ${reply.problem}` };
  const why = reply.kind === 'failed' ? reply.reason : 'no result in time';
  return { status: 'failed', reason: `${label} in window ${trial}: ${why}` };
}

/** The victim's side of a window, from its result: latencies as a histogram, and whether they climbed. */
function victimWindow(m: ResultMessage | TenantResult, offeredQps: number): VictimWindow {
  const lat = m.latenciesMs;
  const quarter = Math.floor(lat.length / 4);
  const median = (xs: readonly number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length === 0 ? null : (s[Math.floor((s.length - 1) / 2)] as number);
  };
  return {
    offeredQps,
    windowS: (m.windowEndUs - m.windowStartUs) / 1e6,
    requests: lat.length,
    dropped: m.droppedRequests ?? 0,
    unreported: Math.max(0, m.iterations - lat.length),
    scheduleLagMs: m.scheduleLagMs ?? 0,
    histogram: encodeLatencies(lat),
    firstQuarterP50Ms: quarter > 0 ? median(lat.slice(0, quarter)) : null,
    lastQuarterP50Ms: quarter > 0 ? median(lat.slice(lat.length - quarter)) : null,
  };
}

/**
 * Whether `arm` of `mode` runs a tenant alone on the whole GPU although its process splits the SMs: green's
 * alone arms run the tenant's twin outside any green context (mix_tenants.py), the baseline every mode shares.
 */
export function wholeGpuAlone(mode: MixMode, arm: Arm): boolean {
  return mode === 'green' && (arm.arm === 'victim-alone' || arm.arm === 'aggressor-alone');
}

/** An in-process window: the process (`member`) of the arm's aggressor, the victim's rate, and the aggressor's name. */
export interface TenantsArm {
  member: number;
  qps: number | null;
  aggressorName: string;
}

/** One window of an in-process arm: the tenants it names released by one run command, the victim's with its load. */
export async function runTenantsWindow(
  mode: MixMode,
  group: MixGroup,
  arm: Arm,
  { member, qps, aggressorName }: TenantsArm,
  settings: MixRun['settings'],
  trial: string,
  signal: AbortSignal,
): Promise<WindowOutcome<Measured>> {
  const named = arm.arm === 'victim-alone' ? [0] : arm.arm === 'aggressor-alone' ? [1] : [0, 1];
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, named.length);
  const work = { kind: 'fixed-duration' as const, durationMs: settings.windowMs };
  const load: Load | null = qps === null ? null : { kind: settings.arrivals, qps };
  const together = named.length === 2;
  const variant = { streams: 1, ...(wholeGpuAlone(mode, arm) ? { whole: true as const } : {}) };
  // Each tenant's load (the victim's) and who runs beside it: what the simulator plays the mix from.
  const tenantLoads: Record<number, Load> = load === null ? {} : { 0: load };
  const tenantBeside: Record<number, Beside[]> = together
    ? {
        0: [{ workload: aggressorName, threadPct: null, qps: null }],
        1: [{ workload: settings.victim.name, threadPct: null, qps }],
      }
    : {};
  const window = await group.window(
    {
      leadMs,
      releases: (startAtUs) => [
        {
          member,
          command: {
            ...runCommandOf(trial, startAtUs, work, variant, named.length, null, named),
            tenantLoads,
            tenantBeside,
          },
        },
      ],
      timeoutMs: settings.windowMs * 2 + leadMs + 60_000,
      check: openLoopCheck(settings.windowMs, (results) => results[0]?.tenants ?? []),
    },
    signal,
  );
  if (window.status === 'lost') return lostOutcome(window, trial);
  const tenants = window.results[0]?.tenants ?? [];
  const of = (k: number) => tenants.find((t) => t.tenant === k) ?? null;
  const v = of(0);
  const a = of(1);
  return {
    status: 'ok',
    window: {
      victim: v === null ? null : victimWindow(v, qps ?? 0),
      aggressor: a === null ? null : { iterations: a.iterations, windowS: (a.windowEndUs - a.windowStartUs) / 1e6 },
      partner: null,
      invalid: window.invalid,
      overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
    },
  };
}
