/** What a comparison's clients held on the GPU, from nvidia-smi's memory.used around their start, and why a comparison measured nothing. */
import { median } from 'simple-statistics';
import { LOOP_OVERHEAD_LIMIT_PCT, type LoopOverhead } from '../../workload/protocol.js';
import type { Comparison, Run } from '../record/schema.js';
import { armResults, type Round } from './rounds.js';
import type { LoopCheck, MemoryAccount, StepHostTime } from './types.js';

/**
 * MiB per client: memory.used while the comparison's trials ran (median of the samples inside its
 * windows) less the GPU's idle level before its clients held anything: the lowest sample from the last
 * one before their start to their ready line. Not the last sample before the start alone: the previous
 * comparison's processes are often still releasing their memory then (seen on the H100 sweep 3485bb,
 * where it hid a whole process's share). For processes switched from an earlier comparison's workload,
 * the idle level before that comparison's start; likewise for a comparison that kept a smaller one's
 * processes and added more (grownFrom). Context and workload together (and what earlier
 * workloads left after their release); under MPS it includes the server's share. A plain process (the
 * alone arm's) started after that idle level and still running holds memory too: its own rise is taken out
 * (plainRiseMiB). Null without samples on both sides.
 */
export function memoryPerClientMiB(
  run: Pick<Run, 'samples' | 'clientStarts' | 'plainProcesses'>,
  comparison: Comparison,
): number | null {
  const own = run.clientStarts?.find((s) => s.comparisonId === comparison.id);
  if (own === undefined) return null;
  // Switched or kept processes: the GPU was idle before the comparison that started them.
  const from = own.switchedFrom ?? own.grownFrom;
  const origin = run.clientStarts?.filter((s) => s.comparisonId === from && s.startedUs <= own.startedUs);
  const start = from === undefined ? own : origin?.at(-1);
  if (start === undefined) return null; // switched, but from a start this run did not record: no idle baseline
  const known = run.samples.filter((s) => s.memoryUsedMiB !== null);
  const lastBefore = known.filter((s) => s.tUs <= start.startedUs).at(-1);
  const starting = known.filter((s) => s.tUs > start.startedUs && s.tUs <= start.readyUs);
  const idle = [...(lastBefore ? [lastBefore] : []), ...starting].map((s) => s.memoryUsedMiB as number);
  const trialSamples = run.samples.filter(
    (s) => s.trialId?.startsWith(`${comparison.id}#`) && s.memoryUsedMiB !== null,
  );
  const during = trialSamples.map((s) => s.memoryUsedMiB as number);
  if (idle.length === 0 || during.length === 0) return null;
  // Plain processes started since that idle level and running while the trials ran.
  const firstUs = Math.min(...trialSamples.map((s) => s.tUs));
  const plains = (run.plainProcesses ?? []).filter(
    (p) => p.startedUs >= start.startedUs && p.readyUs <= firstUs && (p.endUs === undefined || p.endUs >= firstUs),
  );
  const plainMiB = plains.map((p) => plainRiseMiB(run, p));
  if (plainMiB.some((x) => x === null)) return null;
  const plainTotal = (plainMiB as number[]).reduce((a, b) => a + b, 0);
  return (median(during) - Math.min(...idle) - plainTotal) / comparison.clientEnv.length;
}

/** How long after a plain process said ready its memory is read, µs. */
const PLAIN_SETTLED_US = 1_000_000;

/**
 * What a plain process added to memory.used: the samples in the second after its ready line less the last
 * one before its start (the scheduler waits for a sample before it starts one). Null without both.
 */
function plainRiseMiB(run: Pick<Run, 'samples'>, p: NonNullable<Run['plainProcesses']>[number]): number | null {
  const known = run.samples.filter((s) => s.memoryUsedMiB !== null);
  const before = known.filter((s) => s.tUs <= p.startedUs).at(-1);
  const after = known.filter((s) => s.tUs >= p.readyUs && s.tUs <= p.readyUs + PLAIN_SETTLED_US);
  if (before === undefined || after.length === 0) return null;
  return median(after.map((s) => s.memoryUsedMiB as number)) - (before.memoryUsedMiB as number);
}

/**
 * Memory by its cause: nvidia-smi's rise per process (and per tenant), what each process's own
 * allocator held once ready (its ready line), and the difference, the context and runtime overhead a
 * process pays whatever its model. Null where the rise is unknown; the reservation parts are null
 * where a workload did not report it (protocol 1 and 2).
 */
