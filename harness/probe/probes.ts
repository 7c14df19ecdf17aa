/**
 * The probes of `gpushare probe`: each starts roles of workloads/isolation.py under plain
 * time-slicing or a fresh MPS daemon of its own, records what happened as a typed outcome, and
 * always stops every process and the daemon (what was left running is recorded too).
 */
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import type { SessionDaemon, SessionMpsStart } from '../session/lifecycle.js';
import type { Cleanup, ProbeMode, ProbeName, ProbeOutcome, Victim } from './record.js';
import { alloc, expect, kernels, lastLine, num, ProbeFailure, ready, records, series, text } from './replies.js';
import { Cast, type RoleProcess } from './role.js';
import { PROBE_SETTINGS } from './settings.js';

/** What the probes need from outside: processes, time, the GPU, and MPS daemons. */
export interface ProbeDeps {
  runner: ProcessRunner;
  clock: Clock;
  /** argv of an isolation.py role. */
  argv: (role: string, flags: readonly string[]) => string[];
  /** CUDA_VISIBLE_DEVICES of every role: the GPU under test. */
  visibleDevices: string;
  /** A fresh MPS daemon of this run, recorded in the run's record before it starts; throws Interrupted after the first Ctrl-C. */
  startMps: (probe: ProbeName) => Promise<SessionMpsStart>;
  /** Registers a synchronous killer for a forced exit; returns its removal. */
  onForcedExit: (kill: () => void) => () => void;
}

/** A probe's outcome with how its processes ended. */
export interface ProbeResult {
  outcome: ProbeOutcome;
  cleanup: Cleanup;
}

type Outcome<P extends ProbeName> = Extract<ProbeOutcome, { probe: P }>;
type Measured<P extends ProbeName> = Omit<
  Extract<Outcome<P>, { status: 'measured' }>,
  'probe' | 'mode' | 'limitMib' | 'status'
>;

/** Runs one probe (in each mode it has). */
export async function runProbe(name: ProbeName, deps: ProbeDeps): Promise<ProbeResult[]> {
  switch (name) {
    case 'memory':
      return [
        await session(deps, 'memory', 'timeslice', { mode: 'timeslice', limitMib: null }, (cast) => memory(cast, null)),
        await session(deps, 'memory', 'mps', { mode: 'mps', limitMib: null }, (cast) => memory(cast, null)),
        await session(deps, 'memory', 'mps', { mode: 'mps', limitMib: PROBE_SETTINGS.mpsMemLimitMib }, (cast) =>
          memory(cast, PROBE_SETTINGS.mpsMemLimitMib),
        ),
      ];
    case 'sm-cap':
      return [await session(deps, 'sm-cap', 'mps', { mode: 'mps' }, smCap)];
    case 'fault':
      return [
        await session(deps, 'fault', 'timeslice', { mode: 'timeslice' }, (cast) => fault(cast, null, deps.clock)),
        await session(deps, 'fault', 'mps', { mode: 'mps' }, (cast, daemon) => fault(cast, daemon, deps.clock)),
      ];
    case 'fault-in-process':
      return [await session(deps, 'fault-in-process', 'in-process', {}, faultInProcess)];
    case 'client-limit':
      return [await session(deps, 'client-limit', 'mps', { mode: 'mps' }, clientLimit)];
    case 'context':
      return [
        await session(deps, 'context', 'timeslice', { mode: 'timeslice' }, context),
        await session(deps, 'context', 'mps', { mode: 'mps' }, context),
      ];
    case 'slice':
      return [
        await session(deps, 'slice', 'timeslice', { mode: 'timeslice' }, slice),
        await session(deps, 'slice', 'mps', { mode: 'mps' }, slice),
      ];
    case 'default-stream':
      return [await session(deps, 'default-stream', 'in-process', {}, defaultStream)];
    case 'priority':
      return [await session(deps, 'priority', 'in-process', {}, priority)];
    case 'green-context':
      return [await greenContext(deps)];
  }
}

/**
 * Runs `body` with a cast of roles under `mode` (a fresh MPS daemon for 'mps'), turns a ProbeFailure
 * into a `failed` outcome, and stops everything it started, recording what was left running.
 */
