/**
 * The measurements of a mix run: the victim's capacity alone (capacity's rate search, on the shared
 * open-loop steps), then per mode its processes started together and every round's windows, each
 * saved as it comes. A window releases the victim (open loop at its load) and the aggressor (closed
 * loop, flat out) at one CLOCK_MONOTONIC time, and goes through bench's result checks.
 */

import path from 'node:path';
import { clockText } from '../core/clock-text.js';
import type { AppDeps } from '../core/deps.js';
import { termText } from '../core/escape/terminal.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import type { Session, SessionDaemon } from '../session/lifecycle.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { openLoopCheck, WorkloadGroup } from '../workload/group.js';
import { encodeLatencies, nextRate, type Step } from '../workload/open-loop.js';
import {
  type Beside,
  GREEN_ENV,
  type Load,
  type ReadyMessage,
  type ResultMessage,
  type RunCommand,
  runCommandOf,
  TENANTS_ENV,
  type TenantResult,
} from '../workload/protocol.js';
import { ProtocolMember } from '../workload/protocol-member.js';
import { RELEASE_LEAD_MS, releaseLeadMs } from '../workload/release.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { analyzeStep, capacityOf } from '../workload/verdicts.js';
import type { MixOptions } from './options.js';
import { type Arm, aggressorProcesses, PROCESS_MODES, roundArms } from './plan.js';
import { type AggressorWindow, type MixMode, type MixRun, PAIR, type VictimWindow } from './record.js';

/** The in-process workload: tenant 0 the victim, tenant 1 the aggressor, each built by its own script. */
const MIX_TENANTS_SCRIPT = 'mix_tenants.py';

/** A mix run's processes, released window by window. */
type MixGroup = WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>;

/** Why a mode's processes did not all become ready: the reason, and whether it is a skip (unsupported here). */
function notReadyOutcome(
  ready: Awaited<ReturnType<MixGroup['ready']>>,
): { status: 'skipped' | 'failed'; reason: string } | null {
  if (ready.status === 'ready') return null;
  const { reply, label } = ready;
  const why = reply.kind === 'failed' ? reply.reason : `${label} did not say ready in time`;
  return { status: reply.kind === 'failed' && reply.unsupported ? 'skipped' : 'failed', reason: why };
}

/** The victim's capacity alone, req/s: given, found by the search recorded, or searched now. Null: none found. */
export async function victimCapacity(
  session: Session<MixRun>,
  options: MixOptions,
  deps: AppDeps,
  visible: string,
): Promise<number | null> {
  const run = session.record;
  const { settings } = run;
  if (settings.victimQps !== null) return settings.victimQps;
  const target = settings.sloP99Ms as number;
  const analyzed = () => run.capacitySteps.map((s) => analyzeStep(s, target));
  const policy = {
    startQps: settings.startQps,
    tolerance: 0.1,
    maxSteps: settings.maxSteps,
    minQps: settings.startQps / 16,
  };
  let rate = nextRate(analyzed(), policy);
  if (rate === null) return capacityOf(analyzed()).capacityQps;
  const victim = memberOf(deps, 0, 'the victim (capacity search)', settings.victim, {
    CUDA_VISIBLE_DEVICES: visible,
  });
  const group = WorkloadGroup.start([victim], deps.clock, session.reaper);
  try {
    const ready = await group.ready(options.readyTimeoutMs, session.abort);
    if (ready.status === 'not-ready') {
      run.warnings.push(
        `the victim never became ready for its capacity search: ${ready.reply.kind === 'failed' ? ready.reply.reason : 'no ready line in time'}`,
      );
      return null;
    }
    while (rate !== null) {
      if (session.abort.aborted) throw session.interrupted();
      const window = await runWindow(
        group,
        { victim: 0, aggressor: null, partner: null },
        { load: { kind: settings.arrivals, qps: rate }, beside: [], aggressorBeside: [], partnerBeside: [] },
        `capacity#${run.capacitySteps.length}`,
        Math.max(settings.windowMs, Math.min(5000, Math.ceil((640 / rate) * 1000))),
        session.abort,
      );
      if (typeof window === 'string') {
        run.warnings.push(`the victim's capacity search stopped: ${window}`);
        return null;
      }
      const v = window.victim as VictimWindow;
      const step: Step = {
        totalQps: rate,
        windowS: v.windowS,
        clients: [
          {
            requests: v.requests + v.dropped,
            overTarget: window.overTarget(target) + v.dropped,
            unreported: v.unreported,
            scheduleLagMs: v.scheduleLagMs,
            histogram: v.histogram,
          },
        ],
        invalid: window.invalid,
      };
      run.capacitySteps.push(step);
      await session.save();
      const verdicts = analyzed();
      const last = verdicts.at(-1);
      deps.err(
        `  victim alone, step ${verdicts.length}: ${rate.toFixed(0)} req/s, p99 ${last?.p99Ms.toFixed(2)} ms (target ${target} ms): ${last?.verdict}\n`,
      );
      rate = nextRate(verdicts, policy);
    }
  } finally {
    await group.stop(10_000);
  }
  return capacityOf(analyzed()).capacityQps;
}

