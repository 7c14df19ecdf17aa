/**
 * The measurements of a mix run: the victim's capacity alone (the rate search of experiment/, on the
 * shared open-loop steps), then per mode its processes started together and every round's windows
 * (paired rounds, experiment/), each saved as it comes. A window releases the victim (open loop at its
 * load) and the aggressor (closed loop, flat out) at one CLOCK_MONOTONIC time, and goes through bench's
 * result checks.
 */

import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import { nextRate, runRateSearch, type StepOutcome } from '../experiment/rate-search.js';
import { runPairedRounds, type WindowOutcome, windowsLeft } from '../experiment/rounds.js';
import type { Session, SessionDaemon } from '../session/lifecycle.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { WorkloadGroup } from '../workload/group.js';
import type { Step } from '../workload/open-loop.js';
import { GREEN_ENV, TENANTS_ENV } from '../workload/protocol.js';
import { ProtocolMember } from '../workload/protocol-member.js';
import type { WorkloadSpec } from '../workload/spec.js';
import { analyzeStep, capacityOf } from '../workload/verdicts.js';
import { type Arm, aggressorProcesses, modeArms, PROCESS_MODES } from './arms.js';
import type { MixOptions } from './options.js';
import { capacityStepLine, windowLine } from './progress.js';
import type { MixMode, MixRun, VictimWindow } from './record.js';
import {
  type Measured,
  type MixGroup,
  processArmRelease,
  runTenantsWindow,
  runWindow,
  wholeGpuAlone,
} from './window.js';

/** The in-process workload: tenant 0 the victim, tenant 1 the aggressor, each built by its own script. */
const MIX_TENANTS_SCRIPT = 'mix_tenants.py';

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
  const verdicts = (steps: readonly Step[]) => steps.map((s) => analyzeStep(s, target));
  const policy = {
    startQps: settings.startQps,
    tolerance: 0.1,
    maxSteps: settings.maxSteps,
    minQps: settings.startQps / 16,
  };
  if (nextRate(verdicts(run.capacitySteps), policy) === null)
    return capacityOf(verdicts(run.capacitySteps)).capacityQps;
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
    const searched = await runRateSearch({
      policy,
      steps: run.capacitySteps,
      step: (rate, index) => victimStep(group, run.settings, rate, index, session.abort),
      verdicts,
      onStep: async ({ verdict, verdicts }) => {
        await session.save();
        deps.err(capacityStepLine(verdicts.length, verdict, target));
      },
      signal: session.abort,
      interrupted: () => session.interrupted(),
    });
    if (searched.status === 'failed') {
      run.warnings.push(`the victim's capacity search stopped: ${searched.reason}`);
      return null;
    }
  } finally {
    await group.stop(10_000);
  }
  return capacityOf(verdicts(run.capacitySteps)).capacityQps;
}

/** One step of the victim's capacity search: the victim alone, open loop at `rate`, for long enough for its p99 claim. */
async function victimStep(
  group: MixGroup,
  settings: MixRun['settings'],
  rate: number,
  index: number,
  signal: AbortSignal,
): Promise<StepOutcome<Step>> {
  const measured = await runWindow(
    group,
    { victim: 0, aggressor: null, partner: null },
    { load: { kind: settings.arrivals, qps: rate }, beside: [], aggressorBeside: [], partnerBeside: [] },
    `capacity#${index}`,
    Math.max(settings.windowMs, Math.min(5000, Math.ceil((640 / rate) * 1000))),
    signal,
  );
  if (measured.status === 'failed') return { status: 'failed', reason: measured.reason };
  const { window } = measured;
  const v = window.victim as VictimWindow;
  const overTarget = window.overTarget(settings.sloP99Ms as number);
  const step: Step = {
    totalQps: rate,
    windowS: v.windowS,
    clients: [
      {
        requests: v.requests + v.dropped,
        overTarget: overTarget + v.dropped,
        unreported: v.unreported,
        scheduleLagMs: v.scheduleLagMs,
        histogram: v.histogram,
      },
    ],
    invalid: window.invalid,
  };
  return { status: 'measured', step };
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
      const { clients, release } = processArmRelease(arm, aggressors, settings, capacityQps);
      const trial = `${mode}#${round}/${arm.arm}/${arm.aggressor ?? '-'}@${arm.threadPct ?? 100}/${arm.load ?? '-'}`;
      return runWindow(group, clients, release, trial, settings.windowMs, session.abort);
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await group.stop(10_000);
    await daemon?.stop();
  }
}

/**
 * Every round of `mode` not measured yet (paired rounds), each window by `measure`, saved as it comes
 * with a progress line; the record's `current` names the round under way. Returns why a window failed, or null.
 */
async function runRounds(
  session: Session<MixRun>,
  mode: MixMode,
  deps: AppDeps,
  progress: { windowsLeft: () => number },
  measure: (arm: Arm, round: number) => Promise<WindowOutcome<Measured>>,
): Promise<string | null> {
  const run = session.record;
  let startedMs = 0;
  const rounds = await runPairedRounds({
    arms: modeArms(run.settings, mode),
    rounds: run.settings.rounds,
    kept: (arm, round) => recorded(run, mode, round, arm),
    measure: (arm, round) => {
      startedMs = deps.terminal.nowMs();
      return measure(arm, round);
    },
    onRoundStart: (round) => {
      run.current = { mode, round };
    },
    onWindow: async (arm, round, window) => {
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
      const at = { mode, round, rounds: run.settings.rounds, windowsLeft: progress.windowsLeft() };
      deps.err(windowLine({ ...at, windowMs: deps.terminal.nowMs() - startedMs }, arm, window));
    },
    onRound: async () => {
      run.current = null;
      await session.save();
    },
    signal: session.abort,
    interrupted: () => session.interrupted(),
  });
  return rounds.status === 'failed' ? rounds.reason : null;
}

/** The windows of `mode` not measured yet (a resumed run's finished modes start no process). */
function armsLeft(run: MixRun, mode: MixMode): number {
  return windowsLeft(modeArms(run.settings, mode), run.settings.rounds, (arm, round) =>
    recorded(run, mode, round, arm),
  );
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
      const tenants = { member: p.member, qps, aggressorName: p.aggressor.workload.name };
      return runTenantsWindow(mode, group, arm, tenants, settings, trial, session.abort);
    });
    if (failed !== null) outcome('failed', failed);
  } finally {
    await group.stop(10_000);
  }
}