async function session<P extends ProbeName>(
  deps: ProbeDeps,
  probe: P,
  mode: ProbeMode | 'in-process',
  keys: Record<string, unknown>,
  body: (cast: Cast, daemon: SessionDaemon | null) => Promise<Measured<P>>,
): Promise<ProbeResult> {
  const make = (rest: Record<string, unknown>) => ({ probe, ...keys, ...rest }) as unknown as ProbeOutcome;
  let daemon: SessionDaemon | null = null;
  if (mode === 'mps') {
    const started = await deps.startMps(probe);
    if (!started.ok)
      return {
        outcome: make({ status: 'skipped', reason: `the MPS daemon did not start: ${started.reason}` }),
        cleanup: { probe, mode, daemon: null, leftPids: [] },
      };
    daemon = started.daemon;
  }
  const env: Record<string, string> = { CUDA_VISIBLE_DEVICES: deps.visibleDevices, ...(daemon?.env ?? {}) };
  const cast = new Cast(deps.runner, deps.argv, env);
  // The daemon's own killer was registered when it started.
  const removeKiller = deps.onForcedExit(() => cast.killNow());
  let outcome: ProbeOutcome;
  let leftPids: number[] = [];
  let stopped: string | null = null;
  try {
    outcome = make({ ...(await body(cast, daemon)), status: 'measured' });
  } catch (error) {
    if (!(error instanceof ProbeFailure)) throw error;
    outcome = make({ status: 'failed', reason: error.message });
  } finally {
    // Runs on every path, an interrupt included: nothing a probe started may outlive it.
    leftPids = await cast.stopAll(PROBE_SETTINGS.stopTimeoutMs);
    removeKiller();
    stopped = daemon !== null ? await daemon.stop() : null;
  }
  return { outcome, cleanup: { probe, mode, daemon: stopped, leftPids } };
}

async function memory(cast: Cast, limitMib: number | null): Promise<Measured<'memory'>> {
  const mib = PROBE_SETTINGS.victimAllocMib;
  const victim = cast.start('victim', 'tenant');
  await ready(victim);
  const victimBefore = await alloc(victim, mib);
  const tries = limitMib !== null ? ['--try-mib', `${limitMib / 2},${(limitMib * 3) / 2}`] : [];
  const hog = cast.start(
    'hog',
    'hog',
    tries,
    limitMib !== null ? { CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: `0=${limitMib}M` } : {},
  );
  await ready(hog);
  const held = await expect(hog, ['result']);
  const first = await kernels(victim);
  const victimDuring = await alloc(victim, mib);
  const second = await kernels(victim);
  await hog.stop(PROBE_SETTINGS.stopTimeoutMs);
  const victimAfter = await alloc(victim, mib);
  return {
    victimBefore,
    hogTries: records(held.tries).map((t) => ({
      mib: num(t.mib),
      ok: t.ok === true,
      error: t.error ? text(t.error) : null,
    })),
    hogHeldMib: num(held.heldMib),
    hogError: held.error ? text(held.error) : null,
    victimDuring,
    victimKeptRunning: second.kernels > first.kernels,
    victimAfter,
  };
}

async function smCap(cast: Cast): Promise<Measured<'sm-cap'>> {
  const points = [];
  for (const pct of PROBE_SETTINGS.smCapPercentages) {
    const role = cast.start(`smcap-${pct}`, 'smcap', [], { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(pct) });
    const m = await expect(role, ['result']);
    points.push({ threadPercentage: pct, sms: num(m.sms), tflops: num(m.tflops) });
  }
  return { totalSms: points.find((p) => p.threadPercentage === 100)?.sms ?? 0, points };
}

async function fault(cast: Cast, daemon: SessionDaemon | null, clock: Clock): Promise<Measured<'fault'>> {
  const victims = [cast.start('victim-1', 'tenant'), cast.start('victim-2', 'tenant')];
  await ready(...victims);
  for (const v of victims) await kernels(v);
  const faulter = cast.start('faulter', 'faulter');
  await ready(faulter);
  const faulted = await faulter.next(['failed', 'result'], PROBE_SETTINGS.stepTimeoutMs);
  const faultAtUs = clock.monotonicUs();
  const faulterError =
    faulted.kind === 'message'
      ? faulted.message.error
        ? text(faulted.message.error)
        : null
      : faulted.kind === 'exited'
        ? lastLine(faulted.stderr)
        : 'no reply';
  const server = async () => {
    const pid = (await daemon?.serverPids())?.[0];
    return daemon !== null && pid !== undefined ? await daemon.ask(`get_server_status ${pid}`) : null;
  };
  const serverAfterFault = await server();
  const fates: Victim[] = [];
  for (const v of victims) fates.push(await fate(v));
  const recovery = await recover(cast, clock, faultAtUs);
  return { faulterError, victims: fates, serverAfterFault, serverAfterRecovery: await server(), recovery };
}