export function memoryAccount(
  run: Pick<Run, 'samples' | 'clientStarts' | 'plainProcesses'>,
  comparison: Comparison,
): MemoryAccount | null {
  const perClient = memoryPerClientMiB(run, comparison);
  const start = run.clientStarts?.find((s) => s.comparisonId === comparison.id);
  if (perClient === null || start === undefined) return null;
  const tenants = comparison.clientEnv.length;
  const processes = start.processes ?? tenants;
  const risePerProcessMiB = (perClient * tenants) / processes;
  const reservedPerProcessMiB = start.memoryReservedMiB == null ? null : start.memoryReservedMiB / processes;
  return {
    processes,
    tenantsPerProcess: tenants / processes,
    risePerProcessMiB,
    risePerTenantMiB: perClient,
    reservedPerProcessMiB,
    graphPoolPerProcessMiB: start.graphPoolMiB == null ? null : start.graphPoolMiB / processes,
    // A rise below the reservation separates nothing (samples that missed the windows, a fake GPU): no overhead.
    overheadPerProcessMiB:
      reservedPerProcessMiB === null || risePerProcessMiB < reservedPerProcessMiB
        ? null
        : risePerProcessMiB - reservedPerProcessMiB,
    switchedFrom: start.switchedFrom ?? null,
  };
}

/** Host time per request's step() call, median over the arm's results (each a mean over its window), µs; null where not reported. */
export function stepHostTime(rounds: readonly Round[]): StepHostTime {
  const of = (arm: string) => {
    const values = armResults(rounds, arm).flatMap((r) => (r.stepHostUs !== undefined ? [r.stepHostUs] : []));
    return values.length > 0 ? median(values) : null;
  };
  return { soloUs: of('solo-c0'), contendedUs: of('contended') };
}

/** Why a comparison's rounds measured nothing: the first failed trial's reason (a client that never became ready). */
export function roundsFailure(rounds: readonly Round[]): string | null {
  for (const round of rounds)
    for (const t of round.trials.values()) if (t.status === 'failed' || t.status === 'timeout') return t.reason;
  return null;
}

/** Each process's check of the protocol's loop (see LOOP_CHECK_MS), in trial order, and whether one exceeds the limit. */
export function loopCheck(rounds: readonly Round[]): LoopCheck {
  const checks = rounds.flatMap((r) =>
    [...r.trials.values()].flatMap((t) =>
      t.status === 'ok' || t.status === 'invalid'
        ? t.clients.flatMap((x) =>
            x.loopOverhead !== undefined ? [{ client: x.client, arm: t.arm, overhead: x.loopOverhead }] : [],
          )
        : [],
    ),
  );
  const worstPct = checks.length > 0 ? Math.max(...checks.map((c) => c.overhead.overheadPct)) : null;
  return { checks, worstPct, flagged: checks.some(overLimit) };
}

/**
 * A check says the loop costs more than the limit only where its interval lies above it: every pair's
 * difference over LOOP_OVERHEAD_LIMIT_PCT (8 pairs: the median's 99.2% interval); a check of 4 pairs
 * (the runs of 2026-11-27 07:39 and before) has no interval, and its median decides.
 */
export function overLimit(check: { overhead: LoopOverhead }): boolean {
  const o = check.overhead;
  return (o.overheadPctLow ?? o.overheadPct) > LOOP_OVERHEAD_LIMIT_PCT;
}

/** The report's and the summary's words for a flagged loop check. */
export function loopCheckWarning(check: LoopCheck): string | null {
  const over = check.checks.filter(overLimit);
  const worst = over.reduce<(typeof over)[number] | null>(
    (a, b) => (a === null || b.overhead.overheadPct > a.overhead.overheadPct ? b : a),
    null,
  );
  if (worst === null) return null;
  const o = worst.overhead;
  const range =
    o.overheadPctLow !== undefined && o.overheadPctHigh !== undefined
      ? ` (every pair of its check ${o.overheadPctLow.toFixed(2)}–${o.overheadPctHigh.toFixed(2)}%)`
      : '';
  return `gpushare's protocol loop cost ${o.overheadPct.toFixed(2)}% of a request beyond a bare loop of the same step${range} (client ${worst.client}, over the ${LOOP_OVERHEAD_LIMIT_PCT}% limit): a slowdown here may be understated by about that much`;
}
