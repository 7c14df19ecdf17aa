/**
 * A server run's loop: the generator's ceiling, then one group per mode and number of copies. bench:
 * a dedicated copy (plain, resident all run) against N copies under the mode, in ABBA rounds at equal
 * requests resident per GPU (the dedicated copy carries N × c while each shared copy carries c).
 * capacity: the highest open-loop rate the copies carry with TTFT p99 within the SLO, searched as
 * capacity searches a workload's. Each group is saved when done; --resume measures the rest.
 */
import { createServer } from 'node:net';
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import type { LoadResult } from '../load/run.js';
import type { SessionMpsStart } from '../session/lifecycle.js';
import { type KillRegistry, WorkloadGroup } from '../workload/group.js';
import { nextRate, p99Holds, requestsNeeded, type SearchPolicy } from '../workload/open-loop.js';
import { measureCeiling } from './ceiling.js';
import type { RateStep, ServeGroup, ServeMode, ServeRun, WindowStats } from './record.js';
import { type LoadCommand, ServerMember, type ServerReady } from './server-member.js';
import { type Slo, windowStats } from './window.js';

type Group = WorkloadGroup<LoadCommand, LoadResult, ServerReady>;
/** Copies started and ready: driven together as `group`, stopped by `stop`. */
interface Copies {
  group: Group;
  stop(): Promise<void>;
}

export interface ServeDriver {
  runner: ProcessRunner;
  clock: Clock;
  reaper: KillRegistry;
  abort: AbortSignal;
  interrupted(): Error;
  save(): Promise<void>;
  startMps(label: string): Promise<SessionMpsStart>;
  /** CUDA_VISIBLE_DEVICES and {gpu_uuid}. */
  gpuUuid: string;
  progress(line: string): void;
}

const STOP_MS = 10_000;
const RELEASE_LEAD_MS = 50;

/** A free TCP port on 127.0.0.1, as the kernel picks one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** The command line of copy `index`: its placeholders filled. */
export function fillCommand(
  template: string,
  values: { port: number; index: number; gpuUuid: string; memFraction: number },
): string {
  return template
    .replaceAll('{port}', String(values.port))
    .replaceAll('{index}', String(values.index))
    .replaceAll('{gpu_uuid}', values.gpuUuid)
    .replaceAll('{mem_fraction}', values.memFraction.toFixed(2));
}

/** Each copy's share of GPU memory: 90% split among every copy the run keeps resident at once. */
export function memFraction(run: ServeRun): number {
  const most = Math.max(...run.settings.copies) + (run.settings.measure === 'bench' ? 1 : 0);
  return Math.floor(90 / most) / 100;
}

/** The environment of a copy under `mode` beside `copies - 1` others (the MPS pipe directory and thread cap). */
export function modeEnv(
  mode: ServeMode | 'dedicated',
  copies: number,
  mpsEnv: Record<string, string>,
  threadPct: number | null,
): Record<string, string> {
  if (mode === 'timeslice' || mode === 'dedicated') return {};
  if (mode === 'mps') return { ...mpsEnv };
  return { ...mpsEnv, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(threadPct ?? Math.floor(100 / copies)) };
}

