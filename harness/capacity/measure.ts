/** One point of a capacity run: its clients started, a rate search of open-loop steps, its clients stopped. */
import type { AppDeps } from '../core/deps.js';
import { Interrupted } from '../core/errors.js';
import { runRateSearch, type SearchOutcome, type StepOutcome } from '../experiment/rate-search.js';
import type { Reaper } from '../system/proc/reaper.js';
import { openLoopCheck, WorkloadGroup } from '../workload/group.js';
import { type ClientStep, encodeLatencies, type Step } from '../workload/open-loop.js';
import {
  GREEN_ENV,
  type ReadyMessage,
  type ResultMessage,
  type RunCommand,
  runCommandOf,
  TENANTS_ENV,
  type TenantResult,
} from '../workload/protocol.js';
import { ProtocolMember } from '../workload/protocol-member.js';
import { RELEASE_LEAD_MS, releaseLeadMs } from '../workload/release.js';
import { analyzeStep } from '../workload/verdicts.js';
import type { CapacityOptions } from './options.js';
import { stepLine } from './progress.js';
import type { CapacityMode, CapacityPoint, CapacityRun } from './record.js';
import { capacityStepMs } from './step-window.js';

/**
 * One mode and client count: start the clients, search the rate, stop them; the point is saved after
 * each step, and a line says how the step went. A signal marks the point interrupted (its steps stand).
 */
export async function measurePoint(
  mode: CapacityMode,
  count: number,
  env: Record<string, string>,
  options: CapacityOptions,
  deps: AppDeps,
  reaper: Reaper,
  signal: AbortSignal,
  run: CapacityRun,
  save: () => Promise<void>,
): Promise<CapacityPoint> {
  const clientSpan = {
    startedUs: deps.clock.monotonicUs(),
    readyUs: null as number | null,
    endUs: null as number | null,
  };
  const point: CapacityPoint = { mode, clients: count, clientSpan, status: 'measured', steps: [] };
  run.points.push(point);
  const { group, members, tenants } = startClients(mode, count, env, options, deps, reaper);
  const interrupted = (signal: string) => {
    const n = point.steps.length;
    const when = n === 0 ? 'before its first step' : `after ${n} step${n === 1 ? '' : 's'}, before its search ended`;
    Object.assign(point, { status: 'interrupted' as const, reason: `${signal} came ${when}` });
  };
  try {
    const ready = await group.ready(options.readyTimeoutMs, signal);
    if (ready.status === 'ready') clientSpan.readyUs = ready.readyUs;
    const notReady = notReadyOutcome(ready, members, tenants, mode);
    if (notReady !== null) return Object.assign(point, notReady);
    const searched = await searchPoint(point, group, tenants, options, deps, signal, run, save);
    if (searched.status === 'failed') Object.assign(point, { status: 'failed' as const, reason: searched.reason });
    if (searched.status === 'interrupted') interrupted(String(signal.reason ?? 'a signal'));
    return point;
  } catch (error) {
    if (error instanceof Interrupted) interrupted(error.signal);
    throw error;
  } finally {
    await group.stop(10_000);
    clientSpan.endUs = deps.clock.monotonicUs();
    await save();
  }
}

/**
 * A point's clients, started: streams and green run one process of `count` tenants (tenant k is client
 * k), as bench runs them; the other modes a process per client.
 */
function startClients(
  mode: CapacityMode,
  count: number,
  env: Record<string, string>,
  options: CapacityOptions,
  deps: AppDeps,
  reaper: Reaper,
): { group: CapacityGroup; members: ProtocolMember[]; tenants: number | null } {
  const { workload } = options.settings;
  const tenants = mode === 'streams' || mode === 'green' ? count : null;
  const tenantEnv =
    tenants === null ? {} : { [TENANTS_ENV]: String(tenants), ...(mode === 'green' ? { [GREEN_ENV]: 'even' } : {}) };
  const members = Array.from({ length: tenants === null ? count : 1 }, (_, i) =>
    ProtocolMember.process(
      deps.runner,
      i,
      tenants === null
        ? `workload "${workload.name}" (client ${i})`
        : `workload "${workload.name}" (${tenants} tenants)`,
      workload.argv,
      { ...env, ...tenantEnv, GPUSHARE_CLIENT_INDEX: String(i), PYTHONUNBUFFERED: '1' },
    ),
  );
  return { group: WorkloadGroup.start(members, deps.clock, reaper), members, tenants };
}

/** Why a point's clients cannot be searched: skipped (this machine or protocol cannot run it) or failed; null: they can. */
function notReadyOutcome(
  ready: Awaited<ReturnType<CapacityGroup['ready']>>,
  members: readonly ProtocolMember[],
  tenants: number | null,
  mode: CapacityMode,
): { status: 'skipped' | 'failed'; reason: string } | null {
  const skip = skipReason(ready, tenants, mode);
  if (skip !== null) return { status: 'skipped', reason: skip };
  if (ready.status === 'not-ready') {
    const why = ready.reply.kind === 'failed' ? ready.reply.reason : 'it did not say ready in time';
    const tail = members[ready.member]?.stderrTail().trim().split('\n').filter(Boolean).at(-1) ?? '';
    const count = tenants ?? members.length;
    return {
      status: 'failed',
      reason: `client ${ready.member} of ${count} never became ready: ${why}${tail ? ` (${tail.slice(0, 300)})` : ''}`,
    };
  }
  if (ready.messages.some((m) => m.protocol < 2))
    return { status: 'failed', reason: 'the workload speaks protocol version 1, which has no open-loop load' };
  return null;
}

