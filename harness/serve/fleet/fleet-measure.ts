/**
 * `bench --serve --fleet`: a heterogeneous fleet of servers, each with its own command, memory share and
 * open-loop traffic (the fleet's schedule: every window sends the same arrivals, so modes compare on
 * equal traffic). First the baseline: each kind's first server alone (time-sliced, nothing beside it)
 * with the arrivals that server gets in the fleet; then, per mode, every server started one at a time
 * (an MPS daemon per mode; the generator's own ceiling measured once the first mode's servers are up),
 * a warm-up until steady, and --rounds windows, each server's requests, good requests and TTFT kept per
 * window, and the whole fleet's totals (its sent rate, checked against the ceiling).
 */

import type { LoadResult } from '../../load/run.js';
import type { TimedRequest } from '../../load/schedule.js';
import { type Arrival, perServer } from '../../load/traffic/schedule.js';
import { gpuProcesses } from '../../system/nvidia/gpu-processes.js';
import { WorkloadGroup } from '../../workload/group.js';
import { measureCeiling, runCeilingOptions } from '../ceiling.js';
import type { Copies, CopyGroup, MemberPlan } from '../copies.js';
import { attachedMembers, fillCommand, modeEnv, startMembers } from '../copies.js';
import type { ServeDriver } from '../measure.js';
import { type GroupMode, IN_PROCESS, type ServeGroup, type ServeRun, type WindowStats } from '../record.js';
import { appendRequests, type RequestLine, retainRequests, type WindowTag, windowLines } from '../requests-log.js';
import type { ServerMember } from '../server-member.js';
import { nothingMeasured, type Slo } from '../verdicts.js';
import { WARMUP_MAX_S, WARMUP_S, type Warmup, warmUp, warmupWarning } from '../warmup.js';
import { windowStats } from '../window.js';
import type { StepTotals } from './fleet-capacity-record.js';
import type { Fleet } from './fleet-file.js';
import { preCheckFleet } from './fleet-fit.js';
import { sampleMemory } from './fleet-memory.js';
import type { FleetRecord, FleetServerRecord, ServerWindow } from './fleet-record.js';

/** The trace of the schedule every window sends, in the run directory. */
export const FLEET_TRACE_FILE = 'fleet-trace.jsonl';
/** {mem_fraction}'s decimals for a fleet's servers: shares such as 0.035. */
const MEM_DIGITS = 4;
const RELEASE_LEAD_MS = 50;

/** A server's MPS thread cap: the file's, else its share of the requests as a whole percent, at least 1. */
export function threadCap(s: {
  threadPct: number | null;
  share: number;
}): Pick<FleetServerRecord, 'threadPct' | 'threadPctFrom'> {
  return s.threadPct !== null
    ? { threadPct: s.threadPct, threadPctFrom: 'file' }
    : { threadPct: Math.min(100, Math.max(1, Math.round(s.share * 100))), threadPctFrom: 'share' };
}

/** The fleet's record before anything ran: its servers as expanded, the schedule's size, no windows. */
export function fleetRecord(file: string, fleet: Fleet, schedule: readonly Arrival[], windowMs: number): FleetRecord {
  const counts = perServer(
    schedule,
    fleet.servers.map((s) => s.index),
  );
  return {
    file,
    seed: fleet.seed,
    source: fleet.traffic.source,
    servers: fleet.servers.map((s) => ({
      index: s.index,
      label: s.label,
      kind: s.kind,
      model: s.model,
      command: s.command,
      memFraction: s.memFraction,
      ...threadCap(s),
      share: s.share,
      ratePerS: s.ratePerS ?? (counts.get(s.index)?.length ?? 0) / (windowMs / 1000),
    })),
    trace: { file: FLEET_TRACE_FILE, requests: schedule.length },
    baseline: [],
    windows: [],
  };
}