export async function measureServe(run: ServeRun, driver: ServeDriver): Promise<void> {
  const s = run.settings;
  const slo: Slo = { ttftP99Ms: s.sloTtftP99Ms, itlP99Ms: s.sloItlP99Ms };
  if (run.ceiling.length === 0) {
    driver.progress('the load generator against a null server (its own ceiling)');
    const ceiling = await measureCeiling(driver.runner, {
      inputTokens: s.inputTokens,
      outputTokens: s.outputTokens,
      api: s.api,
      slo,
      cpus: s.serverCpus,
      stepMs: s.ceilingStepMs,
    });
    if (ceiling.problem !== null) run.warnings.push(ceiling.problem);
    run.ceiling = ceiling.steps;
    const last = ceiling.steps.at(-1);
    if (last)
      driver.progress(
        `  up to ${last.ratePerS} req/s: e2e p99 ${last.window.e2e.p99Ms.toFixed(2)} ms, lag p99 ${last.window.lagP99Ms.toFixed(2)} ms`,
      );
    await driver.save();
  }
  /**
   * Starts the copies one at a time, each awaited ready before the next starts: an engine that sizes
   * its KV cache from the memory free when it starts (vLLM, SGLang, TGI) mis-sizes it beside a copy
   * still loading. {index}: 0 for the dedicated copy, 1..N for the copies of a group, so copies
   * resident at once never share one.
   */
  const start = async (mode: ServeMode | 'dedicated', copies: number, env: Record<string, string>) => {
    const started: Group[] = [];
    const members: ServerMember[] = [];
    const stopAll = async () => {
      await Promise.all(started.map((one) => one.stop(STOP_MS)));
    };
    for (let k = 0; k < copies; k++) {
      const port = await freePort();
      const index = mode === 'dedicated' ? 0 : k + 1;
      const member = new ServerMember(driver.runner, driver.clock, {
        index,
        label: `${mode} copy ${k + 1} of ${copies}`,
        command: fillCommand(s.serve, { port, index, gpuUuid: driver.gpuUuid, memFraction: memFraction(run) }),
        env: { CUDA_VISIBLE_DEVICES: driver.gpuUuid, ...env },
        port,
        readyPath: s.readyPath,
        request: { api: s.api, inputTokens: s.inputTokens, maxTokens: s.outputTokens, timeoutMs: s.requestTimeoutMs },
        inputTokensMax: s.inputTokensMax ?? null,
        cpus: s.serverCpus,
      });
      members.push(member);
      const one = WorkloadGroup.start([member], driver.clock, driver.reaper);
      started.push(one);
      const ready = await one.ready(s.readyTimeoutMs, driver.abort).catch(async (error: unknown) => {
        await stopAll();
        throw error;
      });
      if (ready.status === 'ready') continue;
      const why = ready.reply.kind === 'timeout' ? `not ready within ${s.readyTimeoutMs / 1000} s` : ready.reply.reason;
      const tail = member.stderrTail().split('\n').slice(-5).join(' | ');
      await stopAll();
      return {
        copies: null,
        problem: `${member.label} (${member.spec.command}) did not come up: ${why}; its log ends: ${tail || '(empty)'}`,
      };
    }
    // The members' lifetimes are the one-member groups'; windows drive them together.
    return { copies: { group: WorkloadGroup.of(members, driver.clock), stop: stopAll }, problem: null };
  };

  let dedicated: Copies | null = null;
  try {
    if (s.measure === 'bench' && run.groups.some((g) => g.status === 'pending')) {
      driver.progress('starting the dedicated copy');
      const d = await start('dedicated', 1, {});
      if (d.copies === null) {
        run.warnings.push(d.problem ?? '');
        for (const g of run.groups)
          if (g.status === 'pending') Object.assign(g, { status: 'failed', reason: d.problem });
        return;
      }
      dedicated = d.copies;
    }
    for (const g of run.groups) {
      if (g.status !== 'pending') continue;
      if (driver.abort.aborted) throw driver.interrupted();
      await measureGroup(g);
      await driver.save();
    }
  } finally {
    await dedicated?.stop();
  }

  async function measureGroup(g: ServeGroup): Promise<void> {
    // A group an interrupt cut short is measured again from its start.
    Object.assign(g, { rounds: [], steps: [] });
    let daemon: { stop(): Promise<string>; env: Record<string, string> } | null = null;
    if (g.mode === 'mps' || g.mode === 'mps-threads') {
      const started = await driver.startMps(`${g.mode}-x${g.copies}`);
      if (!started.ok) {
        Object.assign(g, { status: 'skipped', reason: `the MPS daemon did not start: ${started.reason}` });
        return;
      }
      daemon = started.daemon;
    }
    try {
      g.env = modeEnv(g.mode, g.copies, daemon?.env ?? {}, s.threadPct);
      driver.progress(`${g.mode} x${g.copies}: starting ${g.copies} cop${g.copies === 1 ? 'y' : 'ies'}`);
      const { copies, problem } = await start(g.mode, g.copies, g.env);
      if (copies === null) {
        Object.assign(g, { status: 'failed', reason: problem });
        driver.progress(`  ${problem}`);
        return;
      }
      try {
        if (s.measure === 'bench') await rounds(g, copies.group);
        else await search(g, copies.group);
        if (g.status === 'pending') g.status = 'measured';
      } finally {
        await copies.stop();
      }
    } finally {
      await daemon?.stop();
    }
  }

  async function window(
    group: Group,
    loads: LoadCommand['schedule'][],
    load: Parameters<typeof windowStats>[2],
    durationMs = s.windowMs,
  ) {
    const cpuBefore = process.cpuUsage();
    const outcome = await group.window(
      {
        leadMs: RELEASE_LEAD_MS,
        releases: (startAtUs) =>
          loads.map((schedule, member) => ({ member, command: { startAtUs, schedule, durationMs } })),
        timeoutMs: durationMs + s.requestTimeoutMs + 5000,
      },
      driver.abort,
    );
    const cpu = process.cpuUsage(cpuBefore);
    if (outcome.status === 'lost') {
      const reply = outcome.reply;
      return {
        stats: null,
        problem: `${outcome.label} stopped answering: ${reply.kind === 'failed' ? reply.reason : reply.kind === 'malformed' ? reply.problem : 'timed out'}`,
      };
    }
    return { stats: windowStats(outcome.results, slo, load, (cpu.user + cpu.system) / 1000), problem: null };
  }

  async function rounds(g: ServeGroup, shared: Group): Promise<void> {
    const d = (dedicated as Copies).group;
    const c = s.concurrency;
    for (let r = 0; r < s.rounds; r++) {
      if (driver.abort.aborted) throw driver.interrupted();
      const arms: Array<'dedicated' | 'shared'> = r % 2 === 0 ? ['dedicated', 'shared'] : ['shared', 'dedicated'];
      const got: Partial<Record<'dedicated' | 'shared', WindowStats>> = {};
      for (const arm of arms) {
        const w =
          arm === 'dedicated'
            ? await window(d, [{ kind: 'closed', concurrency: g.copies * c }], {
                concurrency: g.copies * c,
                ratePerS: null,
              })
            : await window(
                shared,
                Array.from({ length: g.copies }, () => ({ kind: 'closed', concurrency: c }) as const),
                {
                  concurrency: c,
                  ratePerS: null,
                },
              );
        if (w.stats === null) {
          Object.assign(g, { status: 'failed', reason: w.problem });
          return;
        }
        got[arm] = w.stats;
      }
      const round = { dedicated: got.dedicated as WindowStats, shared: got.shared as WindowStats };
      g.rounds.push(round);
      driver.progress(
        `  round ${r + 1}/${s.rounds}: ${round.shared.outputTokensPerS.toFixed(0)} tok/s shared vs ${round.dedicated.outputTokensPerS.toFixed(0)} dedicated; TTFT p99 ${round.shared.ttft.p99Ms.toFixed(1)} vs ${round.dedicated.ttft.p99Ms.toFixed(1)} ms`,
      );
    }
  }

  async function search(g: ServeGroup, group: Group): Promise<void> {
    const policy: SearchPolicy = { startQps: g.copies * 8, tolerance: 0.1, maxSteps: 8, minQps: 0.5 };
    for (
      let rate = nextRate([], policy);
      rate !== null;
      rate = nextRate(
        g.steps.map((x) => ({ totalQps: x.totalRatePerS, verdict: x.verdict })),
        policy,
      )
    ) {
      if (driver.abort.aborted) throw driver.interrupted();
      const each = rate / g.copies;
      const w = await window(
        group,
        Array.from(
          { length: g.copies },
          (_, k) => ({ kind: 'poisson', ratePerS: each, seed: 1000 * g.steps.length + k }) as const,
        ),
        { concurrency: null, ratePerS: rate },
        stepDurationMs(rate, s.windowMs),
      );
      if (w.stats === null) {
        Object.assign(g, { status: 'failed', reason: w.problem });
        return;
      }
      const step = stepVerdict(rate, w.stats, s.sloTtftP99Ms);
      g.steps.push(step);
      driver.progress(`  ${rate.toFixed(1)} req/s: ${step.verdict} (${step.reason})`);
    }
  }
}

