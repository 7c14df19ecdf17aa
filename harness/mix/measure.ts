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
import { WorkloadClient } from '../workload/client.js';
import { analyzeStep, capacityOf, encodeLatencies, invalidStep, nextRate, type Step } from '../workload/open-loop.js';
import {
  GREEN_ENV,
  type Load,
  type ResultMessage,
  runCommand,
  TENANTS_ENV,
  type TenantResult,
} from '../workload/protocol.js';
import { RELEASE_LEAD_MS, releaseLeadMs } from '../workload/release.js';
import type { WorkloadSpec } from '../workload/spec.js';
import type { MixOptions } from './options.js';
import { type Arm, aggressorProcesses, PROCESS_MODES, roundArms } from './plan.js';
import { type AggressorWindow, type MixMode, type MixRun, PAIR, type VictimWindow } from './record.js';

/** The in-process workload: tenant 0 the victim, tenant 1 the aggressor, each built by its own script. */
const MIX_TENANTS_SCRIPT = 'mix_tenants.py';

/** Who runs beside a client in a window: informational for a real workload; gpushare's simulator plays it. */
interface Beside {
  workload: string;
  threadPct: number | null;
  qps: number | null;
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
  const victim = startClient(deps, session, 0, 'the victim (capacity search)', settings.victim, {
    CUDA_VISIBLE_DEVICES: visible,
  });
  try {
    const ready = await victim.awaitReady(options.readyTimeoutMs, session.abort);
    if (ready.kind !== 'message') {
      run.warnings.push(
        `the victim never became ready for its capacity search: ${ready.kind === 'failed' ? ready.reason : 'no ready line in time'}`,
      );
      return null;
    }
    while (rate !== null) {
      if (session.abort.aborted) throw session.interrupted();
      const window = await runWindow(
        { victim, aggressor: null, partner: null },
        { load: { kind: settings.arrivals, qps: rate }, beside: [], aggressorBeside: [], partnerBeside: [] },
        `capacity#${run.capacitySteps.length}`,
        Math.max(settings.windowMs, Math.min(5000, Math.ceil((640 / rate) * 1000))),
        deps,
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
    await victim.close(10_000);
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
  const victim = startClient(deps, session, 0, 'the victim', settings.victim, env);
  const aggressors = aggressorProcesses(settings, mode).map((p, i) => {
    const workload = settings.aggressors.find((a) => a.name === p.aggressor)?.workload as WorkloadSpec;
    const cap: Record<string, string> =
      p.threadPct === null ? {} : { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(p.threadPct) };
    const label = `aggressor ${p.aggressor}${p.threadPct === null ? '' : ` at ${p.threadPct}% threads`}`;
    return { ...p, workload, client: startClient(deps, session, i + 1, label, workload, { ...env, ...cap }) };
  });
  const clients = [victim, ...aggressors.map((a) => a.client)];
  try {
    const ready = await Promise.all(clients.map((c) => c.awaitReady(options.readyTimeoutMs, session.abort)));
    const bad = ready.findIndex((r) => r.kind !== 'message');
    if (bad !== -1) {
      const reply = ready[bad];
      const why = reply?.kind === 'failed' ? reply.reason : `${clients[bad]?.label} did not say ready in time`;
      outcome(reply?.kind === 'failed' && reply.unsupported ? 'skipped' : 'failed', why);
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
        victim: arm.arm === 'aggressor-alone' || arm.arm === 'pair' ? null : victim,
        aggressor: arm.arm === 'victim-alone' ? null : (agg?.client ?? null),
        partner: partner?.client ?? null,
      };
      const together = inArm.victim !== null && inArm.aggressor !== null;
      return runWindow(
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
        deps,
        session.abort,
      );
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await Promise.all(clients.map((c) => c.close(10_000)));
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

function startClient(
  deps: AppDeps,
  session: Session<MixRun>,
  index: number,
  label: string,
  workload: WorkloadSpec,
  env: Record<string, string>,
): WorkloadClient {
  const client = WorkloadClient.start(deps.runner, index, label, workload.argv, {
    ...env,
    GPUSHARE_CLIENT_INDEX: String(index),
    PYTHONUNBUFFERED: '1',
  });
  session.reaper.add(() => client.kill());
  return client;
}

/** What one window gave: each side's result, why the checks refused it (or null), and the victim's count over a target. */
interface Measured {
  victim: VictimWindow | null;
  aggressor: AggressorWindow | null;
  partner: AggressorWindow | null;
  invalid: string | null;
  overTarget(targetMs: number): number;
}

/** Releases the clients of an arm together for one window; a string says why it failed. */
async function runWindow(
  clients: { victim: WorkloadClient | null; aggressor: WorkloadClient | null; partner: WorkloadClient | null },
  plan: { load: Load | null; beside: Beside[]; aggressorBeside: Beside[]; partnerBeside: Beside[] },
  trial: string,
  durationMs: number,
  deps: AppDeps,
  signal: AbortSignal,
): Promise<Measured | string> {
  const senders = [clients.victim, clients.aggressor, clients.partner].filter((c) => c !== null).length;
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, senders);
  const startAtUs = deps.clock.monotonicUs() + leadMs * 1000;
  const work = { kind: 'fixed-duration' as const, durationMs };
  const command = (load: Load | null, beside: Beside[]) =>
    JSON.stringify({ ...JSON.parse(runCommand(trial, startAtUs, work, { streams: 1 }, senders, load)), beside });
  const timeoutMs = durationMs * 2 + leadMs + 60_000;
  const [victimReply, aggressorReply, partnerReply] = await Promise.all([
    clients.victim?.run(command(plan.load, plan.beside), trial, timeoutMs, signal) ?? null,
    clients.aggressor?.run(command(null, plan.aggressorBeside), trial, timeoutMs, signal) ?? null,
    clients.partner?.run(command(null, plan.partnerBeside), trial, timeoutMs, signal) ?? null,
  ]);
  const receivedUs = deps.clock.monotonicUs();
  const messages: ResultMessage[] = [];
  for (const [reply, client] of [
    [victimReply, clients.victim],
    [aggressorReply, clients.aggressor],
    [partnerReply, clients.partner],
  ] as const) {
    if (reply === null) continue;
    if (reply.kind !== 'message')
      return `${client?.label} in window ${trial}: ${reply.kind === 'failed' ? reply.reason : 'no result in time'}`;
    messages.push(reply.message);
  }
  const claims = messages.map((m, client) => ({ ...m, client }));
  const invalid = invalidStep(claims, startAtUs, receivedUs, durationMs);
  const v = victimReply?.kind === 'message' ? victimReply.message : null;
  const closed = (reply: typeof aggressorReply): AggressorWindow | null =>
    reply?.kind === 'message'
      ? {
          iterations: reply.message.iterations,
          windowS: (reply.message.windowEndUs - reply.message.windowStartUs) / 1e6,
        }
      : null;
  return {
    victim: v === null ? null : victimWindow(v, plan.load?.qps ?? 0),
    aggressor: closed(aggressorReply),
    partner: closed(partnerReply),
    invalid,
    overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
  };
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
  const processes = settings.aggressors.map((a, i) => ({
    aggressor: a,
    client: startClient(
      deps,
      session,
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
  try {
    const ready = await Promise.all(processes.map((p) => p.client.awaitReady(options.readyTimeoutMs, session.abort)));
    const bad = ready.findIndex((r) => r.kind !== 'message');
    if (bad !== -1) {
      const reply = ready[bad];
      const why = reply?.kind === 'failed' ? reply.reason : `${processes[bad]?.client.label} did not say ready in time`;
      outcome(reply?.kind === 'failed' && reply.unsupported ? 'skipped' : 'failed', why);
      return;
    }
    const failed = await runRounds(session, mode, deps, progress, (arm, round) => {
      const p = processes.find((x) => x.aggressor.name === arm.aggressor) as (typeof processes)[number];
      const qps = arm.load === null ? null : arm.load * capacityQps;
      const trial = `${mode}#${round}/${arm.arm}/${arm.aggressor}/${arm.load ?? '-'}`;
      return runTenantsWindow(
        mode,
        p.client,
        arm,
        qps,
        settings,
        p.aggressor.workload.name,
        trial,
        deps,
        session.abort,
      );
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await Promise.all(processes.map((p) => p.client.close(10_000)));
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
  client: WorkloadClient,
  arm: Arm,
  qps: number | null,
  settings: MixRun['settings'],
  aggressorName: string,
  trial: string,
  deps: AppDeps,
  signal: AbortSignal,
): Promise<Measured | string> {
  const named = arm.arm === 'victim-alone' ? [0] : arm.arm === 'aggressor-alone' ? [1] : [0, 1];
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, named.length);
  const startAtUs = deps.clock.monotonicUs() + leadMs * 1000;
  const work = { kind: 'fixed-duration' as const, durationMs: settings.windowMs };
  const load: Load | null = qps === null ? null : { kind: settings.arrivals, qps };
  const together = named.length === 2;
  const command = JSON.stringify({
    ...JSON.parse(
      runCommand(
        trial,
        startAtUs,
        work,
        { streams: 1, ...(wholeGpuAlone(mode, arm) ? { whole: true as const } : {}) },
        named.length,
        null,
        named,
      ),
    ),
    tenantLoads: load === null ? {} : { 0: load },
    tenantBeside: together
      ? {
          0: [{ workload: aggressorName, threadPct: null, qps: null }],
          1: [{ workload: settings.victim.name, threadPct: null, qps }],
        }
      : {},
  });
  const reply = await client.run(command, trial, settings.windowMs * 2 + leadMs + 60_000, signal);
  const receivedUs = deps.clock.monotonicUs();
  if (reply.kind !== 'message')
    return `${client.label} in window ${trial}: ${reply.kind === 'failed' ? reply.reason : 'no result in time'}`;
  const tenants = reply.message.tenants ?? [];
  if (tenants.length !== named.length)
    return `${client.label} in window ${trial} answered for ${tenants.length} tenants, not ${named.length}`;
  const of = (k: number) => tenants.find((t) => t.tenant === k) ?? null;
  const v = of(0);
  const a = of(1);
  const claims = tenants.map((t, i) => ({ ...t, client: i }));
  return {
    victim: v === null ? null : victimWindow(v, qps ?? 0),
    aggressor: a === null ? null : { iterations: a.iterations, windowS: (a.windowEndUs - a.windowStartUs) / 1e6 },
    partner: null,
    invalid: invalidStep(claims, startAtUs, receivedUs, settings.windowMs),
    overTarget: (targetMs) => v?.latenciesMs.filter((ms) => ms > targetMs).length ?? 0,
  };
}