/** One server's share of a window: its requests, good ones, TTFT and tokens/s. */
export function serverWindow(server: number, result: LoadResult, slo: Slo, ratePerS: number): ServerWindow {
  const w = windowStats([result], slo, { concurrency: null, ratePerS }, 0);
  return {
    server,
    requests: w.requests,
    ok: w.ok,
    good: w.good,
    ttftP50Ms: w.ttft.p50Ms,
    ttftP99Ms: w.ttft.p99Ms,
    outputTokensPerS: w.outputTokensPerS,
  };
}

/** A fleet window's requests, each line with its server, appended to the run's requests file (where it keeps one). */
export async function keepRequests(
  run: ServeRun,
  driver: Pick<ServeDriver, 'requests'>,
  tag: WindowTag,
  results: readonly LoadResult[],
  servers: readonly number[],
): Promise<void> {
  if (driver.requests) await appendRequests(run, driver.requests, windowLines(tag, results, servers));
}

/** The whole fleet in one window (all its servers' requests as one): what the generator's ceiling is checked against. */
export function fleetTotals(all: WindowStats): StepTotals {
  return {
    sentPerS: all.sentPerS ?? 0,
    completedPerS: all.requestsPerS,
    outputTokensPerS: all.outputTokensPerS,
    e2eP50Ms: all.e2e.p50Ms,
    ttftP50Ms: all.ttft.p50Ms,
    lagP99Ms: all.lagP99Ms,
  };
}

/**
 * The generator's ceiling, measured once a run (kept in the record, so --resume does not measure it again);
 * one that failed is not tried again (its warning once).
 */
export function measureCeilingOnce(run: ServeRun, driver: ServeDriver, slo: Slo): () => Promise<void> {
  let tried = false;
  return async () => {
    if (run.ceiling.length > 0 || tried) return;
    tried = true;
    driver.progress('the load generator against a null server (its own ceiling)');
    const ceiling = await measureCeiling(driver.runner, runCeilingOptions(run.settings, slo, driver.generator));
    if (ceiling.problem !== null) run.warnings.push(ceiling.problem);
    run.ceiling = ceiling.steps;
    await driver.save();
  };
}

/**
 * One window of a fleet, bench's and capacity's alike: each member sends its own arrivals (those inside
 * the window), all released together; the members' results in order, or which one stopped answering.
 */
export async function fleetWindow(
  group: CopyGroup,
  arrivals: readonly (readonly Arrival[])[],
  durationMs: number,
  requestTimeoutMs: number,
  abort: AbortSignal,
): Promise<{ results: LoadResult[]; problem: null } | { results: null; problem: string }> {
  const timed = (list: readonly Arrival[]): TimedRequest[] =>
    list
      .filter((a) => a.offsetMs < durationMs)
      .map((a) => ({ offsetMs: a.offsetMs, inputTokens: a.inputTokens, outputTokens: a.outputTokens }));
  const outcome = await group.window(
    {
      leadMs: RELEASE_LEAD_MS,
      releases: (startAtUs) =>
        arrivals.map((list, member) => ({
          member,
          command: { startAtUs, durationMs, schedule: { kind: 'trace', requests: timed(list) } },
        })),
      timeoutMs: durationMs + requestTimeoutMs + 5000,
    },
    abort,
  );
  if (outcome.status === 'collected') return { results: outcome.results, problem: null };
  const reply = outcome.reply;
  const why = reply.kind === 'failed' ? reply.reason : reply.kind === 'malformed' ? reply.problem : 'timed out';
  return { results: null, problem: `${outcome.label} stopped answering: ${why}` };
}

type Outcome =
  | { windows: ServerWindow[]; stats: WindowStats; problem: null }
  | { windows: null; stats: null; problem: string };

/** A mode's or a baseline's kept windows: each server's, and the fleet's totals per window. */
interface Kept {
  windows: ServerWindow[][];
  totals: StepTotals[];
  problem: string | null;
}

