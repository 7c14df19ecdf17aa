/**
 * A fleet run's answer per mode: each server's SLO attainment (its requests' share within the TTFT SLO,
 * with a Wilson interval), the hot servers (the top fifth by rate) apart from the cold tail, the whole
 * GPU's goodput, and each kind's baseline attainment; a mode kept every server within the SLO only where
 * every server's interval lies at or above the target, and missed where one lies wholly below it.
 */
import { type Ceiling, ceilingOf } from '../analysis.js';
import type { ServeRun } from '../record.js';
import { ceilingCheck } from '../verdicts.js';
import type { StepTotals } from './fleet-capacity-record.js';
import type { FleetRecord, ServerWindow } from './fleet-record.js';
import { ATTAINMENT_TARGET, type Verdict, verdictOf } from './verdicts.js';

/** The hot servers: this share of the fleet, the highest rates first (at least one). */
export const HOT_SHARE = 0.2;

export interface ServerAttainment {
  index: number;
  label: string;
  kind: string;
  ratePerS: number;
  hot: boolean;
  requests: number;
  good: number;
  /** good ÷ requests and its interval; null without requests. */
  attainment: number | null;
  interval: [number, number] | null;
  verdict: Verdict;
  ttftP99Ms: number | null;
}

export interface FleetModeAnalysis {
  mode: string;
  status: string;
  reason: string | null;
  servers: ServerAttainment[];
  /** Good requests and output tokens per second of the whole fleet, over the kept windows. */
  goodPerS: number;
  tokensPerS: number;
  /** every server within the SLO, a server missed it, or undecided (intervals overlap the target). */
  verdict: 'every server within' | 'missed' | 'undecided' | 'not measured';
  /** Its windows' sent rates against the generator's ceiling; null where the run kept no totals (runs before them). */
  generator: GeneratorCheck | null;
}

/** A mode's windows against the generator's ceiling: how many, the highest rate sent, how many over it or unchecked. */
export interface GeneratorCheck {
  windows: number;
  sentPerS: number | null;
  over: number;
  /** Windows not checked: the run found no ceiling. */
  unverified: number;
}

export interface FleetAnalysis {
  target: number;
  hot: number[];
  baseline: Array<Omit<ServerAttainment, 'hot'> & { status: string; reason: string | null }>;
  modes: FleetModeAnalysis[];
  /** The generator's ceiling, against the modes' own windows (none measured: its rate null). */
  ceiling: Ceiling;
}

/**
 * The generator's ceiling against a fleet run's own windows, each the whole fleet's totals: bench's mode windows
 * and a search's step windows (a run has one or the other), so both analyses of a run read the same ceiling.
 */
export function fleetCeiling(run: ServeRun): Ceiling {
  const f = run.fleet;
  const totals = [
    ...(f?.windows ?? []).flatMap((m) => m.totals ?? []),
    ...(f?.search?.modes ?? []).flatMap((m) => m.steps.flatMap((x) => x.totals)),
  ];
  return ceilingOf(
    run,
    totals.map((t) => ({ e2e: { p50Ms: t.e2eP50Ms }, ttft: { p50Ms: t.ttftP50Ms } })),
  );
}

/** The whole fleet's window (or a step's mean of them) against the ceiling, by the rate it sent. */
export function totalsCheck(
  t: Pick<StepTotals, 'sentPerS' | 'completedPerS' | 'outputTokensPerS'>,
  ceiling: Ceiling,
): 'within' | 'over' | 'unverified' {
  return ceilingCheck(
    { sentPerS: t.sentPerS, requestsPerS: t.completedPerS, outputTokensPerS: t.outputTokensPerS },
    ceiling,
  );
}

/** Each window's whole-fleet sent rate against the ceiling. */
export function generatorCheck(totals: readonly StepTotals[], ceiling: Ceiling): GeneratorCheck {
  const checks = totals.map((t) => totalsCheck(t, ceiling));
  return {
    windows: totals.length,
    sentPerS: totals.length === 0 ? null : Math.max(...totals.map((t) => t.sentPerS)),
    over: checks.filter((c) => c === 'over').length,
    unverified: checks.filter((c) => c === 'unverified').length,
  };
}

/** One server over its windows. */
function attainment(server: FleetRecord['servers'][number], windows: readonly ServerWindow[], hot: boolean) {
  const requests = windows.reduce((n, w) => n + w.requests, 0);
  const good = windows.reduce((n, w) => n + w.good, 0);
  const p99s = windows.flatMap((w) => (w.ttftP99Ms === null ? [] : [w.ttftP99Ms]));
  return {
    index: server.index,
    label: server.label,
    kind: server.kind,
    ratePerS: server.ratePerS,
    hot,
    requests,
    good,
    ...verdictOf(good, requests),
    // The worst window's: a pooled p99 needs the requests file.
    ttftP99Ms: p99s.length === 0 ? null : Math.max(...p99s),
  };
}

/** The hot servers' indices: the top HOT_SHARE by rate (ties by index). */
export function hotServers(
  servers: ReadonlyArray<Pick<FleetRecord['servers'][number], 'index' | 'ratePerS'>>,
): number[] {
  const n = Math.max(1, Math.ceil(servers.length * HOT_SHARE));
  return [...servers]
    .sort((a, b) => b.ratePerS - a.ratePerS || a.index - b.index)
    .slice(0, n)
    .map((s) => s.index);
}

export function analyzeFleet(run: ServeRun): FleetAnalysis | null {
  const f = run.fleet;
  if (f === undefined) return null;
  const hot = hotServers(f.servers);
  const seconds = run.settings.windowMs / 1000;
  const ceiling = fleetCeiling(run);
  const modes = run.groups.map((g): FleetModeAnalysis => {
    const kept = f.windows.find((w) => w.mode === g.mode);
    const windows = kept?.windows ?? [];
    const servers = f.servers.map((s) =>
      attainment(
        s,
        windows.flatMap((w) => w.filter((x) => x.server === s.index)),
        hot.includes(s.index),
      ),
    );
    const good = servers.reduce((n, s) => n + s.good, 0);
    const tokens = windows.flat().reduce((n, w) => n + w.outputTokensPerS, 0);
    const measured = g.status === 'measured' && windows.length > 0;
    const verdict = !measured
      ? 'not measured'
      : servers.some((s) => s.verdict === 'missed')
        ? 'missed'
        : servers.every((s) => s.verdict === 'within')
          ? 'every server within'
          : 'undecided';
    return {
      mode: g.mode,
      status: g.status,
      reason: g.reason,
      servers,
      goodPerS: windows.length === 0 ? 0 : good / (windows.length * seconds),
      tokensPerS: windows.length === 0 ? 0 : tokens / windows.length,
      verdict,
      generator: kept?.totals === undefined ? null : generatorCheck(kept.totals, ceiling),
    };
  });
  const baseline = f.baseline.flatMap((b) => {
    const server = f.servers.find((s) => s.index === b.server);
    if (server === undefined) return [];
    const { hot: _, ...a } = attainment(server, b.windows, false);
    return [{ ...a, kind: b.kind, status: b.status, reason: b.reason }];
  });
  return { target: ATTAINMENT_TARGET, hot, baseline, modes, ceiling };
}
