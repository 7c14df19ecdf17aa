/**
 * A server run's loop: one group per mode and number of copies, the generator's ceiling measured once
 * the first copy has come up. bench:
 * a dedicated copy (plain, resident all run) against N copies under the mode, in ABBA rounds at equal
 * requests resident per GPU (the dedicated copy carries N × c while each shared copy carries c), after
 * a warm-up of each, until steady, that is not kept (serve/warmup.ts). capacity: the highest open-loop
 * rate the copies carry with TTFT p99 within the SLO, searched as capacity searches a workload's, after
 * a warm-up at its first rate. Every request goes to the run's requests file as its window ends
 * (serve/requests-log.ts). Each group is saved when done; --resume measures the rest.
 */
import type { Clock } from '../core/clock.js';
import type { ProcessRunner } from '../core/process.js';
import { runRateSearch, type StepOutcome } from '../experiment/rate-search.js';
import { runPairedRounds, type WindowOutcome } from '../experiment/rounds.js';
import type { LoadGenerator } from '../load/pool.js';
import type { SessionMpsStart } from '../session/lifecycle.js';
import { MPS_CAP_CONTEXT_MIB } from '../system/cuda-context.js';
import type { KillRegistry } from '../workload/group.js';
import { measureCeiling, runCeilingOptions } from './ceiling.js';
import { type Copies, type CopyGroup, memFraction, modeEnv, startCopies } from './copies.js';
import type { RateStep, ServeGroup, ServeRun, WindowStats } from './record.js';
import {
  appendRequests,
  type RequestLine,
  type RequestsLog,
  retainRequests,
  type WindowTag,
  windowLines,
} from './requests-log.js';
import type { LoadCommand } from './server-member.js';
import { searchPolicy, stepDurationMs, stepVerdict } from './steps.js';
import { nothingMeasured, type Slo } from './verdicts.js';
import { WARMUP_MAX_S, WARMUP_S, type Warmup, warmUp, warmupWarning, warmupWindowMs } from './warmup.js';
import { windowStats } from './window.js';

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
  /** The GPU's memory, for --mps-mem-cap; null where nvidia-smi gave none. */
  gpuMemoryMiB: number | null;
  progress(line: string): void;
  /** The generator's worker processes (load/pool.ts); the harness sends the load itself without. */
  generator?: LoadGenerator;
  /** The run's requests file; none: requests are not kept. */
  requests?: RequestsLog;
}

const RELEASE_LEAD_MS = 50;
const ms = (v: number | null) => (v === null ? '–' : v.toFixed(1));

type Window = { stats: WindowStats; problem: null } | { stats: null; problem: string };
/** A window's place in the run, as its requests' lines name it (the time and rate are added when it runs). */
type Tag = Omit<WindowTag, 'windowAtMs' | 'ratePerS'>;