/** Measures the baseline, then each pending mode group of `run` (its groups: one per mode, copies = the fleet's servers). */
export async function measureFleet(
  run: ServeRun,
  driver: ServeDriver,
  fleet: Fleet,
  schedule: readonly Arrival[],
): Promise<void> {
  const s = run.settings;
  const record = run.fleet as FleetRecord;
  const slo: Slo = { ttftP99Ms: s.sloTtftP99Ms, itlMaxMs: s.sloItlMaxMs };
  const rule = { minMs: s.warmupMs ?? WARMUP_S * 1000, maxMs: s.warmupMaxMs ?? WARMUP_MAX_S * 1000 };
  const nowMs = () => driver.clock.monotonicUs() / 1000;
  const lists = perServer(
    schedule,
    fleet.servers.map((x) => x.index),
  );
  const rateOf = (index: number) => record.servers.find((x) => x.index === index)?.ratePerS ?? 0;
  const set = { ...driver, settings: s };
  const epochMs = () => Date.parse(driver.clock.nowIso());
  const retain = (keep: (line: RequestLine) => boolean) => retainRequests(run, driver.requests, keep);
  // Once the first mode's servers are up (capacity's baseline has no mode: its search measures it itself), so a
  // fleet that cannot start costs no ceiling.
  const ceiling = measureCeilingOnce(run, driver, slo);

  /** One window: each server its own arrivals; each server's share of it; its requests in the requests file. */
  async function window(
    group: CopyGroup,
    servers: readonly number[],
    durationMs: number,
    tag: Pick<WindowTag, 'mode' | 'kind' | 'arm' | 'index'>,
  ): Promise<Outcome> {
    const windowAtMs = epochMs();
    const arrivals = servers.map((index) => lists.get(index) ?? []);
    const outcome = await fleetWindow(group, arrivals, durationMs, s.requestTimeoutMs, driver.abort);
    if (outcome.results === null) return { windows: null, stats: null, problem: outcome.problem };
    await keepRequests(
      run,
      driver,
      { ...tag, copies: servers.length, ratePerS: null, windowAtMs },
      outcome.results,
      servers,
    );
    // The fleet's window as one: what the warm-up's steady test reads.
    const stats = windowStats(outcome.results, slo, { concurrency: null, ratePerS: null }, 0);
    // A window whose requests none ended ok (or carried a token) measured nothing: the arm fails. A window
    // with no arrivals at all (a cold server alone in the baseline) is no failure.
    const nothing = stats.requests === 0 ? null : nothingMeasured(stats);
    if (nothing !== null) return { windows: null, stats: null, problem: `the window measured nothing: ${nothing}` };
    return {
      windows: outcome.results.map((r, k) => serverWindow(servers[k] as number, r, slo, rateOf(servers[k] as number))),
      stats,
      problem: null,
    };
  }

  /** Warm-up until steady (not kept), then --rounds windows; the windows, or why they stopped. */
  async function windows(
    what: string,
    arm: Warmup['arm'],
    group: CopyGroup,
    servers: readonly number[],
    g: ServeGroup | null,
    warm: () => Promise<void>,
  ): Promise<Kept> {
    if (g !== null) await ceiling();
    const mode = g?.mode ?? 'dedicated';
    const tagArm = g === null ? 'dedicated' : 'shared';
    let warmups = 0;
    const warmed = await warmUp(
      arm,
      rule,
      async () => {
        const tag = { mode, arm: tagArm, kind: 'warm-up', index: warmups++ } as const;
        // A whole window: the fleet's schedule is one window's arrivals, so a shorter warm-up window would send
        // only its first seconds (a cold server's arrivals may all come later, leaving the window empty).
        const w = await window(group, servers, s.windowMs, tag);
        return w.windows === null ? { stats: null, problem: w.problem } : { stats: w.stats, problem: null };
      },
      nowMs,
    );
    if (warmed.warmup === null) return { windows: [], totals: [], problem: `${what} warm-up: ${warmed.problem}` };
    if (g !== null) (g.warmup ??= []).push(warmed.warmup);
    const warning = warmupWarning(what, warmed.warmup);
    if (warning !== null) run.warnings.push(warning);
    await warm();
    const kept: Kept = { windows: [], totals: [], problem: null };
    for (let r = 0; r < s.rounds; r++) {
      if (driver.abort.aborted) throw driver.interrupted();
      const w = await window(group, servers, s.windowMs, { mode, arm: tagArm, kind: 'round', index: r });
      if (w.windows === null) return { ...kept, problem: `${what} round ${r + 1}: ${w.problem}` };
      kept.windows.push(w.windows);
      kept.totals.push(fleetTotals(w.stats));
      const good = w.windows.reduce((n, x) => n + x.good, 0);
      const all = w.windows.reduce((n, x) => n + x.requests, 0);
      driver.progress(`  ${what} round ${r + 1}/${s.rounds}: ${good} of ${all} requests within the SLO`);
    }
    return kept;
  }

  const plan = (index: number, mode: GroupMode, env: Record<string, string>): MemberPlan => {
    const server = fleet.servers.find((x) => x.index === index);
    if (server === undefined) throw new RangeError(`measureFleet: no server ${index}`);
    return {
      index,
      label: `${mode === 'dedicated' ? 'baseline' : mode} ${server.label}`,
      command: (port) =>
        fillCommand(
          server.command,
          { port, index, gpuUuid: driver.gpuUuid, memFraction: server.memFraction },
          MEM_DIGITS,
        ),
      env,
    };
  };

  const listGpu = () => gpuProcesses(driver.runner, driver.gpuUuid);

  /** Once warm: each server's memory under `mode` (baseline: its kind alone), in the record. */
  const memoryOf = (mode: string, copies: Copies, mps: boolean) => async () => {
    const servers = copies.members.map((m) => ({ server: m.spec.index, pid: m.pid }));
    const got = await sampleMemory(mode, servers, listGpu, mps);
    const others = (record.memory ?? []).filter((x) => x.mode !== mode || !servers.some((y) => y.server === x.server));
    record.memory = [...others, ...got];
  };

  /**
   * Once warm, the in-process arm's memory: its one process holds every model, so no server has a figure of
   * its own; each says the whole (or why it is not known).
   */
  const inProcessMemory = (host: Copies) => async () => {
    const pid = host.members[0]?.pid ?? null;
    const [whole] = await sampleMemory(IN_PROCESS, [{ server: 1, pid }], listGpu, false);
    const n = record.servers.length;
    const reason =
      whole?.memoryMiB == null
        ? (whole?.reason ?? 'not sampled')
        : `one process serves all ${n} models: ${whole.memoryMiB} MiB in all`;
    const others = (record.memory ?? []).filter((x) => x.mode !== IN_PROCESS);
    record.memory = [
      ...others,
      ...record.servers.map((x) => ({ mode: IN_PROCESS, server: x.index, memoryMiB: null, reason })),
    ];
  };

  /** The in-process arm: one process serving every server's model ({models}), each server's requests naming its own. */
  function inProcessArm(g: ServeGroup, command: string, servers: readonly number[]) {
    const models = record.servers.map((x) => `${x.label}=${x.model}`).join(',');
    // {mem_fraction}: the process holds every server's share.
    const memFraction = Math.min(
      1,
      record.servers.reduce((n, x) => n + x.memFraction, 0),
    );
    const host: MemberPlan = {
      index: 0,
      label: `${IN_PROCESS} server (${record.servers.length} models)`,
      command: (port) =>
        fillCommand(
          command.replaceAll('{models}', models),
          { port, index: 0, gpuUuid: driver.gpuUuid, memFraction },
          MEM_DIGITS,
        ),
      env: {},
    };
    return started([host], (one) => {
      const members = attachedMembers(
        set,
        one.members[0] as ServerMember,
        record.servers.map((x) => ({ index: x.index, label: `${IN_PROCESS} ${x.label}`, model: x.label })),
      );
      return windows(g.mode, 'shared', WorkloadGroup.of(members, driver.clock), servers, g, inProcessMemory(one));
    });
  }

  async function started<T>(plans: MemberPlan[], body: (copies: Copies) => Promise<T>): Promise<T | string> {
    const { copies, problem } = await startMembers(set, plans);
    if (copies === null) return problem;
    try {
      return await body(copies);
    } finally {
      for (const line of await copies.stop()) run.warnings.push(line);
    }
  }

  preCheckFleet(
    run,
    fleet.servers.map((x) => x.memFraction),
    driver.gpuMemoryMiB,
  );
  // The baseline: each kind's first server alone, with that server's arrivals.
  const kinds = [...new Set(fleet.servers.map((x) => x.kind))];
  if (record.baseline.length === 0)
    record.baseline = kinds.map((kind) => ({
      kind,
      server: fleet.servers.find((x) => x.kind === kind)?.index as number,
      status: 'pending',
      reason: null,
      windows: [],
    }));
  for (const b of record.baseline) {
    if (b.status !== 'pending') continue;
    driver.progress(`baseline: ${b.kind} alone (the arrivals of server ${b.server})`);
    await retain((l) => l.mode !== 'dedicated' || l.server !== b.server);
    const got = await started([plan(b.server, 'dedicated', {})], (copies) =>
      windows(`baseline ${b.kind}`, 'dedicated', copies.group, [b.server], null, memoryOf('baseline', copies, false)),
    );
    const problem = typeof got === 'string' ? got : got.problem;
    Object.assign(b, {
      status: problem === null ? 'measured' : 'failed',
      reason: problem,
      windows: typeof got === 'string' ? [] : got.windows.flat(),
    });
    await driver.save();
  }

  for (const g of run.groups) {
    if (g.status !== 'pending') continue;
    if (driver.abort.aborted) throw driver.interrupted();
    await measureMode(g);
    await driver.save();
  }

  async function measureMode(g: ServeGroup): Promise<void> {
    Object.assign(g, { rounds: [], steps: [], warmup: [] });
    record.windows = record.windows.filter((w) => w.mode !== g.mode);
    await retain((l) => l.mode !== g.mode);
    let daemon: { stop(): Promise<string>; env: Record<string, string> } | null = null;
    if (g.mode === 'mps' || g.mode === 'mps-threads') {
      const up = await driver.startMps(`fleet-${g.mode}`);
      if (!up.ok) {
        Object.assign(g, { status: 'skipped', reason: `the MPS daemon did not start: ${up.reason}` });
        return;
      }
      daemon = up.daemon;
    }
    try {
      const env = (x: FleetServerRecord) => modeEnv(g.mode, fleet.servers.length, daemon?.env ?? {}, x.threadPct);
      g.env = env(record.servers[0] as FleetServerRecord);
      const servers = record.servers.map((x) => x.index);
      const arm = fleet.inProcess;
      if (g.mode === IN_PROCESS && arm === null) {
        Object.assign(g, { status: 'skipped', reason: 'the fleet file has no in_process command' });
        return;
      }
      driver.progress(
        g.mode === IN_PROCESS
          ? `${g.mode}: starting one server for ${servers.length} models`
          : `${g.mode}: starting ${servers.length} servers`,
      );
      const got =
        g.mode === IN_PROCESS && arm !== null
          ? await inProcessArm(g, arm.command, servers)
          : await started(
              record.servers.map((x) => plan(x.index, g.mode, env(x))),
              (copies) =>
                windows(g.mode, 'shared', copies.group, servers, g, memoryOf(g.mode, copies, daemon !== null)),
            );
      if (typeof got === 'string') {
        Object.assign(g, { status: 'failed', reason: got });
        driver.progress(`  ${got}`);
        return;
      }
      record.windows.push({ mode: g.mode, windows: got.windows, totals: got.totals });
      Object.assign(g, got.problem === null ? { status: 'measured' } : { status: 'failed', reason: got.problem });
    } finally {
      await daemon?.stop();
    }
  }
}