/** The rate search of a point whose clients are ready: a step at each rate, saved, with its progress line. */
async function searchPoint(
  point: CapacityPoint,
  group: CapacityGroup,
  tenants: number | null,
  options: CapacityOptions,
  deps: AppDeps,
  signal: AbortSignal,
  run: CapacityRun,
  save: () => Promise<void>,
): Promise<SearchOutcome> {
  const { settings } = options;
  const { mode, clients: count } = point;
  // Four halvings below the start at most: lower rates only stretch the windows.
  const policy = {
    startQps: settings.startQps * count,
    tolerance: settings.tolerance,
    maxSteps: settings.maxSteps,
    minQps: (settings.startQps * count) / 16,
  };
  // Points not begun yet may each take every step: the ETA is an upper bound.
  const pointsAfter = settings.modes.length * settings.clientCounts.length - run.points.length;
  let stepsMs = 0;
  let startedMs = 0;
  return runRateSearch({
    policy,
    steps: point.steps,
    step: async (rate, index): Promise<StepOutcome<Step>> => {
      startedMs = deps.terminal.nowMs();
      const step = await runStep(group, tenants, rate, `${mode}@${count}#${index}`, options, signal);
      return typeof step === 'string' ? { status: 'failed', reason: step } : { status: 'measured', step };
    },
    verdicts: (steps) => steps.map((s) => analyzeStep(s, run.settings.sloP99Ms)),
    onStep: async ({ verdict, next }) => {
      await save();
      stepsMs += deps.terminal.nowMs() - startedMs;
      const done = point.steps.length;
      const stepsLeft = (next !== null ? settings.maxSteps - done : 0) + pointsAfter * settings.maxSteps;
      const at = { mode, clients: count, step: done, maxSteps: settings.maxSteps, targetMs: settings.sloP99Ms };
      deps.err(stepLine({ ...at, stepsLeft, stepMs: stepsMs / done }, verdict));
    },
    signal,
  });
}

/**
 * Why the point is skipped, not failed: its first client said this machine cannot run it, or, for
 * tenants, it speaks a protocol without them. Null: it is not.
 */
function skipReason(ready: Awaited<ReturnType<CapacityGroup['ready']>>, tenants: number | null, mode: CapacityMode) {
  if (ready.status === 'not-ready')
    return ready.member === 0 && ready.reply.kind === 'failed' && ready.reply.unsupported ? ready.reply.reason : null;
  const first = ready.messages[0];
  return tenants !== null && first !== undefined && first.protocol < 3
    ? `the workload speaks protocol ${first.protocol}, which has no tenants: ${mode} needs protocol 3 (gpushare_protocol.serve speaks it)`
    : null;
}

type CapacityGroup = WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>;

/** One rate: every client open-loop at rate ÷ clients for the window; a string says why it failed. */
async function runStep(
  group: CapacityGroup,
  tenants: number | null,
  totalQps: number,
  trialId: string,
  options: CapacityOptions,
  signal: AbortSignal,
): Promise<Step | string> {
  const { settings } = options;
  const senders = tenants ?? group.members.length;
  const leadMs = releaseLeadMs(RELEASE_LEAD_MS, senders);
  // Long enough for STEP_REQUESTS requests (a p99 claim needs 299 with none over the target, 628 with 2),
  // short enough for every latency to be reported.
  const work = {
    kind: 'fixed-duration' as const,
    durationMs: capacityStepMs(totalQps, group.members.length, settings.windowMs),
  };
  const load = { kind: settings.load, qps: totalQps / senders };
  const named = tenants === null ? null : Array.from({ length: tenants }, (_, k) => k);
  // Each client's windows, or with tenants each tenant's in tenant order: what the checks and the step are made of.
  const windows = (results: readonly ResultMessage[]): Array<ResultMessage | TenantResult> =>
    results.flatMap(
      (m): Array<ResultMessage | TenantResult> =>
        named === null ? [m] : [...(m.tenants ?? [])].sort((a, b) => a.tenant - b.tenant),
    );
  const window = await group.window(
    {
      leadMs,
      releases: (startAtUs) =>
        group.members.map((_, member) => ({
          member,
          command: runCommandOf(trialId, startAtUs, work, { streams: 1 }, senders, load, named),
        })),
      timeoutMs: work.durationMs + leadMs + 60_000,
      check: openLoopCheck(work.durationMs, windows),
    },
    signal,
  );
  if (window.status === 'lost') {
    const { member, label, reply } = window;
    const at = `${totalQps.toFixed(0)} req/s`;
    if (reply.kind === 'malformed') return `${label} at ${at} ${reply.problem}`;
    return `client ${member} at ${at}: ${reply.kind === 'failed' ? reply.reason : 'no result in time'}`;
  }
  const steps: ClientStep[] = [];
  for (const m of windows(window.results)) {
    // Requests never served (a backlog past a second window) count as over the target.
    const dropped = m.droppedRequests ?? 0;
    steps.push({
      requests: m.latenciesMs.length + dropped,
      overTarget: m.latenciesMs.filter((ms) => ms > settings.sloP99Ms).length + dropped,
      unreported: Math.max(0, m.iterations - m.latenciesMs.length),
      scheduleLagMs: m.scheduleLagMs ?? 0,
      scheduleLagMaxMs: m.scheduleLagMaxMs ?? 0,
      histogram: encodeLatencies(m.latenciesMs),
    });
  }
  return { totalQps, windowS: work.durationMs / 1000, clients: steps, invalid: window.invalid };
}
