/**
 * `gpushare check`: a workload command taken once through everything a run asks of it (ready, a
 * timed window, fixed work on two streams, an open-loop window, exit), so that what is wrong is
 * said in one line before a long run, not after it.
 */
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import type { Reaper } from '../system/proc/reaper.js';
import type { WorkloadClient } from './client.js';
import { type CollectReply, WorkloadGroup } from './group.js';
import { type Load, type ReadyMessage, type ResultMessage, type RunCommand, runCommandOf } from './protocol.js';
import { ProtocolMember } from './protocol-member.js';
import { RELEASE_LEAD_MS } from './release.js';
import { implausibleResult } from './result-validity.js';
import type { Variant, Work } from './spec.js';

/** The timed window and the open-loop window of a check, ms. */
export const CHECK_WINDOW_MS = 200;
/** The fixed work of a check: iterations, on two streams (lanes 0 and 1). */
export const CHECK_ITERATIONS = 10;
const TWO_STREAMS: Variant = { streams: 2, pinned: true };
const ONE_STREAM: Variant = { streams: 1, pinned: true };

/** What `gpushare check` runs, and how long each step may take. */
export interface CheckSettings {
  /** The workload's command, exact (never given to a shell). */
  argv: readonly string[];
  /** Its environment besides what every workload gets: CUDA_VISIBLE_DEVICES, GPUSHARE_CLIENT_INDEX. */
  env: Record<string, string>;
  readyTimeoutMs: number;
  /** How long past its window (or for fixed work) a step may take to answer, ms. */
  trialTimeoutMs: number;
  exitTimeoutMs: number;
}

/** The steps of a check, in order. */
export type CheckStep = 'ready' | 'window' | 'fixed-work' | 'open-loop' | 'exit';

/** How a check ended: every step passed (with what each measured, for the line it prints), or the first that failed and why. */
export type CheckOutcome =
  | {
      status: 'passed';
      workload: string;
      protocol: number;
      device: string | null;
      /** From spawn to ready, ms. */
      readyMs: number;
      /** Iterations in the timed window of CHECK_WINDOW_MS. */
      windowIterations: number;
      /** GPU time of the fixed work (CHECK_ITERATIONS on two streams; on one for a run's own client), ms. */
      fixedWorkGpuMs: number;
      /** The open-loop window: its rate, requests served and dropped; null for a protocol-1 workload. */
      openLoop: { qps: number; served: number; dropped: number } | null;
    }
  | { status: 'failed'; step: CheckStep; reason: string };

const LABEL = 'the workload';
/** How long a workload that failed a step gets to exit before it is killed, ms. */
const FAILED_EXIT_MS = 1000;

/** Runs the check; a failure is an outcome, and the workload is stopped however it ended. */
export async function checkWorkload(
  runner: ProcessRunner,
  clock: Clock,
  settings: CheckSettings,
  reaper: Reaper,
  signal: AbortSignal,
): Promise<CheckOutcome> {
  const startedUs = clock.monotonicUs();
  const group = WorkloadGroup.start(
    [ProtocolMember.process(runner, 0, LABEL, settings.argv, settings.env)],
    clock,
    reaper,
  );
  let closed = false;
  try {
    const outcome = await checkSteps(group, settings, signal, startedUs, false);
    if (outcome.status === 'failed') return outcome;
    closed = true;
    const [ended] = await group.stop(settings.exitTimeoutMs);
    if (ended === 'killed')
      return failed(
        'exit',
        `${LABEL} did not exit within ${seconds(settings.exitTimeoutMs)} of the exit command and was killed`,
      );
    return outcome;
  } finally {
    // After a failure nothing more is asked of it: a moment to exit, then its process group is killed.
    if (!closed) await group.stop(Math.min(settings.exitTimeoutMs, FAILED_EXIT_MS));
  }
}

/**
 * The check of a run's own client, started at `startedUs` (a bench run's first client, before the run
 * takes it): its ready line, left for the run, then the same steps on one stream (the CUDA stream it
 * measures on: nothing is built that its siblings lack). Its exit is seen when its comparison ends.
 * The caller stops it after a failure.
 */
export function checkRunClient(
  client: WorkloadClient,
  clock: Clock,
  settings: Pick<CheckSettings, 'readyTimeoutMs' | 'trialTimeoutMs'>,
  signal: AbortSignal,
  startedUs: number,
): Promise<CheckOutcome> {
  // Its failures read as gpushare check's own: "the workload …".
  const label = client.label;
  client.label = LABEL;
  const group = WorkloadGroup.of([ProtocolMember.over(client, { peekReady: true })], clock);
  return checkSteps(group, settings, signal, startedUs, true).finally(() => {
    client.label = label;
  });
}

const failed = (step: CheckStep, reason: string): CheckOutcome => ({ status: 'failed', step, reason });

