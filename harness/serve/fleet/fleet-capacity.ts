/**
 * `capacity --serve --fleet`: the largest fleet of the file's kinds that keeps every server within the
 * SLO, per mode. First the baseline (each kind alone, as bench's fleet run measures it), then per mode a
 * search over the fleet's size (fleet-search.ts): each step runs the fleet of that size (fleet-size.ts:
 * the file's proportions, its rate scaled so the load per server stays the file's), a warm-up and
 * --rounds windows, and ends at once as over when a server's latency climbs without end. One MPS daemon
 * per mode; between steps only the servers that changed start or stop (fleet-servers.ts). The
 * generator's ceiling is measured once, after the first servers came up.
 */
import { perServer } from '../../load/traffic/schedule.js';
import { modeEnv } from '../copies.js';
import type { ServeDriver } from '../measure.js';
import type { ServeGroup, ServeRun, WindowStats } from '../record.js';
import { type RequestLine, retainRequests } from '../requests-log.js';
import type { Slo } from '../verdicts.js';
import { WARMUP_MAX_S, WARMUP_S, warmUp } from '../warmup.js';
import { windowStats } from '../window.js';
import type { FleetSearchMode, FleetStep, StepServerWindow, StepTotals } from './fleet-capacity-record.js';
import type { Fleet, FleetServer } from './fleet-file.js';
import { fleetSchedule } from './fleet-load.js';
import {
  fleetTotals,
  fleetWindow,
  keepRequests,
  measureCeilingOnce,
  measureFleet,
  serverWindow,
  threadCap,
} from './fleet-measure.js';
import type { FleetRecord } from './fleet-record.js';
import {
  climbPoints,
  climbsWithoutEnd,
  DEFAULT_REPLICATES,
  nextSize,
  type SizedStep,
  type StepWhy,
  stepVerdictOf,
} from './fleet-search.js';
import { FleetServers } from './fleet-servers.js';
import { fleetKinds, sizedFleet, sizeTop } from './fleet-size.js';

/** Distinct sizes a mode's search measures at most, and its steps at most (replicates and repeats included). */
export const SEARCH_MAX_SIZES = 12;
export const SEARCH_MAX_STEPS = 24;
/** What ends a warm-up early: not a failure, the step's latency climbing without end. */
const CLIMBING = '\u0000climbing';

type Window =
  | { windows: StepServerWindow[]; totals: StepTotals; stats: WindowStats }
  | { windows: null; problem: string };

/**
 * Whether a request line is of a step --resume measures again: a step of `mode` at or past the `kept`
 * steps saved (its warm-up or its rounds; steps carry no arm, the baseline's lines are 'dedicated').
 */
export function cutShort(mode: string, kept: number): (l: Pick<RequestLine, 'mode' | 'arm' | 'index'>) => boolean {
  return (l) => l.mode === mode && l.arm === null && l.index >= kept;
}