/** Whether a victim still answers after the fault, or how it failed. */
async function fate(v: RoleProcess): Promise<Victim> {
  v.send({ cmd: 'status' });
  const reply = await v.next(['status', 'failed'], 15_000);
  if (reply.kind === 'message' && reply.message.event === 'status') return { survived: true, error: null };
  return {
    survived: false,
    error:
      reply.kind === 'message'
        ? text(reply.message.error)
        : reply.kind === 'exited'
          ? lastLine(reply.stderr) || `exited with ${reply.exit.exitCode}`
          : 'stopped answering',
  };
}

/** A new client after the fault: how long until one is accepted (30 s at most), and after how many attempts. */
async function recover(cast: Cast, clock: Clock, faultAtUs: number): Promise<Measured<'fault'>['recovery']> {
  let attempts = 0;
  let lastError: string | null = null;
  let accepted = false;
  let acceptedAtUs = faultAtUs;
  while (!accepted && clock.monotonicUs() - faultAtUs < 30e6) {
    attempts += 1;
    const client = cast.start(`after-fault-${attempts}`, 'context');
    const reply = await client.next(['ready', 'failed'], 30_000);
    acceptedAtUs = clock.monotonicUs();
    accepted = reply.kind === 'message' && reply.message.event === 'ready';
    if (!accepted)
      lastError =
        reply.kind === 'message'
          ? text(reply.message.error)
          : reply.kind === 'exited'
            ? lastLine(reply.stderr)
            : 'no reply within 30 s';
    await client.stop(PROBE_SETTINGS.stopTimeoutMs);
    if (!accepted) await clock.sleep(200);
  }
  // Until the accepted client said ready (or the last refusal), not counting its stop.
  const afterMs = (acceptedAtUs - faultAtUs) / 1000;
  return { accepted, afterMs, attempts, lastError };
}

/** Tenants of one process (threads, streams) while another thread of it makes an illegal address. */
async function faultInProcess(cast: Cast): Promise<Measured<'fault-in-process'>> {
  const role = cast.start('infault', 'infault', ['--tenants', String(PROBE_SETTINGS.inProcessTenants)]);
  const m = await expect(role, ['result']);
  return {
    faulterError: m.faulterError ? text(m.faulterError) : null,
    victims: records(m.victims).map((v) => ({ survived: v.survived === true, error: v.error ? text(v.error) : null })),
  };
}

async function clientLimit(cast: Cast): Promise<Measured<'client-limit'>> {
  let accepted = 0;
  let firstError: string | null = null;
  for (let i = 1; i <= PROBE_SETTINGS.maxClients && firstError === null; i++) {
    const reply = await cast.start(`client-${i}`, 'context').next(['ready', 'failed'], 60_000);
    if (reply.kind === 'message' && reply.message.event === 'ready') accepted += 1;
    else
      firstError =
        reply.kind === 'message'
          ? text(reply.message.error)
          : reply.kind === 'exited'
            ? lastLine(reply.stderr) || `exited with ${reply.exit.exitCode}`
            : 'no reply within 60 s';
  }
  return { tried: accepted + (firstError !== null ? 1 : 0), accepted, firstError };
}

async function context(cast: Cast): Promise<Measured<'context'>> {
  const initMs: number[] = [];
  const createMs: number[] = [];
  const freeMib: number[] = [];
  let totalMib = 0;
  for (let i = 1; i <= PROBE_SETTINGS.contextClients; i++) {
    const m = await expect(cast.start(`context-${i}`, 'context'), ['ready']);
    initMs.push(num(m.initMs));
    createMs.push(num(m.createMs));
    freeMib.push(num(m.freeMib));
    totalMib = num(m.totalMib);
  }
  return { initMs, createMs, freeMib, totalMib };
}

async function slice(cast: Cast): Promise<Measured<'slice'>> {
  const { periodMs, requests } = PROBE_SETTINGS.slice;
  const points = [];
  for (const k of PROBE_SETTINGS.sliceCotenants) {
    const tenants = Array.from({ length: k }, (_, i) => cast.start(`cotenant-${k}-${i + 1}`, 'tenant'));
    const probe = cast.start(`latency-${k}`, 'latency', [
      '--period-ms',
      String(periodMs),
      '--requests',
      String(requests),
    ]);
    await ready(...tenants, probe);
    probe.send({ cmd: 'go' });
    points.push({ cotenants: k, ...series(await expect(probe, ['result'])) });
    await Promise.all([probe, ...tenants].map((r) => r.stop(PROBE_SETTINGS.stopTimeoutMs))); // a leak found here is reported again by the session's stopAll
  }
  return { points };
}