/** Measures every round of `mode` not measured yet; records a skip or failure as the mode's outcome. */
export async function measureMode(
  session: Session<MixRun>,
  mode: MixMode,
  capacityQps: number,
  options: MixOptions,
  deps: AppDeps,
  progress: { windowsLeft: () => number },
): Promise<void> {
  const run = session.record;
  const { settings } = run;
  const outcome = (status: 'skipped' | 'failed', reason: string) => run.outcomes.push({ mode, status, reason });
  if (armsLeft(run, mode) === 0) return;
  if (!PROCESS_MODES.includes(mode)) return measureInProcess(session, mode, capacityQps, options, deps, progress);
  const visible = visibleDevice(run.fingerprint, run.gpuIndex);
  let daemon: SessionDaemon | null = null;
  if (mode === 'mps') {
    const started = await session.startMps((d) => run.daemons.push(d), visible);
    if (!started.ok) {
      outcome('skipped', `the MPS daemon did not start: ${started.reason}`);
      await session.save();
      return;
    }
    daemon = started.daemon;
  }
  const env = { ...(daemon?.env ?? {}), CUDA_VISIBLE_DEVICES: visible };
  // Member 0 is the victim, member i + 1 the i-th aggressor process.
  const aggressors = aggressorProcesses(settings, mode).map((p, i) => {
    const workload = settings.aggressors.find((a) => a.name === p.aggressor)?.workload as WorkloadSpec;
    const cap: Record<string, string> =
      p.threadPct === null ? {} : { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(p.threadPct) };
    const label = `aggressor ${p.aggressor}${p.threadPct === null ? '' : ` at ${p.threadPct}% threads`}`;
    return { ...p, workload, member: i + 1, process: memberOf(deps, i + 1, label, workload, { ...env, ...cap }) };
  });
  const victim = memberOf(deps, 0, 'the victim', settings.victim, env);
  const group = WorkloadGroup.start([victim, ...aggressors.map((a) => a.process)], deps.clock, session.reaper);
  try {
    const notReady = notReadyOutcome(await group.ready(options.readyTimeoutMs, session.abort));
    if (notReady !== null) {
      outcome(notReady.status, notReady.reason);
      return;
    }
    const failed = await runRounds(session, mode, deps, progress, (arm, round) => {
      const agg =
        arm.aggressor === null
          ? null
          : aggressors.find((a) => a.aggressor === arm.aggressor && a.threadPct === arm.threadPct);
      const qps = arm.load === null ? null : arm.load * capacityQps;
      const partner =
        arm.arm === 'pair' ? aggressors.find((a) => a.aggressor === PAIR[1] && a.threadPct === null) : undefined;
      const inArm = {
        victim: arm.arm === 'aggressor-alone' || arm.arm === 'pair' ? null : 0,
        aggressor: arm.arm === 'victim-alone' ? null : (agg?.member ?? null),
        partner: partner?.member ?? null,
      };
      const together = inArm.victim !== null && inArm.aggressor !== null;
      return runWindow(
        group,
        inArm,
        {
          load: qps === null ? null : { kind: settings.arrivals, qps },
          beside: together && agg ? [{ workload: agg.workload.name, threadPct: agg.threadPct, qps: null }] : [],
          aggressorBeside: together
            ? [{ workload: settings.victim.name, threadPct: null, qps }]
            : partner
              ? [{ workload: partner.workload.name, threadPct: null, qps: null }]
              : [],
          partnerBeside: agg && partner ? [{ workload: agg.workload.name, threadPct: null, qps: null }] : [],
        },
        `${mode}#${round}/${arm.arm}/${arm.aggressor ?? '-'}@${arm.threadPct ?? 100}/${arm.load ?? '-'}`,
        settings.windowMs,
        session.abort,
      );
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await group.stop(10_000);
    await daemon?.stop();
  }
}

/**
 * Every round of `mode` not measured yet, each window by `measure`, saved as it comes with a progress
 * line; the record's `current` names the round under way. Returns why a window failed, or null.
 */
async function runRounds(
  session: Session<MixRun>,
  mode: MixMode,
  deps: AppDeps,
  progress: { windowsLeft: () => number },
  measure: (arm: Arm, round: number) => Promise<Measured | string>,
): Promise<string | null> {
  const run = session.record;
  for (let round = 0; round < run.settings.rounds; round++) {
    const arms = roundArms(run.settings, mode, round).filter((arm) => !recorded(run, mode, round, arm));
    if (arms.length === 0) continue;
    run.current = { mode, round };
    for (const arm of arms) {
      if (session.abort.aborted) throw session.interrupted();
      const started = deps.terminal.nowMs();
      const window = await measure(arm, round);
      if (typeof window === 'string') return window;
      run.windows.push({
        mode,
        round,
        ...arm,
        victimResult: window.victim,
        aggressorResult: window.aggressor,
        partnerResult: window.partner,
        invalid: window.invalid,
        ...(wholeGpuAlone(mode, arm) ? { wholeGpu: true as const } : {}),
      });
      await session.save();
      deps.err(
        windowLine(
          mode,
          round,
          run.settings.rounds,
          arm,
          window,
          progress.windowsLeft(),
          deps.terminal.nowMs() - started,
        ),
      );
    }
    run.current = null;
    await session.save();
  }
  return null;
}

/** The windows of `mode` not measured yet (a resumed run's finished modes start no process). */
function armsLeft(run: MixRun, mode: MixMode): number {
  let left = 0;
  for (let round = 0; round < run.settings.rounds; round++)
    left += roundArms(run.settings, mode, round).filter((arm) => !recorded(run, mode, round, arm)).length;
  return left;
}

function recorded(run: MixRun, mode: MixMode, round: number, arm: Arm): boolean {
  return run.windows.some(
    (w) =>
      w.mode === mode &&
      w.round === round &&
      w.arm === arm.arm &&
      w.aggressor === arm.aggressor &&
      w.threadPct === arm.threadPct &&
      w.load === arm.load,
  );
}

/** Client `index` of a mix run, running `workload`: started by its group. */
function memberOf(
  deps: AppDeps,
  index: number,
  label: string,
  workload: WorkloadSpec,
  env: Record<string, string>,
): ProtocolMember {
  return ProtocolMember.process(deps.runner, index, label, workload.argv, {
    ...env,
    GPUSHARE_CLIENT_INDEX: String(index),
    PYTHONUNBUFFERED: '1',
  });
}

/** What one window gave: each side's result, why the checks refused it (or null), and the victim's count over a target. */
interface Measured {
  victim: VictimWindow | null;
  aggressor: AggressorWindow | null;
  partner: AggressorWindow | null;
  invalid: string | null;
  overTarget(targetMs: number): number;
}

/** Releases the clients of an arm (members of `group`, null: not in it) together for one window; a string says why it failed. */
async function runWindow(
  group: MixGroup,
  clients: { victim: number | null; aggressor: number | null; partner: number | null },
  plan: { load: Load | null; beside: Beside[]; aggressorBeside: Beside[]; partnerBeside: Beside[] },
  trial: string,
  durationMs: number,
  signal: AbortSignal,
): Promise<Measured | string> {
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
  if (window.status === 'lost') return lostText(window, trial);
  const resultOf = (member: number | null) =>
    member === null ? null : (window.results[released.findIndex((r) => r.member === member)] ?? null);
  const v = resultOf(clients.victim);
  const closed = (m: ResultMessage | null): AggressorWindow | null =>
    m === null ? null : { iterations: m.iterations, windowS: (m.windowEndUs - m.windowStartUs) / 1e6 };
  return {
    victim: v === null ? null : victimWindow(v, plan.load?.qps ?? 0),
    aggressor: closed(resultOf(clients.aggressor)),
    partner: closed(resultOf(clients.partner)),
    invalid: window.invalid,
    overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
  };
}

/** Why a window got no answer from a member, as the mode's failure says it. */
function lostText(window: Extract<Awaited<ReturnType<MixGroup['window']>>, { status: 'lost' }>, trial: string): string {
  const { label, reply } = window;
  if (reply.kind === 'malformed') return `${label} in window ${trial} ${reply.problem}`;
  return `${label} in window ${trial}: ${reply.kind === 'failed' ? reply.reason : 'no result in time'}`;
}

/** The victim's side of a window, from its result: latencies as a histogram, and whether they climbed. */
export function victimWindow(m: ResultMessage | TenantResult, offeredQps: number): VictimWindow {
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

function windowLine(
  mode: MixMode,
  round: number,
  rounds: number,
  arm: Arm,
  w: Measured,
  windowsLeft: number,
  windowMs: number,
): string {
  const who =
    arm.arm === 'victim-alone'
      ? `victim alone at ${(arm.load as number) * 100}%`
      : arm.arm === 'aggressor-alone'
        ? `${arm.aggressor} alone`
        : arm.arm === 'pair'
          ? `${PAIR.join(' and ')} together`
          : `victim at ${(arm.load as number) * 100}% beside ${arm.aggressor}${arm.threadPct === null ? '' : ` (${arm.threadPct}% threads)`}`;
  const victim = w.victim ? `; victim ${w.victim.requests} requests` : '';
  const aggressor = w.aggressor
    ? `; aggressor ${(w.aggressor.iterations / Math.max(1e-9, w.aggressor.windowS)).toFixed(0)} it/s`
    : '';
  const invalid = w.invalid ? `; invalid: ${termText(w.invalid)}` : '';
  return `  ${mode} round ${round + 1}/${rounds}, ${who}${victim}${aggressor}${invalid}; about ${clockText(windowsLeft * windowMs)} left\n`;
}

/**
 * An in-process mode: per aggressor one process of two tenants (the victim on a high-priority stream,
 * or each in green contexts of its own SMs), started together; each round's windows name the tenants
 * they release, the victim's with its load.
 */
async function measureInProcess(
  session: Session<MixRun>,
  mode: MixMode,
  capacityQps: number,
  options: MixOptions,
  deps: AppDeps,
  progress: { windowsLeft: () => number },
): Promise<void> {
  const run = session.record;
  const { settings } = run;
  const outcome = (status: 'skipped' | 'failed', reason: string) => run.outcomes.push({ mode, status, reason });
  const custom = [settings.victim, ...settings.aggressors.map((a) => a.workload)].find((w) => !w.builtin);
  if (custom !== undefined) {
    outcome(
      'skipped',
      `in one process both sides must be built-in workloads (their setup is called in-process); ${custom.name} is a command of its own`,
    );
    await session.save();
    return;
  }
  const visible = visibleDevice(run.fingerprint, run.gpuIndex);
  const env = {
    CUDA_VISIBLE_DEVICES: visible,
    [TENANTS_ENV]: '2',
    ...(mode === 'green' ? { [GREEN_ENV]: 'even' } : {}),
  };
  const sideArg = (w: WorkloadSpec) => JSON.stringify(w.argv.slice(1));
  const python = settings.victim.argv[0] as string;
  const script = path.join(WORKLOADS_DIR, MIX_TENANTS_SCRIPT);
  // Member i is the process of the i-th aggressor.
  const processes = settings.aggressors.map((a, i) => ({
    aggressor: a,
    member: i,
    process: memberOf(
      deps,
      i,
      `the victim and ${a.name} in one process`,
      {
        name: 'mix_tenants',
        builtin: true,
        argv: [python, script, '--victim', sideArg(settings.victim), '--aggressor', sideArg(a.workload)],
        params: {},
      },
      env,
    ),
  }));
  const group = WorkloadGroup.start(
    processes.map((p) => p.process),
    deps.clock,
    session.reaper,
  );
  try {
    const notReady = notReadyOutcome(await group.ready(options.readyTimeoutMs, session.abort));
    if (notReady !== null) {
      outcome(notReady.status, notReady.reason);
      return;
    }
    const failed = await runRounds(session, mode, deps, progress, (arm, round) => {
      const p = processes.find((x) => x.aggressor.name === arm.aggressor) as (typeof processes)[number];
      const qps = arm.load === null ? null : arm.load * capacityQps;
      const trial = `${mode}#${round}/${arm.arm}/${arm.aggressor}/${arm.load ?? '-'}`;
      return runTenantsWindow(
        mode,
        group,
        p.member,
        arm,
        qps,
        settings,
        p.aggressor.workload.name,
        trial,
        session.abort,
      );
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await group.stop(10_000);
  }
}

/**
 * Whether `arm` of `mode` runs a tenant alone on the whole GPU although its process splits the SMs: green's
 * alone arms run the tenant's twin outside any green context (mix_tenants.py), the baseline every mode shares.
 */
function wholeGpuAlone(mode: MixMode, arm: Arm): boolean {
  return mode === 'green' && (arm.arm === 'victim-alone' || arm.arm === 'aggressor-alone');
}

/** One window of an in-process arm: the tenants it names released by one run command, the victim's with its load. */
async function runTenantsWindow(
  mode: MixMode,
  group: MixGroup,
  member: number,
  arm: Arm,
  qps: number | null,
  settings: MixRun['settings'],
  aggressorName: string,
  trial: string,
  signal: AbortSignal,
): Promise<Measured | string> {
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
  if (window.status === 'lost') return lostText(window, trial);
  const tenants = window.results[0]?.tenants ?? [];
  const of = (k: number) => tenants.find((t) => t.tenant === k) ?? null;
  const v = of(0);
  const a = of(1);
  return {
    victim: v === null ? null : victimWindow(v, qps ?? 0),
    aggressor: a === null ? null : { iterations: a.iterations, windowS: (a.windowEndUs - a.windowStartUs) / 1e6 },
    partner: null,
    invalid: window.invalid,
    overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
  };
}