/** The longest a capacity step runs, ms: a rate this low is reported as failing for want of requests. */
export const MAX_STEP_MS = 60_000;

/**
 * A capacity step long enough for its p99 claim: at least the 473 requests (10% more, for Poisson's
 * spread) with which "p99 within the target" can hold at 95% confidence with one request over it, and
 * at least --window-s.
 */
export function stepDurationMs(totalRatePerS: number, windowMs: number): number {
  const needed = Math.ceil(((requestsNeeded(1) * 1.1) / totalRatePerS) * 1000);
  return Math.min(MAX_STEP_MS, Math.max(windowMs, needed));
}

/** Lag over this share of the target makes a step the generator's, not the server's (as capacity's). */
const MAX_LAG_SHARE = 0.2;

/** Whether TTFT p99 ≤ `targetMs` holds at a rate (at 95% confidence, as capacity's steps), fails, or cannot be told. */
export function stepVerdict(totalRatePerS: number, window: WindowStats, targetMs: number): RateStep {
  const base = { totalRatePerS, window };
  if (window.requests === 0) return { ...base, verdict: 'invalid', reason: 'no request was sent' };
  if (window.lagP99Ms > MAX_LAG_SHARE * targetMs)
    return {
      ...base,
      verdict: 'invalid',
      reason: `the generator sent ${window.lagP99Ms.toFixed(1)} ms late (p99): the host, not the server, set the pace`,
    };
  if (p99Holds(window.requests, window.overTtft))
    return {
      ...base,
      verdict: 'pass',
      reason: `${window.overTtft} of ${window.requests} requests over ${targetMs} ms TTFT`,
    };
  // Within 1% but too few to claim it: no measurement that the rate fails, and none that it passes.
  if (window.overTtft <= window.requests / 100)
    return {
      ...base,
      verdict: 'invalid',
      reason: `${window.overTtft} of ${window.requests} requests over ${targetMs} ms TTFT: too few requests to claim p99 (${requestsNeeded(window.overTtft)} needed)`,
    };
  return {
    ...base,
    verdict: 'fail',
    reason: `${window.overTtft} of ${window.requests} requests over ${targetMs} ms TTFT`,
  };
}
