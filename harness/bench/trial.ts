/**
 * One trial: the run command released to the arm's clients at one moment, their results collected
 * and checked (plausible, overlapping windows), or how the trial failed, as the run records it.
 */
import type { Clock } from '../core/clock.js';
import { type Sampler, tagSamples } from '../system/nvidia/sampler.js';
import type { ClientReply, WorkloadClient } from '../workload/client.js';
import type { Release } from '../workload/group.js';
import { type ResultMessage, type RunCommand, runCommandOf, type TenantResult } from '../workload/protocol.js';
import { releaseLeadMs } from '../workload/release.js';
import { implausibleResult, overlap, overlapShortfall } from '../workload/result-validity.js';
import type { Variant } from '../workload/spec.js';
import { summarizeLatencies } from './analysis/measures.js';
import { loopCheckMs, type PlannedTrial } from './comparisons.js';
import { clientsGroup } from './pool/processes.js';
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
  const count = planned.arm.clients.length;
  // In-process tenancy: one run command to the one process, naming the arm's tenants; it answers for each.
  // The plain process (the alone arm) has no tenants.
  const tenants =
    planned.comparison.tenants !== undefined && !planned.arm.plain ? planned.arm.clients.map((a) => a.client) : null;
  const command = (startAtUs: number, variant: Variant, named: number[] | null) =>
    runCommandOf(planned.id, startAtUs, work, variant, count, null, named, check);
  const releases = (startAtUs: number): Array<Release<RunCommand>> =>
    tenants !== null
      ? [{ member: 0, command: command(startAtUs, planned.arm.clients[0]?.variant ?? { streams: 1 }, tenants) }]
      : planned.arm.clients.map((arm) => ({ member: arm.client, command: command(startAtUs, arm.variant, null) }));
  const window = await clientsGroup(clients, clock).window({ leadMs, releases, timeoutMs }, signal);
  if (window.status === 'lost') {
    const { member, label, reply } = window;
    const failed =
      reply.kind === 'malformed'
        ? { kind: 'failed' as const, reason: `${label} ${reply.problem}`, exitCode: null }
        : reply;
    return failure(deps, planned, startedAt, failed, member, clients, 'window', timeoutMs);
  }
  const { startAtUs, receivedUs } = window;
  const results =
    tenants !== null
      ? tenantResults(planned, clients[0] as WorkloadClient, window.results[0] as ResultMessage)
      : planned.arm.clients.map((arm, i) =>
          clientResult(arm, (clients[arm.client] as WorkloadClient).pid, window.results[i] as ResultMessage),
        );
  return checkedTrial(deps, planned, startedAt, startAtUs, receivedUs, results);
}

/** An in-process comparison's one result as one per tenant (the member checked it answers for each one named). */
function tenantResults(planned: PlannedTrial, client: WorkloadClient, message: ResultMessage): ClientResult[] {
  const byTenant = new Map((message.tenants ?? []).map((t) => [t.tenant, t]));
  return planned.arm.clients.map((arm) => clientResult(arm, client.pid, byTenant.get(arm.client) as TenantResult));
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