/** Measures the baseline, then each pending mode's search for the largest fleet at the SLO. */
export async function measureFleetCapacity(
  run: ServeRun,
  driver: ServeDriver,
  fleet: Fleet,
  schedule: Parameters<typeof measureFleet>[3],
): Promise<void> {
  // The baseline: bench's fleet run with no mode to measure (its requests file's count is the run's).
  const baseline = { ...run, groups: [] };
  await measureFleet(baseline, driver, fleet, schedule);
  if (baseline.requests !== undefined) run.requests = baseline.requests;
  const s = run.settings;
  const record = run.fleet as FleetRecord;
  record.search ??= { replicates: s.replicates ?? DEFAULT_REPLICATES, maxServers: s.maxServers ?? null, modes: [] };
  const search = record.search;
  const slo: Slo = { ttftP99Ms: s.sloTtftP99Ms, itlMaxMs: s.sloItlMaxMs };
  const rule = { minMs: s.warmupMs ?? WARMUP_S * 1000, maxMs: s.warmupMaxMs ?? WARMUP_MAX_S * 1000 };
  const nowMs = () => driver.clock.monotonicUs() / 1000;
  const set = { ...driver, settings: s };

  const ceilingOnce = measureCeilingOnce(run, driver, slo);

  for (const g of run.groups) {
    if (g.status !== 'pending') continue;
    if (driver.abort.aborted) throw driver.interrupted();
    await searchMode(g);
    await driver.save();
  }

  async function searchMode(g: ServeGroup): Promise<void> {
    // A mode an interrupt cut short goes on from its steps saved (each whole: a step is saved once
    // measured), not from its start: a step of a large fleet takes minutes.
    const kept = search.modes.find((m) => m.mode === g.mode)?.steps ?? [];
    // The requests of a step cut short go: it is measured again.
    const drop = cutShort(g.mode, kept.length);
    await retainRequests(run, driver.requests, (l) => !drop(l));
    const mode: FleetSearchMode = {
      mode: g.mode,
      top: sizeTop(fleet, g.mode, s.maxServers ?? null, driver.gpuMemoryMiB),
      steps: kept,
    };
    search.modes = [...search.modes.filter((m) => m.mode !== g.mode), mode];
    if (mode.top.servers < 1) {
      Object.assign(g, { status: 'failed', reason: `no fleet fits: ${mode.top.text}` });
      return;
    }
    let daemon: { stop(): Promise<string>; env: Record<string, string> } | null = null;
    if (g.mode === 'mps' || g.mode === 'mps-threads') {
      const up = await driver.startMps(`fleet-${g.mode}`);
      if (!up.ok) {
        Object.assign(g, { status: 'skipped', reason: `the MPS daemon did not start: ${up.reason}` });
        return;
      }
      daemon = up.daemon;
    }
    const servers = new FleetServers(set, g.mode);
    try {
      const policy = {
        start: Math.min(fleet.servers.length, mode.top.servers),
        top: mode.top.servers,
        replicates: search.replicates,
        maxSizes: SEARCH_MAX_SIZES,
        maxSteps: SEARCH_MAX_STEPS,
      };
      const view = (): SizedStep[] =>
        mode.steps.map((x) => ({ servers: x.servers, verdict: x.verdict, again: x.again }));
      for (let next = nextSize(view(), policy); next !== null; next = nextSize(view(), policy)) {
        if (driver.abort.aborted) throw driver.interrupted();
        const problem = await step(g, mode, servers, next, daemon?.env ?? {});
        if (problem !== null) {
          Object.assign(g, { status: 'failed', reason: problem });
          driver.progress(`  ${problem}`);
          return;
        }
        await driver.save();
      }
      g.status = 'measured';
    } finally {
      await servers.stopAll();
      run.warnings.push(...servers.warnings);
      await daemon?.stop();
    }
  }

  /** One step: the fleet of `next.servers` running, a warm-up, --rounds windows; its record appended, or why it failed. */
  async function step(
    g: ServeGroup,
    mode: FleetSearchMode,
    servers: FleetServers,
    next: { servers: number; why: StepWhy },
    daemonEnv: Record<string, string>,
  ): Promise<string | null> {
    const sized = sizedFleet(fleet, next.servers);
    const n = sized.servers.length;
    const envOf = (x: FleetServer) => modeEnv(g.mode, n, daemonEnv, threadCap(x).threadPct);
    driver.progress(`${g.mode}: ${n} servers (${next.why})`);
    const resized = await servers.resize(sized.servers, envOf);
    const record: FleetStep = {
      servers: n,
      why: next.why,
      again: next.why === 'again' ? mode.steps.length - 1 : null,
      counts: fleetKinds(sized).map((k) => ({ kind: k.server.kind, count: k.count })),
      fleet: sized.servers.map((x) => ({
        label: x.label,
        kind: x.kind,
        ratePerS: x.ratePerS ?? 0,
        threadPct: threadCap(x).threadPct,
      })),
      ratePerS: sized.servers.reduce((a, x) => a + (x.ratePerS ?? 0), 0),
      started: resized.started,
      stopped: resized.stopped,
      kept: resized.kept,
      warmupWindows: 0,
      windows: [],
      totals: [],
      verdict: 'unclear',
      earlyStop: null,
    };
    // A fleet of more than one whose servers do not all start, or stop answering, is too large for this GPU
    // (an engine short of memory refuses to start or dies): the step is over, with why, and the search goes
    // on below it. A single server that cannot run fails the mode.
    const tooLarge = async (why: string): Promise<string | null> => {
      if (n === 1) return why;
      Object.assign(record, { verdict: 'over', earlyStop: why });
      mode.steps.push(record);
      await servers.stopAll();
      driver.progress(`  ${n} servers: over (${why})`);
      return null;
    };
    if (resized.group === null) return tooLarge(`not every server started: ${resized.problem}`);
    g.env = envOf(sized.servers[0] as FleetServer);
    await ceilingOnce();
    const group = resized.group;
    // Every window of the step sends the same arrivals: each server's, in the group's member order.
    const indices = sized.servers.map((x) => x.index);
    const lists = perServer(fleetSchedule(sized, s.windowMs), indices);
    const arrivals = indices.map((index) => lists.get(index) ?? []);
    // The early stop's reading of the last window: each server's TTFT through it.
    let climb: string | null = null;

    const stepIndex = mode.steps.length;
    const window = async (durationMs: number, kind: 'warm-up' | 'step'): Promise<Window> => {
      const windowAtMs = Date.parse(driver.clock.nowIso());
      const outcome = await fleetWindow(group, arrivals, durationMs, s.requestTimeoutMs, driver.abort);
      if (outcome.results === null) return { windows: null, problem: outcome.problem };
      const windows = outcome.results.map((r, k) => {
        const x = sized.servers[k] as FleetServer;
        const w = windowStats([r], slo, { concurrency: null, ratePerS: x.ratePerS }, 0);
        return {
          ...serverWindow(x.index, r, slo, x.ratePerS ?? 0),
          sentPerS: w.sentPerS ?? 0,
          completedPerS: w.requestsPerS,
        };
      });
      climb = climbsWithoutEnd(
        outcome.results.map((r, k) => ({
          label: (sized.servers[k] as FleetServer).label,
          points: climbPoints(r, windows[k] as StepServerWindow),
        })),
      );
      // Each line tagged with its step's place in the mode (warm-up and rounds alike), so --resume can drop a
      // step cut short; the step's windows apart by windowAtMs. A warm-up window that shows the climb is kept
      // as the step's, so its lines are the step's.
      const kept = kind === 'warm-up' && climb !== null ? 'step' : kind;
      const tag = {
        mode: g.mode,
        copies: n,
        kind: kept,
        arm: null,
        index: stepIndex,
        ratePerS: record.ratePerS,
        windowAtMs,
      };
      await keepRequests(run, driver, tag, outcome.results, indices);
      const all = windowStats(outcome.results, slo, { concurrency: null, ratePerS: null }, 0);
      return {
        windows,
        // The fleet's window as one: what the warm-up's steady test reads.
        stats: all,
        totals: fleetTotals(all),
      };
    };

    // Warm-up until steady, not kept; a server whose latency climbs without end ends the step as over (that
    // window kept).
    const warmed = await warmUp(
      'step',
      rule,
      async () => {
        // Whole windows, as bench's fleet warm-up: a shorter one sends only its first seconds of arrivals.
        const w = await window(s.windowMs, 'warm-up');
        if (w.windows === null) return { stats: null, problem: w.problem };
        if (climb === null) {
          record.warmupWindows++;
          return { stats: w.stats, problem: null };
        }
        // The window that shows the climb is kept: its attainments say which servers broke, and how far.
        record.windows.push(w.windows);
        record.totals.push(w.totals);
        record.earlyStop = climb;
        return { stats: null, problem: CLIMBING };
      },
      nowMs,
    );
    if (warmed.warmup === null && warmed.problem !== CLIMBING) return tooLarge(`warm-up: ${warmed.problem}`);
    for (let r = 0; r < s.rounds && record.earlyStop === null; r++) {
      if (driver.abort.aborted) throw driver.interrupted();
      const w = await window(s.windowMs, 'step');
      if (w.windows === null) return tooLarge(`round ${r + 1}: ${w.problem}`);
      record.windows.push(w.windows);
      record.totals.push(w.totals);
      record.earlyStop = climb;
    }
    const previous = record.again === null ? [] : (mode.steps[record.again]?.windows ?? []);
    record.verdict =
      record.earlyStop !== null ? 'over' : stepVerdictOf(sized.servers, [...previous, ...record.windows]);
    mode.steps.push(record);
    driver.progress(
      `  ${n} servers: ${record.verdict}${record.earlyStop === null ? '' : ` (stopped early: ${record.earlyStop})`}`,
    );
    return null;
  }
}