/** The steps up to the exit, on a group of one; for a run's own client (`own`), the fixed work on one stream. */
async function checkSteps(
  group: WorkloadGroup<RunCommand, ResultMessage, ReadyMessage>,
  settings: Pick<CheckSettings, 'readyTimeoutMs' | 'trialTimeoutMs'>,
  signal: AbortSignal,
  startedUs: number,
  own: boolean,
): Promise<CheckOutcome> {
  const ready = await group.ready(settings.readyTimeoutMs, signal);
  if (ready.status === 'not-ready')
    return failed('ready', replyText(ready.reply, `did not say ready within ${seconds(settings.readyTimeoutMs)}`));
  const readyMs = (ready.readyUs - startedUs) / 1000;
  const said = ready.messages[0] as ReadyMessage;
  const trial = async (id: string, work: Work, variant: Variant, load: Load | null = null) => {
    const windowMs = work.kind === 'fixed-duration' ? work.durationMs : 0;
    const window = await group.window(
      {
        leadMs: RELEASE_LEAD_MS,
        releases: (startAtUs) => [{ member: 0, command: runCommandOf(id, startAtUs, work, variant, 1, load) }],
        timeoutMs: windowMs + settings.trialTimeoutMs,
        check: ([result], startAtUs, receivedUs) => {
          const implausible = result && implausibleResult({ ...result, client: 0 }, startAtUs, receivedUs, work);
          return implausible ? implausible.replace(/^client 0 /, `${LABEL} `) : null;
        },
      },
      signal,
    );
    if (window.status === 'lost')
      return replyText(window.reply, `did not answer within ${seconds(windowMs + settings.trialTimeoutMs)}`);
    return window.invalid ?? (window.results[0] as ResultMessage);
  };
  const window = await trial('check/window', { kind: 'fixed-duration', durationMs: CHECK_WINDOW_MS }, ONE_STREAM);
  if (typeof window === 'string') return failed('window', window);
  const fixedWork = { kind: 'fixed-work' as const, iterations: CHECK_ITERATIONS };
  const fixed = await trial('check/fixed-work', fixedWork, own ? ONE_STREAM : TWO_STREAMS);
  if (typeof fixed === 'string') return failed('fixed-work', fixed);
  if (fixed.iterations !== CHECK_ITERATIONS)
    return failed(
      'fixed-work',
      `${LABEL} reported ${fixed.iterations} iterations of fixed work, asked for ${CHECK_ITERATIONS}`,
    );
  let openLoop: { qps: number; served: number; dropped: number } | null = null;
  if (said.protocol >= 2) {
    const qps = openLoopRate(window);
    const open = await trial('check/open-loop', { kind: 'fixed-duration', durationMs: CHECK_WINDOW_MS }, ONE_STREAM, {
      kind: 'constant',
      qps,
    });
    if (typeof open === 'string') return failed('open-loop', open);
    openLoop = { qps, served: open.iterations, dropped: open.droppedRequests ?? 0 };
  }
  return {
    status: 'passed',
    workload: said.workload,
    protocol: said.protocol,
    device: said.device ?? null,
    readyMs,
    windowIterations: window.iterations,
    fixedWorkGpuMs: fixed.gpuMs,
    openLoop,
  };
}

/** Half the closed-loop rate of the timed window, between 10 and 1000 requests per second: a load it should carry. */
export function openLoopRate(window: Pick<ResultMessage, 'iterations' | 'windowStartUs' | 'windowEndUs'>): number {
  const seconds = Math.max(window.windowEndUs - window.windowStartUs, 1) / 1e6;
  return Math.round(Math.min(1000, Math.max(10, window.iterations / seconds / 2)));
}

/** The outcome as the one line `gpushare check` prints. */
export function checkText(outcome: CheckOutcome): string {
  if (outcome.status === 'failed') return `check failed at ${outcome.step}: ${outcome.reason}`;
  const o = outcome;
  const open = o.openLoop
    ? `open loop at ${o.openLoop.qps} req/s: ${o.openLoop.served} requests served${o.openLoop.dropped > 0 ? `, ${o.openLoop.dropped} dropped` : ''}`
    : 'no open loop (protocol 1: gpushare capacity needs protocol 2)';
  return `check passed: "${o.workload}" (protocol ${o.protocol}${o.device ? `, ${o.device}` : ''}) ready in ${(o.readyMs / 1000).toFixed(1)} s; a ${CHECK_WINDOW_MS} ms window: ${o.windowIterations} iterations; fixed work: ${CHECK_ITERATIONS} iterations on 2 streams in ${o.fixedWorkGpuMs.toFixed(2)} ms of GPU time; ${open}; exited when asked`;
}

function replyText(reply: Exclude<CollectReply<unknown>, { kind: 'message' }>, timeout: string): string {
  if (reply.kind === 'malformed') return `${LABEL} ${reply.problem}`;
  return reply.kind === 'failed' ? reply.reason : `${LABEL} ${timeout}`;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
