/**
 * One trial: the run command released to the arm's clients at one moment, their results collected
 * and checked (plausible, overlapping windows), or how the trial failed, as the run records it.
 */
import type { Clock } from '../core/clock.js';
import { type Sampler, tagSamples } from '../system/nvidia/sampler.js';
import type { ClientReply, WorkloadClient } from '../workload/client.js';
import { type ResultMessage, runCommand, type TenantResult } from '../workload/protocol.js';
import { releaseLeadMs } from '../workload/release.js';
import { implausibleResult, overlap, overlapShortfall } from '../workload/result-checks.js';
import { summarizeLatencies } from './analysis/measures.js';
import { loopCheckMs, type PlannedTrial } from './plan.js';
import { releaseCommands } from './pool/processes.js';
import type { Arm, ClientResult, Run, Trial } from './record/schema.js';

export interface TrialDeps {
  config: Run['config'];
  clock: Clock;
  signal: AbortSignal;
  sampler: Pick<Sampler, 'samples'>;
}

export async function runTrial(deps: TrialDeps, planned: PlannedTrial, clients: WorkloadClient[]): Promise<Trial> {
  const { clock, signal } = deps;
  const config = deps.config;
  const startedAt = clock.nowIso();
  const work = planned.arm.work;
  const leadMs = releaseLeadMs(config.releaseLeadMs, planned.arm.clients.length);
  const check = loopCheckMs(planned);
  const timeoutMs =
    (work.kind === 'fixed-duration' ? work.durationMs : 0) + leadMs + (check ?? 0) + config.timeouts.trialMs;
  const startAtUs = clock.monotonicUs() + leadMs * 1000;
  if (planned.comparison.tenants !== undefined)
    return runTenantsTrial(deps, planned, clients[0] as WorkloadClient, startAtUs, timeoutMs, startedAt, check);
  const released = planned.arm.clients.map((arm) => ({
    arm,
    client: clients[arm.client] as WorkloadClient,
    command: runCommand(planned.id, startAtUs, work, arm.variant, planned.arm.clients.length, null, null, check),
  }));
  const replies = await releaseCommands(released, planned.id, timeoutMs, signal);
  const receivedUs = clock.monotonicUs();
  const bad = replies.findIndex((r) => r.kind !== 'message');
  if (bad !== -1) {
    return failure(
      deps,
      planned,
      startedAt,
      replies[bad] as ClientReply<unknown>,
      released[bad]?.arm.client ?? null,
      clients,
      'window',
      timeoutMs,
    );
  }
  const results: ClientResult[] = replies.map((reply, i) => {
    const message = (reply as Extract<typeof reply, { kind: 'message' }>).message;
    const { arm, client } = released[i] as (typeof released)[number];
    return clientResult(arm, client.pid, message);
  });
  return checkedTrial(deps, planned, startedAt, startAtUs, receivedUs, results);
}

/** One trial of an in-process comparison: one run command naming the arm's tenants, one result per tenant. */
async function runTenantsTrial(
  deps: TrialDeps,
  planned: PlannedTrial,
  client: WorkloadClient,
  startAtUs: number,
  timeoutMs: number,
  startedAt: string,
  check: number | null,
): Promise<Trial> {
  const { clock, signal } = deps;
  const work = planned.arm.work;
  const tenants = planned.arm.clients.map((a) => a.client);
  const variant = planned.arm.clients[0]?.variant ?? { streams: 1 };
  const command = runCommand(planned.id, startAtUs, work, variant, tenants.length, null, tenants, check);
  const [reply] = (await releaseCommands([{ client, command }], planned.id, timeoutMs, signal)) as [
    ClientReply<ResultMessage>,
  ];
  const receivedUs = clock.monotonicUs();
  if (reply.kind !== 'message') return failure(deps, planned, startedAt, reply, 0, [client], 'window', timeoutMs);
  const byTenant = new Map((reply.message.tenants ?? []).map((t) => [t.tenant, t]));
  const missing = tenants.filter((k) => !byTenant.has(k));
  if (missing.length > 0 || byTenant.size !== tenants.length) {
    const reason = `${client.label} answered for tenants [${[...byTenant.keys()].join(', ')}] instead of [${tenants.join(', ')}]`;
    return failure(
      deps,
      planned,
      startedAt,
      { kind: 'failed', reason, exitCode: null },
      0,
      [client],
      'window',
      timeoutMs,
    );
  }
  const results = planned.arm.clients.map((arm) =>
    clientResult(arm, client.pid, byTenant.get(arm.client) as TenantResult),
  );
  return checkedTrial(deps, planned, startedAt, startAtUs, receivedUs, results);
}