export async function measureServe(run: ServeRun, driver: ServeDriver): Promise<void> {
  const s = run.settings;
  const slo: Slo = { ttftP99Ms: s.sloTtftP99Ms, itlMaxMs: s.sloItlMaxMs };
  const set = { ...driver, settings: s };
  const warmupRule = { minMs: s.warmupMs ?? WARMUP_S * 1000, maxMs: s.warmupMaxMs ?? WARMUP_MAX_S * 1000 };
  const epochMs = () => Date.parse(driver.clock.nowIso());
  const nowMs = () => driver.clock.monotonicUs() / 1000;
  const retain = (keep: (line: RequestLine) => boolean) => retainRequests(run, driver.requests, keep);
  const keep = (lines: RequestLine[]) => appendRequests(run, driver.requests, lines);
  // The generator's ceiling once a copy of the server is known to start (a command that never comes up
  // fails its run at once, not after the sweep), while no load reaches it.
  const ceilingOnce = async () => {
    if (run.ceiling.length > 0) return;
    driver.progress('the load generator against a null server (its own ceiling)');
    await retain((l) => l.mode !== null);
    const lines: RequestLine[] = [];
    let step = 0;
    const ceiling = await measureCeiling(driver.runner, {
      ...runCeilingOptions(s, slo, driver.generator),
      onResult: (ratePerS, results, kept) => {
        const windowAtMs = Math.round(epochMs() - Math.max(0, ...results.map((r) => r.elapsedMs)));
        const tag = { mode: null, copies: null, arm: null, ratePerS, windowAtMs };
        lines.push(...windowLines({ ...tag, kind: kept ? 'ceiling' : 'warm-up', index: kept ? step++ : 0 }, results));
      },
    });
    await keep(lines);
    if (ceiling.problem !== null) run.warnings.push(ceiling.problem);
    run.ceiling = ceiling.steps;
    const last = ceiling.steps.at(-1);
    if (last)
      driver.progress(
        `  up to ${last.ratePerS} req/s: e2e p99 ${ms(last.window.e2e.p99Ms)} ms, lag p99 ${ms(last.window.lagP99Ms)} ms`,
      );
    await driver.save();
  };

  let dedicated: Copies | null = null;
  const failRest = (reason: string) => {
    for (const g of run.groups) if (g.status === 'pending') Object.assign(g, { status: 'failed', reason });
  };
  try {
    if (s.measure === 'bench' && run.groups.some((g) => g.status === 'pending')) {
      driver.progress('starting the dedicated copy');
      const d = await startCopies(set, 'dedicated', 1, {});
      if (d.copies === null) {
        run.warnings.push(d.problem);
        failRest(d.problem);
        return;
      }
      dedicated = d.copies;
      await ceilingOnce();
    }
    for (const g of run.groups) {
      if (g.status !== 'pending') continue;
      if (driver.abort.aborted) throw driver.interrupted();
      const gone = dedicated?.members[0]?.ended;
      if (gone) {
        failRest(
          `the dedicated copy ${dedicated?.members[0]?.exitText(gone, 'between groups')}: ${dedicated?.members[0]?.stderrTail().split('\n').slice(-3).join(' | ')}`,
        );
        break;
      }
      await measureGroup(g);
      await driver.save();
    }
  } finally {
    if (dedicated !== null) stopped(await dedicated.stop());
  }

  /** What a stop left running: a warning of the run, and a line now. */
  function stopped(left: string[]): void {
    for (const line of left) {
      run.warnings.push(line);
      driver.progress(`  ${line}`);
    }
  }

  async function measureGroup(g: ServeGroup): Promise<void> {
    // A group an interrupt cut short is measured again from its start, its requests too.
    Object.assign(g, { rounds: [], steps: [], warmup: [] });
    await retain((l) => l.mode !== g.mode || l.copies !== g.copies);
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
      // The share {mem_fraction} names, and room for the copy's own context: a limit caps free memory, not
      // total (an H100 client under 0=4G saw 3.5 GiB free of 79.18), and an engine checks f × total fits.
      const capMiB =
        s.mpsMemCap && driver.gpuMemoryMiB !== null
          ? Math.floor(memFraction(s.measure, g.mode, g.copies) * driver.gpuMemoryMiB) + MPS_CAP_CONTEXT_MIB
          : null;
      g.env = modeEnv(g.mode, g.copies, daemon?.env ?? {}, s.threadPct, capMiB);
      driver.progress(`${g.mode} x${g.copies}: starting ${g.copies} cop${g.copies === 1 ? 'y' : 'ies'}`);
      const { copies, problem } = await startCopies(set, g.mode, g.copies, g.env);
      if (copies === null) {
        Object.assign(g, { status: 'failed', reason: problem });
        driver.progress(`  ${problem}`);
        return;
      }
      try {
        await ceilingOnce();
        if (s.measure === 'bench') await rounds(g, copies.group);
        else await search(g, copies.group);
        if (g.status === 'pending') g.status = 'measured';
      } finally {
        stopped(await copies.stop());
      }
    } finally {
      await daemon?.stop();
    }
  }

  async function window(
    tag: Tag,
    group: CopyGroup,
    loads: LoadCommand['schedule'][],
    load: Parameters<typeof windowStats>[2],
    durationMs = s.windowMs,
  ): Promise<Window> {
    const windowAtMs = epochMs();
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
      const why = reply.kind === 'failed' ? reply.reason : reply.kind === 'malformed' ? reply.problem : 'timed out';
      return { stats: null, problem: `${outcome.label} stopped answering: ${why}` };
    }
    await keep(windowLines({ ...tag, ratePerS: load.ratePerS, windowAtMs }, outcome.results));
    return { stats: windowStats(outcome.results, slo, load, (cpu.user + cpu.system) / 1000), problem: null };
  }

  /** One arm's warm-up: recorded in the group, and a warning where it ran to its maximum. */
  async function warm(g: ServeGroup, arm: Warmup['arm'], window: (index: number) => Promise<Window>) {
    const warmed = await warmUp(arm, warmupRule, window, nowMs);
    if (warmed.warmup === null) return warmed.problem;
    (g.warmup ??= []).push(warmed.warmup);
    const w = warmed.warmup;
    driver.progress(`  ${arm} warm-up: ${w.windows} windows, ${(w.durationMs / 1000).toFixed(1)} s (${w.stop})`);
    const warning = warmupWarning(`${g.mode} x${g.copies}`, w);
    if (warning !== null) run.warnings.push(warning);
    return null;
  }

  async function rounds(g: ServeGroup, shared: CopyGroup): Promise<void> {
    const d = (dedicated as Copies).group;
    const c = s.concurrency;
    const arm = async (which: 'dedicated' | 'shared', what: string, tag: Tag, durationMs?: number): Promise<Window> => {
      const w =
        which === 'dedicated'
          ? await window(
              tag,
              d,
              [{ kind: 'closed', concurrency: g.copies * c }],
              { concurrency: g.copies * c, ratePerS: null },
              durationMs,
            )
          : await window(
              tag,
              shared,
              Array.from({ length: g.copies }, () => ({ kind: 'closed', concurrency: c }) as const),
              { concurrency: c, ratePerS: null },
              durationMs,
            );
      // A window in which no request ended ok, or none carried a token, measured nothing of the server.
      const nothing = w.stats === null ? null : nothingMeasured(w.stats);
      return nothing === null
        ? w
        : { stats: null, problem: `${what}, the ${which} window measured nothing: ${nothing}` };
    };
    // Warm-up until steady, not kept: copies just started (and the dedicated copy at this group's load) run cold.
    const tag = (which: 'dedicated' | 'shared', kind: Tag['kind'], index: number): Tag => ({
      mode: g.mode,
      copies: g.copies,
      kind,
      arm: which,
      index,
    });
    for (const which of ['dedicated', 'shared'] as const) {
      const problem = await warm(g, which, (i) =>
        arm(which, 'warm-up', tag(which, 'warm-up', i), warmupWindowMs(s.windowMs)),
      );
      if (problem !== null) {
        Object.assign(g, { status: 'failed', reason: problem });
        return;
      }
    }
    // Paired rounds, ABBA: a fixed --rounds (the stop policy's hook, as bench's could be).
    const rounds = await runPairedRounds({
      arms: ['dedicated', 'shared'] as const,
      rounds: s.rounds,
      measure: async (which, r): Promise<WindowOutcome<WindowStats>> => {
        const w = await arm(which, `round ${r + 1}`, tag(which, 'round', r));
        return w.stats === null ? { status: 'failed', reason: w.problem } : { status: 'ok', window: w.stats };
      },
      onRound: async (r, windows) => {
        const of = (which: 'dedicated' | 'shared') => windows.find((w) => w.arm === which)?.window as WindowStats;
        const round = { dedicated: of('dedicated'), shared: of('shared') };
        g.rounds.push(round);
        driver.progress(
          `  round ${r + 1}/${s.rounds}: ${round.shared.outputTokensPerS.toFixed(0)} tok/s shared vs ${round.dedicated.outputTokensPerS.toFixed(0)} dedicated; TTFT p99 ${ms(round.shared.ttft.p99Ms)} vs ${ms(round.dedicated.ttft.p99Ms)} ms`,
        );
      },
      signal: driver.abort,
      interrupted: () => driver.interrupted(),
    });
    if (rounds.status === 'failed') Object.assign(g, { status: 'failed', reason: rounds.reason });
  }

  async function search(g: ServeGroup, group: CopyGroup): Promise<void> {
    const poisson = (rate: number, seed: number) =>
      Array.from(
        { length: g.copies },
        (_, k) => ({ kind: 'poisson', ratePerS: rate / g.copies, seed: seed + k }) as const,
      );
    const tag = (kind: Tag['kind'], index: number): Tag => ({ mode: g.mode, copies: g.copies, kind, arm: null, index });
    // Warm-up at the first step's rate, until steady, not kept: the copies just started run cold.
    const first = searchPolicy(g.copies).startQps;
    const problem = await warm(g, 'step', async (i) => {
      const w = await window(
        tag('warm-up', i),
        group,
        poisson(first, 1_000_000 + 1000 * i),
        {
          concurrency: null,
          ratePerS: first,
        },
        warmupWindowMs(s.windowMs),
      );
      const nothing = w.stats === null ? null : nothingMeasured(w.stats);
      return nothing === null
        ? w
        : { stats: null, problem: `at ${first.toFixed(1)} req/s the warm-up measured nothing: ${nothing}` };
    });
    if (problem !== null) {
      Object.assign(g, { status: 'failed', reason: problem });
      return;
    }
    const searched = await runRateSearch({
      policy: searchPolicy(g.copies),
      steps: g.steps,
      step: async (rate, index): Promise<StepOutcome<RateStep>> => {
        const w = await window(
          tag('step', index),
          group,
          poisson(rate, 1000 * index),
          { concurrency: null, ratePerS: rate },
          stepDurationMs(rate, s.windowMs, s.maxStepMs),
        );
        if (w.stats === null) return { status: 'failed', reason: w.problem };
        // Nothing measured at the first rates tried is a broken server, not a capacity; after a step that
        // measured something, it is the server overloaded: a failed step.
        const nothing = nothingMeasured(w.stats);
        if (nothing !== null && g.steps.every((x) => nothingMeasured(x.window) !== null))
          return { status: 'failed', reason: `at ${rate.toFixed(1)} req/s the step measured nothing: ${nothing}` };
        return { status: 'measured', step: stepVerdict(rate, w.stats, s.sloTtftP99Ms) };
      },
      verdicts: (steps) => steps.map((x) => ({ totalQps: x.totalRatePerS, verdict: x.verdict })),
      onStep: async ({ step }) =>
        driver.progress(`  ${step.totalRatePerS.toFixed(1)} req/s: ${step.verdict} (${step.reason})`),
      signal: driver.abort,
      interrupted: () => driver.interrupted(),
    });
    if (searched.status === 'failed') Object.assign(g, { status: 'failed', reason: searched.reason });
  }
}