async function defaultStream(cast: Cast): Promise<Measured<'default-stream'>> {
  const m = await expect(cast.start('trap', 'trap', ['--spin-us', '200', '--iterations', '200']), ['result']);
  return {
    spinUs: num(m.spinUs),
    runs: records(m.runs).map((r) => ({
      streamKind: r.streamKind === 'blocking' ? 'blocking' : 'pytorch',
      streams: num(r.streams),
      strayCopy: r.strayCopy === true,
      concurrency: num(r.concurrency),
    })),
  };
}

function criticalFlags(): string[] {
  const c = PROBE_SETTINGS.critical;
  return ['--period-ms', String(c.periodMs), '--requests', String(c.requests), '--spin-us', String(c.spinUs)];
}

async function priority(cast: Cast): Promise<Measured<'priority'>> {
  const m = await expect(cast.start('priority', 'priority', criticalFlags()), ['result']);
  return {
    runs: records(m.runs).map((r) => ({
      priority: r.priority === 'high' ? 'high' : 'normal',
      backgroundBlockUsPerS: num(r.backgroundBlockUsPerS),
      ...series(r, m),
    })),
  };
}

/**
 * A latency-critical stream beside a background that fills every SM: plain streams, the background
 * confined to a green context of all but `criticalSms` SMs, and the same split as MPS thread
 * percentages (background client at (SMs − criticalSms)/SMs, critical client at 100%).
 */
async function greenContext(deps: ProbeDeps): Promise<ProbeResult> {
  const inProcess = await session(deps, 'green-context', 'in-process', {}, async (cast) => {
    const role = cast.start('greenctx', 'greenctx', [
      ...criticalFlags(),
      '--critical-sms',
      String(PROBE_SETTINGS.criticalSms),
    ]);
    const reply = await role.next(['ready', 'failed'], PROBE_SETTINGS.readyTimeoutMs);
    if (reply.kind === 'message' && reply.message.event === 'failed')
      throw new ProbeFailure(`green contexts are not available here: ${text(reply.message.error)}`);
    const m = await expect(role, ['result']);
    return {
      totalSms: num(m.sms),
      criticalSms: num(m.criticalSms),
      runs: records(m.runs).map((r) => ({
        arm: r.arm === 'green' ? ('green' as const) : ('streams' as const),
        backgroundSms: num(r.backgroundSms),
        backgroundBlockUsPerS: num(r.backgroundBlockUsPerS),
        ...series(r, m),
      })),
      mpsArm: null,
    };
  });
  const measured = inProcess.outcome;
  if (measured.probe !== 'green-context' || measured.status !== 'measured') {
    // No green contexts (PyTorch < 2.10, a driver before 12.8): skipped, with PyTorch's own words.
    if (measured.status === 'failed' && measured.reason.startsWith('green contexts are not available'))
      return { ...inProcess, outcome: { probe: 'green-context', status: 'skipped', reason: measured.reason } };
    return inProcess;
  }
  const { totalSms, criticalSms } = measured;
  const backgroundPct = Math.round((100 * (totalSms - criticalSms)) / totalSms);
  const c = PROBE_SETTINGS.critical;
  const viaMps = await session(deps, 'green-context', 'mps', {}, async (cast) => {
    const blocks = totalSms * 32;
    const background = cast.start(
      'background',
      'tenant',
      ['--blocks', String(blocks), '--spin-us', String(c.spinUs), '--batch', '3'],
      { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(backgroundPct) },
    );
    const critical = cast.start('critical', 'latency', [
      '--period-ms',
      String(c.periodMs),
      '--requests',
      String(c.requests),
    ]);
    await ready(background, critical);
    const before = await kernels(background);
    critical.send({ cmd: 'go' });
    const result = await expect(critical, ['result']);
    const after = await kernels(background);
    return {
      totalSms,
      criticalSms,
      runs: [
        {
          arm: 'mps' as const,
          backgroundSms: Math.round((totalSms * backgroundPct) / 100),
          backgroundBlockUsPerS:
            ((after.kernels - before.kernels) * blocks * c.spinUs) / ((after.atUs - before.atUs) / 1e6),
          ...series(result),
        },
      ],
      mpsArm: null,
    };
  });
  const mps = viaMps.outcome.probe === 'green-context' ? viaMps.outcome : null;
  return {
    outcome: {
      ...measured,
      runs: [...measured.runs, ...(mps?.status === 'measured' ? mps.runs : [])],
      mpsArm: mps === null || mps.status === 'measured' ? null : `${mps.status}: ${mps.reason}`,
    },
    cleanup: {
      ...inProcess.cleanup,
      daemon: viaMps.cleanup.daemon,
      leftPids: [...inProcess.cleanup.leftPids, ...viaMps.cleanup.leftPids],
    },
  };
}