/** A trial's results through the checks of a result (plausible, overlapping windows): ok or invalid. */
function checkedTrial(
  deps: TrialDeps,
  planned: PlannedTrial,
  startedAt: string,
  startAtUs: number,
  receivedUs: number,
  results: ClientResult[],
): Trial {
  const config = deps.config;
  const work = planned.arm.work;
  tagSamples(
    deps.sampler.samples,
    planned.id,
    Math.min(...results.map((r) => r.windowStartUs)),
    Math.max(...results.map((r) => r.windowEndUs)),
  );
  const base = trialBase(deps, planned, startedAt);
  const shared = results.length > 1 ? overlap(results) : null;
  const implausible = results.map((r) => implausibleResult(r, startAtUs, receivedUs, work)).find((why) => why !== null);
  if (implausible) return { ...base, status: 'invalid', reason: implausible, clients: results, overlap: shared };
  const short = shared && overlapShortfall(shared, config.minOverlap);
  if (short) return { ...base, status: 'invalid', reason: short, clients: results, overlap: shared };
  return { ...base, status: 'ok', clients: results, overlap: shared };
}

export function failure(
  deps: Pick<TrialDeps, 'clock'>,
  planned: PlannedTrial,
  startedAt: string,
  reply: ClientReply<unknown>,
  client: number | null,
  clients: WorkloadClient[],
  phase: 'ready' | 'window',
  timeoutMs: number,
): Trial {
  const base = trialBase(deps, planned, startedAt);
  const label = client !== null ? (clients[client]?.label ?? `client ${client}`) : 'a client';
  if (reply.kind === 'failed') {
    return {
      ...base,
      status: 'failed',
      reason: reply.reason,
      client,
      exitCode: reply.exitCode,
      stderrTail: client !== null ? (clients[client]?.stderrTail().slice(-4000) ?? '') : '',
    };
  }
  const what = phase === 'ready' ? 'did not say ready' : 'sent no result';
  return {
    ...base,
    status: 'timeout',
    phase,
    reason: `${label} ${what} within ${Math.round(timeoutMs / 1000)} s`,
    client,
  };
}

export function trialBase(deps: Pick<TrialDeps, 'clock'>, planned: PlannedTrial, startedAt: string) {
  return {
    id: planned.id,
    comparisonId: planned.comparison.id,
    arm: planned.arm.id,
    round: planned.round,
    startedAt,
    finishedAt: deps.clock.nowIso(),
  };
}

/** One client's (or tenant's) result as the run records it. */
function clientResult(
  arm: Arm['clients'][number],
  pid: number | null,
  m: Pick<
    TenantResult,
    | 'windowStartUs'
    | 'windowEndUs'
    | 'iterations'
    | 'gpuMs'
    | 'latenciesMs'
    | 'chunkIterations'
    | 'stepHostUs'
    | 'loopOverhead'
  >,
): ClientResult {
  return {
    client: arm.client,
    pid,
    variant: arm.variant,
    windowStartUs: m.windowStartUs,
    windowEndUs: m.windowEndUs,
    iterations: m.iterations,
    gpuMs: m.gpuMs,
    latency: summarizeLatencies(m.latenciesMs),
    chunkIterations: m.chunkIterations,
    ...(m.stepHostUs !== undefined ? { stepHostUs: m.stepHostUs } : {}),
    ...(m.loopOverhead !== undefined ? { loopOverhead: m.loopOverhead } : {}),
  };
}
