/**
 * The scheduler against a deterministic fake client: an in-process workload that answers each run
 * command with the window it was asked for and a rate set by how many clients run at once, on a
 * fake clock. No processes, no sleeps: the same inputs give the same run.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { buildPlan } from '../../harness/bench/comparisons.js';
import { benchOutcome } from '../../harness/bench/outcome.js';
import { growable, prestartable, switchable } from '../../harness/bench/pool/reuse.js';
import type { ProgressEvent } from '../../harness/bench/progress.js';
import type { Comparison, Run } from '../../harness/bench/record/schema.js';
import type { RunStore } from '../../harness/bench/record/store.js';
import { benchTimeAccount } from '../../harness/bench/record/time.js';
import {
  executeRun,
  idleCpus,
  type Prestarted,
  prestartFirst,
  type SchedulerDeps,
  startsFirstEarly,
} from '../../harness/bench/scheduler.js';
import type { Clock } from '../../harness/core/clock.js';
import type { ChildHandle, ProcessRunner } from '../../harness/core/process.js';
import { usableCpus } from '../../harness/system/cpus.js';
import type { Sample } from '../../harness/system/nvidia/schema.js';
import { Reaper } from '../../harness/system/proc/reaper.js';
import { testConfig } from './config-fixture.js';

/** A clock that only moves when told: the fake client moves it to the end of each window it reports. */
function fakeClock(): Clock & { now: number } {
  const clock = {
    now: 1_000_000_000,
    monotonicUs: () => clock.now,
    nowIso: () => '2026-11-22T00:00:00.000Z',
    sleep: async (ms: number) => {
      clock.now += ms * 1000;
    },
  };
  return clock;
}

/**
 * A workload that is alone 1000 it/s, and with N clients at once 1000/N it/s; `wobble(n)` scales the
 * rate of its n-th window, so a test can give rounds a spread.
 */
function fakeRunner(
  clock: Clock & { now: number },
  wobble: (n: number) => number = () => 1,
  ready: (env: Record<string, string>) => object = () => ({ event: 'ready', protocol: 1, workload: 'fake', pid: 0 }),
  spawned: Array<Record<string, string>> = [],
  startupMs = 0,
  log: string[] = [],
): ProcessRunner {
  let processes = 0;
  let plains = 0;
  return {
    exec: async () => ({ status: 'exited', exitCode: 0, stdout: '', stderr: '' }),
    which: async () => null,
    spawn(_argv, options): ChildHandle {
      const env = options?.env ?? {};
      spawned.push(env);
      // The plain process (every mode's alone) is named apart, so a log of the pool's own processes reads as before.
      const name = env.GPUSHARE_PLAIN === '1' ? `plain${plains++}` : `p${processes++}`;
      const held = env.GPUSHARE_HOLD === '1';
      log.push(`spawn ${name}${held ? ' held' : ''}`);
      // Each process's CUDA start, build and warm-up, as time on the fake clock: at once, or once told to start.
      const initialise = () => {
        log.push(`cuda ${name}`);
        clock.now += startupMs * 1000;
      };
      if (!held) initialise();
      const listeners: Array<(line: string, tooLong: boolean) => void> = [];
      let resolveExit: (info: { exitCode: number; signal: null }) => void = () => undefined;
      const exited = new Promise<{ exitCode: number; signal: null }>((resolve) => (resolveExit = resolve));
      const say = (message: object) =>
        queueMicrotask(() => {
          for (const l of listeners) l(JSON.stringify(message), false);
        });
      let windows = 0;
      let stderr = `${name} started\n`;
      const child: ChildHandle = {
        // No PID: closing a client looks for its real descendants by PID, and this one has none.
        pid: undefined,
        onLine: (listener) => {
          listeners.push(listener);
          // Held: "imports" at once (holding).
          say(held ? { event: 'holding', pid: 0 } : ready(env));
        },
        writeLine: (line) => {
          const cmd = JSON.parse(line) as {
            cmd: string;
            trial: string;
            startAtUs: number;
            durationMs?: number;
            clients: number;
            tenants?: number[];
          };
          if (cmd.cmd === 'exit') {
            log.push(`exit ${name}`);
            queueMicrotask(() => resolveExit({ exitCode: 0, signal: null }));
            return true;
          }
          if (cmd.cmd === 'start') {
            initialise();
            say(ready(env));
            return true;
          }
          if (cmd.cmd === 'switch') {
            const next = (JSON.parse(line) as { argv: string[] }).argv[0] ?? '';
            log.push(`switch ${name} ${next.split('/').at(-1)}`);
            stderr += `${name} switched to ${next.split('/').at(-1)}\n`;
            clock.now += (startupMs / 5) * 1000; // build and warm-up only
            // Its ready line names the workload it now serves, as gpushare_protocol.serve's does.
            const workload = (next.split('/').at(-1) ?? '').replace(/\.py$/, '');
            say({ ...ready(env), workload, released: { workload: 'before', memoryReservedMiB: 50, leftMiB: 2 } });
            return true;
          }
          log.push(`run ${name} ${cmd.trial}`);
          const durationMs = cmd.durationMs ?? 100; // a fixed-work trial (streams): 100 ms of work
          const end = cmd.startAtUs + durationMs * 1000;
          const iterations = Math.round(((durationMs / 1000) * 1000 * wobble(windows++)) / cmd.clients);
          clock.now = Math.max(clock.now, end);
          const window = { windowStartUs: cmd.startAtUs, windowEndUs: end, gpuMs: durationMs, chunkIterations: 1 };
          // Tenants of one process (protocol 3): each n tenants at once run at 1000/n it/s, as clients do.
          // FAKE_DROP_TENANT=1: it leaves the last tenant named out of its answer.
          const answered = env.FAKE_DROP_TENANT === '1' ? cmd.tenants?.slice(0, -1) : cmd.tenants;
          const tenants = answered?.map((tenant) => ({
            tenant,
            ...window,
            iterations,
            latenciesMs: [],
            stepHostUs: 10 * cmd.clients,
          }));
          say({
            event: 'result',
            trial: cmd.trial,
            ...window,
            iterations: tenants ? iterations * tenants.length : iterations,
            latenciesMs: [],
            ...(tenants ? { tenants } : {}),
          });
          return true;
        },
        closeStdin: () => {
          if (log.at(-1) !== `exit ${name}`) log.push(`exit ${name}`);
          queueMicrotask(() => resolveExit({ exitCode: 0, signal: null }));
        },
        stderrTail: () => stderr,
        killGroup: () => undefined,
        exited,
      };
      return child;
    },
  };
}

function memoryStore(): RunStore & { saves: number; texts: Map<string, string> } {
  const store = {
    dir: '/nowhere',
    saves: 0,
    texts: new Map<string, string>(),
    saveRun: async () => void store.saves++,
    writeText: async (name: string, text: string) => void store.texts.set(name, text),
    saveRunSync: () => undefined,
  };
  return store;
}

function newRun(policy: Partial<Run['config']['roundPolicy']>, overrides: Partial<Run['config']> = {}): Run {
  const base = testConfig({ modes: ['timeslice'], windowMs: 100, releaseLeadMs: 100, ...overrides });
  const config = {
    ...base,
    contentionWorkloads: base.contentionWorkloads.filter((w) => w.name === 'spin'),
    roundPolicy: { ...base.roundPolicy, ...policy },
  };
  const plan = buildPlan(config, null);
  return {
    schema: 'gpushare.run/2',
    id: 'r',
    status: 'running',
    createdAt: '',
    finishedAt: null,
    tool: { name: 'gpushare', version: '0' },
    fingerprint: { gpus: [], host: { cpus: 8 } } as unknown as Run['fingerprint'],
    config,
    plan: plan.comparisons,
    modes: plan.modes,
    trials: [],
    samples: [],
    sampler: { status: 'ok', error: null },
    warnings: [],
    stops: [],
    contamination: [],
    resumes: [],
  };
}

/** A log line about one of the pool's own processes, not the plain process (named plainN by the fake runner). */
const own = (entry: string) => !/ plain\d/.test(entry);

async function execute(
  run: Run,
  wobble?: (n: number) => number,
  ready?: (env: Record<string, string>) => object,
  spawned?: Array<Record<string, string>>,
  startupMs?: number,
  log?: string[],
  early?: (runner: ProcessRunner, clock: Clock) => Prestarted | null,
  seams: Partial<Pick<SchedulerDeps, 'startMps' | 'signal'>> = {},
) {
  const clock = fakeClock();
  const events: ProgressEvent[] = [];
  const store = memoryStore();
  const runner = fakeRunner(clock, wobble, ready, spawned, startupMs, log);
  const prestarted = early?.(runner, clock) ?? null;
  if (early) log?.push('run starts');
  await executeRun(run, {
    runner,
    prestarted,
    clock,
    store,
    progress: { emit: (e) => events.push(e) },
    // One sample, always of now: a wait for the next sample ends on the clock's next step.
    sampler: {
      get samples() {
        return [{ tUs: clock.now } as Sample];
      },
      status: () => ({ status: 'ok', error: null }),
      stop: async () => undefined,
    },
    reaper: new Reaper(),
    signal: new AbortController().signal,
    startMps: async () => ({ ok: false, reason: 'not in this test', logs: [] }),
    ...seams,
  });
  return { events, store, clock };
}

/** The MPS daemon seam, faked: it logs its start and stop. */
const daemon =
  (log: string[], ok = true): SchedulerDeps['startMps'] =>
  async (place) => {
    log.push('mps start');
    place({ controlPid: 7, serverPids: [], logFiles: [], pipeDirectory: '/pipe', shutdown: 'running' });
    if (!ok) return { ok: false, reason: 'control daemon exited with 1', logs: [] };
    return {
      ok: true,
      daemon: {
        env: { CUDA_MPS_PIPE_DIRECTORY: '/pipe', CUDA_MPS_LOG_DIRECTORY: '/log' },
        serverPids: async () => [],
        ask: async () => null,
        stop: async () => {
          log.push('mps stop');
          return 'quit';
        },
      },
    };
  };

describe('scheduler (deterministic fake client)', () => {
  it('runs the minimum rounds in ABBA order and stops at ci-target when the ratio is exact', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 40 });
    const { store } = await execute(run);
    expect(run.trials.map((t) => `${t.round}:${t.arm}`).slice(0, 8)).toEqual([
      '0:alone',
      '0:solo-c0',
      '0:solo-c1',
      '0:contended',
      '1:contended',
      '1:solo-c1',
      '1:solo-c0',
      '1:alone',
    ]);
    expect(run.trials).toHaveLength(24);
    expect(run.stops).toEqual([
      { comparisonId: 'timeslice/spin', rounds: 6, reason: 'ci-target', halfWidths: { 'timeslice/spin/slowdown': 0 } },
    ]);
    expect(analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin/slowdown')?.stats.value).toBe(2);
    // Every finished trial is saved before the next one starts.
    expect(store.saves).toBeGreaterThanOrEqual(24);
  });

  it('adds rounds while the CI is wide, and the analysis uses every one of them', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 12, ciTarget: 0.0001 });
    // Solo windows alternate ±5%: the slowdown wobbles and never reaches a ±0.01% target.
    const { events } = await execute(run, (n) => (n % 2 === 0 ? 1.05 : 0.95));
    expect(run.stops[0]).toMatchObject({ rounds: 12, reason: 'max-rounds' });
    expect(run.trials).toHaveLength(48);
    const slowdown = analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin/slowdown');
    expect(slowdown?.metric.rounds).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // The progress total grows visibly, round by round, past the planned 24.
    const totals = events.flatMap((e) => (e.type === 'trial' ? [e.total] : []));
    expect(totals[0]).toBe(24);
    expect(totals.at(-1)).toBe(48);
  });

  it('stops at the time budget: a comparison gets its share of what is left', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 40, ciTarget: 0.0001, timeBudgetS: 1 });
    await execute(run, (n) => (n % 2 === 0 ? 1.05 : 0.95));
    // A round is 3 trials of 100 ms windows with a 100 ms release lead on the fake clock: 0.6 s.
    expect(run.stops[0]).toMatchObject({ rounds: 8, reason: 'time-budget' });
  });

  it('records where the time went: windows, client start-up, the harness between trials (fake clock)', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 6 });
    const startUs = fakeClock().now - 500_000; // the command began 0.5 s before the comparisons (fingerprint)
    // Each of the 2 client processes takes 0.25 s to start and warm up, one after another on this clock;
    // then, after the next sample (10 ms), the plain process 0.25 s: the comparison's start-up, 0.76 s.
    const { clock } = await execute(run, undefined, undefined, undefined, 250);
    expect(run.clientStarts).toEqual([
      expect.objectContaining({ comparisonId: 'timeslice/spin', readyUs: 1_000_760_000, endUs: clock.now }),
    ]);
    expect(run.plainProcesses).toEqual([
      {
        workload: 'spin',
        comparisonId: 'timeslice/spin',
        startedUs: 1_000_510_000,
        readyUs: 1_000_760_000,
        endUs: expect.any(Number),
      },
    ]);
    run.wallSpans = [{ startUs, endUs: clock.now + 250_000 }];
    // 24 trials (the alone arm's too), each a 100 ms release lead (harness) then a 100 ms window.
    const close = (x: number) => expect.closeTo(x, 9);
    expect(benchTimeAccount(run)).toEqual({
      wallS: close(6.31),
      windowsS: close(2.4),
      startupS: close(0.76),
      harnessS: close(2.4),
      outsideS: close(0.75), // 0.5 s before, 0.25 s after the comparison
      parts: [
        { id: 'timeslice/spin', spanS: close(5.56), windowsS: close(2.4), startupS: close(0.76), harnessS: close(2.4) },
      ],
    });
  });

  describe('prestart: the next comparison imports while this one measures', () => {
    const twoComparisons = (fresh: boolean) => {
      const run = newRun({ minRounds: 2, maxRounds: 2 });
      const config = testConfig({ modes: ['timeslice'] });
      run.config.contentionWorkloads = config.contentionWorkloads.filter((w) => w.name !== 'infer');
      if (fresh) run.config.freshClients = true;
      const plan = buildPlan(run.config, null);
      run.plan = plan.comparisons;
      return run;
    };

    it('spawns the next clients held, and starts their CUDA only after this comparison’s clients exited', async () => {
      const run = twoComparisons(false);
      expect(run.plan.map((c) => c.id)).toEqual(['timeslice/spin', 'timeslice/gemm']);
      const log: string[] = [];
      await execute(run, undefined, undefined, undefined, 250, log);
      const at = (entry: string) => log.indexOf(entry);
      expect(log.filter((e) => e.startsWith('spawn') && own(e))).toEqual([
        'spawn p0',
        'spawn p1',
        'spawn p2 held',
        'spawn p3 held',
      ]);
      // Held while spin measured: spawned before spin's clients exited, CUDA after.
      expect(at('spawn p2 held')).toBeLessThan(at('exit p0'));
      expect(Math.min(at('cuda p2'), at('cuda p3'))).toBeGreaterThan(Math.max(at('exit p0'), at('exit p1')));
      const [spin, gemm] = run.clientStarts ?? [];
      expect([spin?.prestarted, gemm?.prestarted]).toEqual([undefined, true]);
      // Its start is when it was told to start CUDA: after the previous clients exited (the memory baseline's idle GPU).
      expect(gemm?.startedUs).toBeGreaterThanOrEqual(spin?.endUs ?? Number.POSITIVE_INFINITY);
      // Its 2 clients (0.25 s each on this clock), then gemm's plain process (the next sample, 0.25 s).
      expect((gemm?.readyUs ?? 0) - (gemm?.startedUs ?? 0)).toBe(760_000);
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    });

    it('the first comparison’s clients start before the run (beside the Python probe), through CUDA and warm-up; the run waits for their ready lines', async () => {
      const run = twoComparisons(false);
      run.fingerprint = { ...run.fingerprint, gpus: [{ index: 0, uuid: 'GPU-0' }] } as unknown as Run['fingerprint'];
      const log: string[] = [];
      const spawned: Array<Record<string, string>> = [];
      let spawnedAtUs = 0;
      await execute(run, undefined, undefined, spawned, 250, log, (runner, clock) => {
        spawnedAtUs = clock.monotonicUs();
        return prestartFirst(run.config, run.plan, run.fingerprint, runner, clock);
      });
      // Not held: nothing measures yet, so their CUDA starts at once, before the run does.
      expect(log.slice(0, 5)).toEqual(['spawn p0', 'cuda p0', 'spawn p1', 'cuda p1', 'run starts']);
      expect(spawned[0]).toMatchObject({ CUDA_VISIBLE_DEVICES: 'GPU-0', GPUSHARE_CLIENT_INDEX: '0' });
      expect(spawned[0]?.GPUSHARE_HOLD).toBeUndefined();
      // Their start is their spawn: the start-up the account shows is theirs from the first moment.
      const [first, second] = run.clientStarts ?? [];
      expect(first?.startedUs).toBe(spawnedAtUs);
      expect(first?.prestarted).toBeUndefined();
      expect(second?.prestarted).toBe(true);
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
      // Not where the GPU is unknown, with --fresh-clients, or for an MPS comparison (its daemon is not up).
      const clock = fakeClock();
      const runner = fakeRunner(clock);
      expect(prestartFirst(run.config, run.plan, { ...run.fingerprint, gpus: [] }, runner, clock)).toBeNull();
      expect(prestartFirst({ ...run.config, freshClients: true }, run.plan, run.fingerprint, runner, clock)).toBeNull();
      const mps = run.plan.map((c) => ({ ...c, mode: 'mps' as const }));
      expect(prestartFirst(run.config, mps, run.fingerprint, runner, clock)).toBeNull();
    });

    it('--fresh-clients starts each comparison’s clients when it begins, as before', async () => {
      const run = twoComparisons(true);
      const log: string[] = [];
      await execute(run, undefined, undefined, undefined, 250, log);
      expect(log.some((e) => e.endsWith('held'))).toBe(false);
      expect(log.indexOf('spawn p2')).toBeGreaterThan(Math.max(log.indexOf('exit p0'), log.indexOf('exit p1')));
    });

    it('prestarts a custom command once its ready line said it holds (gpushare_protocol.serve), never before', async () => {
      for (const holds of [true, false]) {
        const run = twoComparisons(false);
        const custom = { ...(run.plan[0] as Comparison).workload, name: 'custom', builtin: false };
        for (const c of run.plan) c.workload = custom;
        const log: string[] = [];
        const ready = () => ({ event: 'ready', protocol: 3, workload: 'custom', pid: 0, ...(holds ? { holds } : {}) });
        await execute(run, undefined, ready, undefined, 0, log);
        expect(log.filter((e) => e.startsWith('spawn') && own(e))).toEqual(
          holds
            ? ['spawn p0', 'spawn p1', 'spawn p2 held', 'spawn p3 held']
            : ['spawn p0', 'spawn p1', 'spawn p2', 'spawn p3'],
        );
        expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
      }
    });

    it('prestarts a built-in workload only, where the importers fit beside the measuring clients', () => {
      const [c] = buildPlan(testConfig({ modes: ['timeslice'] }), null).comparisons as [Comparison];
      const mps = { ...c, mode: 'mps' as const };
      const custom = { ...c, workload: { ...c.workload, builtin: false } };
      expect(prestartable({}, c, c, null)).toBe(true);
      expect(prestartable({ freshClients: true }, c, c, null)).toBe(false);
      expect(prestartable({}, c, custom, null)).toBe(false);
      expect(prestartable({}, c, custom, null, true)).toBe(true);
      // An MPS comparison from another mode too: the scheduler starts its daemon first.
      expect(prestartable({}, c, mps, null)).toBe(true);
      expect(prestartable({}, mps, mps, null)).toBe(true);
      expect(prestartable({}, mps, c, null)).toBe(true);
      // 2 measuring clients and 2 importers: they fit on 5 cores beside the harness's core 0, not on 4.
      expect(prestartable({}, c, c, 5)).toBe(true);
      expect(prestartable({}, c, c, 4)).toBe(false);
      // A grown comparison starts only the clients it adds: 1 more fits on 4.
      expect(prestartable({}, c, c, 4, true, 1)).toBe(true);
    });

    it('imports on cores the measuring clients are not pinned to, nor the harness’s core 0', () => {
      const eight = usableCpus({ cpus: 8 });
      expect(idleCpus(eight, { clientEnv: [{ GPUSHARE_CPUS: '7' }, { GPUSHARE_CPUS: '6' }] })).toEqual([1, 2, 3, 4, 5]);
      expect(idleCpus(eight, { clientEnv: [{}, {}] })).toEqual([]);
      expect(idleCpus(null, { clientEnv: [{ GPUSHARE_CPUS: '7' }] })).toEqual([]);
      // In a cpuset (a pod's CPUs 8-13 of 64), only its CPUs, its lowest left to the harness.
      const cpuset = usableCpus({ cpus: 64, allowedCpus: [8, 9, 10, 11, 12, 13] });
      expect(idleCpus(cpuset, { clientEnv: [{ GPUSHARE_CPUS: '13' }, { GPUSHARE_CPUS: '12' }] })).toEqual([9, 10, 11]);
    });
  });

  describe('prestart across the MPS mode boundary: its daemon starts while the last comparison before it measures', () => {
    /** spin time-sliced, then under MPS; `startMps` fakes the daemon seam and logs what happens to it. */
    const twoModes = () => {
      const run = newRun({ minRounds: 2, maxRounds: 2 }, { modes: ['timeslice', 'mps'] });
      run.fingerprint = { ...run.fingerprint, gpus: [{ index: 0, uuid: 'GPU-0' }] } as unknown as Run['fingerprint'];
      return run;
    };
    it('starts the daemon before the MPS clients are spawned held, and their CUDA only after the time-sliced clients exited', async () => {
      const run = twoModes();
      expect(run.plan.map((c) => c.id)).toEqual(['timeslice/spin', 'mps/spin']);
      const log: string[] = [];
      const spawned: Array<Record<string, string>> = [];
      await execute(run, undefined, undefined, spawned, 250, log, undefined, { startMps: daemon(log) });
      const at = (entry: string) => log.indexOf(entry);
      expect(log.filter((e) => own(e) && (e.startsWith('spawn') || e.startsWith('mps')))).toEqual([
        'spawn p0',
        'spawn p1',
        'mps start',
        'spawn p2 held',
        'spawn p3 held',
        'mps stop',
      ]);
      // The held MPS clients name the daemon, import while spin measures time-sliced, and start CUDA once its clients exited.
      const clients = spawned.filter((env) => env.GPUSHARE_PLAIN !== '1');
      expect(clients[2]).toMatchObject({ CUDA_MPS_PIPE_DIRECTORY: '/pipe', GPUSHARE_HOLD: '1' });
      expect(clients[0]?.CUDA_MPS_PIPE_DIRECTORY).toBeUndefined();
      // One plain process for both modes' alone, outside MPS, gone before the daemon.
      const plain = spawned.filter((env) => env.GPUSHARE_PLAIN === '1');
      expect(plain.map((env) => env.CUDA_MPS_PIPE_DIRECTORY)).toEqual([undefined]);
      expect(at('mps stop')).toBeGreaterThan(at('exit plain0'));
      expect(at('spawn p2 held')).toBeLessThan(at('exit p0'));
      expect(Math.min(at('cuda p2'), at('cuda p3'))).toBeGreaterThan(Math.max(at('exit p0'), at('exit p1')));
      // The daemon goes once its clients have exited.
      expect(at('mps stop')).toBeGreaterThan(Math.max(at('exit p2'), at('exit p3')));
      expect(run.clientStarts?.map((s) => s.prestarted)).toEqual([undefined, true]);
      expect(run.modes.find((m) => m.mode === 'mps')?.mps).toMatchObject({ pipeDirectory: '/pipe' });
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    });

    it('a daemon that fails to start early fails its mode as it would have at its turn: no client spawned for it', async () => {
      const run = twoModes();
      const log: string[] = [];
      await execute(run, undefined, undefined, undefined, 0, log, undefined, { startMps: daemon(log, false) });
      expect(log.filter((e) => own(e) && (e.startsWith('spawn') || e.startsWith('mps')))).toEqual([
        'spawn p0',
        'spawn p1',
        'mps start',
      ]);
      expect(run.modes.find((m) => m.mode === 'mps')).toMatchObject({
        status: 'failed',
        reason: 'control daemon exited with 1',
      });
      const mps = run.trials.filter((t) => t.comparisonId === 'mps/spin');
      expect(mps.length).toBeGreaterThan(0);
      expect(mps.every((t) => t.status === 'skipped')).toBe(true);
    });

    it('a daemon start that throws early costs the comparison measuring then nothing: the MPS mode throws it at its turn', async () => {
      const run = twoModes();
      const log: string[] = [];
      const startMps: SchedulerDeps['startMps'] = async () => {
        log.push('mps start');
        throw new Error('cannot write run.json: disk full');
      };
      await expect(execute(run, undefined, undefined, undefined, 0, log, undefined, { startMps })).rejects.toThrow(
        'disk full',
      );
      // Its 2 rounds of 4 arms (the plain alone among them).
      expect(run.trials.filter((t) => t.comparisonId === 'timeslice/spin').map((t) => t.status)).toEqual(
        Array(8).fill('ok'),
      );
      expect(run.stops.map((s) => s.comparisonId)).toEqual(['timeslice/spin']);
      expect(log.filter((e) => own(e) && (e.startsWith('spawn') || e.startsWith('mps')))).toEqual([
        'spawn p0',
        'spawn p1',
        'mps start',
      ]);
    });

    it('the first comparison starts early unless a custom command would wait for its check: one that is not the first comparison’s, or runs as tenants', () => {
      const run = twoModes();
      expect(startsFirstEarly(run.config, run.plan, run.fingerprint)).toBe(true);
      const spin = run.config.contentionWorkloads[0] as Run['config']['contentionWorkloads'][number];
      const custom = { ...spin, name: 'custom', builtin: false, argv: ['python3', 'my_model.py'] };
      const withCustom = { ...run.config, contentionWorkloads: [...run.config.contentionWorkloads, custom] };
      // Not the first comparison's command: the clients wait for its check.
      expect(startsFirstEarly(withCustom, run.plan, run.fingerprint)).toBe(false);
      // The first comparison's: checked on its client 0 (see refuseFailingCommands), which starts at once.
      const customFirst = [{ ...(run.plan[0] as Comparison), workload: custom }, ...run.plan.slice(1)];
      expect(startsFirstEarly(withCustom, customFirst, run.fingerprint)).toBe(true);
      const asTenants = [{ ...(customFirst[0] as Comparison), tenants: 2 }];
      expect(startsFirstEarly(withCustom, asTenants, run.fingerprint)).toBe(false);
      expect(startsFirstEarly({ ...withCustom, freshClients: true }, customFirst, run.fingerprint)).toBe(false);
    });

    it('an interruption before the MPS mode stops the daemon started early, after its held clients', async () => {
      const run = twoModes();
      const log: string[] = [];
      const abort = new AbortController();
      // Ctrl-C comes with the time-sliced comparison's last window (2 rounds: 2 solo windows and 2 of 2 clients each).
      let windows = 0;
      const wobble = () => {
        if (++windows === 8) abort.abort('SIGINT');
        return 1;
      };
      await expect(
        execute(run, wobble, undefined, undefined, 0, log, undefined, {
          startMps: daemon(log),
          signal: abort.signal,
        }),
      ).rejects.toThrow();
      expect(log.at(-1)).toBe('mps stop');
      expect(log.indexOf('mps stop')).toBeGreaterThan(Math.max(log.indexOf('exit p2'), log.indexOf('exit p3')));
      expect(log.some((e) => e === 'cuda p2')).toBe(false);
    });
  });

  describe('grow: a comparison with more clients of the same workload keeps the smaller one’s processes', () => {
    /** spin time-sliced at 2, 4 and 8 clients on a host of `cpus` cores. */
    const sweep = (cpus: number, fresh = false) => {
      const run = newRun({ minRounds: 2, maxRounds: 2 }, { clientCounts: [2, 4, 8], clients: 2, freshClients: fresh });
      run.fingerprint = { ...run.fingerprint, host: { cpus } } as unknown as Run['fingerprint'];
      return run;
    };

    it('starts only the clients each step adds, held while the previous step measures where they fit, and keeps the rest', async () => {
      const run = sweep(8);
      expect(run.plan.map((c) => c.id)).toEqual(['timeslice/spin@2', 'timeslice/spin@4', 'timeslice/spin@8']);
      const log: string[] = [];
      const { store } = await execute(run, undefined, undefined, undefined, 250, log);
      const at = (entry: string) => log.indexOf(entry);
      // @4 adds 2 importers beside 2 measuring clients on 7 free cores: held; @8 adds 4 beside 4: 8 > 7, started at its turn.
      expect(log.filter((e) => e.startsWith('spawn') && own(e))).toEqual([
        'spawn p0',
        'spawn p1',
        'spawn p2 held',
        'spawn p3 held',
        'spawn p4',
        'spawn p5',
        'spawn p6',
        'spawn p7',
      ]);
      // Nothing exits before the last step: the kept processes serve all three.
      expect(log.filter((e) => e.startsWith('exit') && own(e))).toHaveLength(8);
      expect(at('exit p0')).toBeGreaterThan(at('spawn p7'));
      const [two, four, eight] = run.clientStarts ?? [];
      expect([two?.grownFrom, four?.grownFrom, eight?.grownFrom]).toEqual([
        undefined,
        'timeslice/spin@2',
        'timeslice/spin@2',
      ]);
      expect([two?.prestarted, four?.prestarted, eight?.prestarted]).toEqual([undefined, true, undefined]);
      // A step's start-up is that of the processes it adds: 2 held ones' CUDA (0.5 s), 4 new ones (1 s) on the fake clock.
      expect((four?.readyUs ?? 0) - (four?.startedUs ?? 0)).toBe(500_000);
      expect((eight?.readyUs ?? 0) - (eight?.startedUs ?? 0)).toBe(1_000_000);
      // Every trial ran with as many clients as its comparison has; each step keeps its own stderr logs.
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
      const contended8 = run.trials.find((t) => t.comparisonId === 'timeslice/spin@8' && t.arm === 'contended');
      expect(contended8?.status === 'ok' && contended8.clients.map((c) => c.client)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(store.texts.get('logs/timeslice-spin@2-c0.stderr.log')).toBe('p0 started\n');
      expect(store.texts.has('logs/timeslice-spin@4-c0.stderr.log')).toBe(false);
      expect(store.texts.get('logs/timeslice-spin@4-c3.stderr.log')).toBe('p3 started\n');
      const slowdown = analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin@8/slowdown');
      expect(slowdown?.stats.value).toBe(8);
    });

    it('counts the CPUs a quota pays for or a cpuset allows, not the host’s', async () => {
      const spawns = async (host: Record<string, unknown>) => {
        const run = sweep(8);
        run.fingerprint = { ...run.fingerprint, host: { cpus: 64, ...host } } as unknown as Run['fingerprint'];
        const log: string[] = [];
        await execute(run, undefined, undefined, undefined, 250, log);
        return log.filter((e) => e.startsWith('spawn') && own(e));
      };
      // 4.5 CPUs of time: 2 measuring and 2 importing clients do not fit beside the harness's; nothing held.
      expect(await spawns({ cpuQuota: 4.5 })).not.toContain('spawn p2 held');
      // 8 CPUs of a cpuset, or a quota of 8: as on an 8-core host, @4's 2 added clients held.
      expect(await spawns({ allowedCpus: [8, 9, 10, 11, 12, 13, 14, 15] })).toContain('spawn p2 held');
      expect(await spawns({ cpuQuota: 8 })).toContain('spawn p3 held');
      expect(await spawns({})).toContain('spawn p3 held');
    });

    it('--fresh-clients: every step starts all its clients afresh', async () => {
      const run = sweep(8, true);
      const log: string[] = [];
      await execute(run, undefined, undefined, undefined, 0, log);
      expect(log.filter((e) => e.startsWith('spawn') && own(e))).toHaveLength(2 + 4 + 8);
      expect(run.clientStarts?.some((s) => s.grownFrom !== undefined)).toBe(false);
    });

    it('grows within one mode and workload command only, where the first clients keep their environments', () => {
      const [c] = buildPlan(testConfig({ modes: ['timeslice'] }), null).comparisons as [Comparison];
      const more = { ...c, clientEnv: [...c.clientEnv, {}, {}] };
      expect(growable({}, c, more)).toBe(true);
      expect(growable({}, more, c)).toBe(false);
      expect(growable({}, c, c)).toBe(false);
      expect(growable({ freshClients: true }, c, more)).toBe(false);
      expect(growable({}, c, { ...more, mode: 'mps' })).toBe(false);
      expect(growable({}, c, { ...more, tenants: 4 })).toBe(false);
      expect(
        growable({}, c, { ...more, workload: { ...c.workload, argv: [...c.workload.argv, '--batch', '8'] } }),
      ).toBe(false);
      expect(growable({}, c, { ...more, clientEnv: [{ GPUSHARE_CPUS: '1' }, {}, {}, {}] })).toBe(false);
    });
  });

  describe('switch: the processes of one comparison serve the next of their mode and clients', () => {
    /** spin, gemm and infer time-sliced on 2 clients, each of whose ready lines says it switches (or not). */
    const threeComparisons = (fresh: boolean) => {
      const run = newRun({ minRounds: 2, maxRounds: 2 });
      run.config.contentionWorkloads = testConfig({ modes: ['timeslice'] }).contentionWorkloads;
      if (fresh) run.config.freshClients = true;
      run.plan = buildPlan(run.config, null).comparisons;
      return run;
    };
    const switching = () => ({ event: 'ready', protocol: 3, workload: 'fake', pid: 0, holds: true, switches: true });

    it('starts 2 processes for 3 comparisons, switches them, and records where each comparison’s processes came from and what was released', async () => {
      const run = threeComparisons(false);
      expect(run.plan.map((c) => c.id)).toEqual(['timeslice/spin', 'timeslice/gemm', 'timeslice/infer']);
      const log: string[] = [];
      const { store } = await execute(run, undefined, switching, undefined, 500, log);
      // Each comparison keeps the stderr its own workload wrote: after its switch, not the earlier workloads'.
      expect(store.texts.get('logs/timeslice-spin-c0.stderr.log')).toBe('p0 started\n');
      expect(store.texts.get('logs/timeslice-gemm-c1.stderr.log')).toBe('p1 switched to gemm.py\n');
      expect(store.texts.get('logs/timeslice-infer-c0.stderr.log')).toBe('p0 switched to infer.py\n');
      expect(log.filter((e) => !e.startsWith('cuda') && !e.startsWith('run') && own(e))).toEqual([
        'spawn p0',
        'spawn p1',
        'switch p0 gemm.py',
        'switch p1 gemm.py',
        'switch p0 infer.py',
        'switch p1 infer.py',
        'exit p0',
        'exit p1',
      ]);
      // Each workload's alone is its own plain process, each gone once its workload's last comparison ended.
      expect(log.filter((e) => !own(e) && !e.startsWith('cuda') && !e.startsWith('run'))).toEqual([
        'spawn plain0',
        'exit plain0',
        'spawn plain1',
        'exit plain1',
        'spawn plain2',
        'exit plain2',
      ]);
      const [spin, gemm, infer] = run.clientStarts ?? [];
      expect([spin?.switchedFrom, gemm?.switchedFrom, infer?.switchedFrom]).toEqual([
        undefined,
        'timeslice/spin',
        'timeslice/spin',
      ]);
      expect(gemm?.released).toEqual({ memoryReservedMiB: 100, leftMiB: 4 });
      // A switch costs build and warm-up (100 ms a process here, one after the other on the fake clock), not a
      // start's 500 ms; gemm's plain process is started then (after the next sample, 10 ms): 500 ms.
      expect((gemm?.readyUs ?? 0) - (gemm?.startedUs ?? 0)).toBe(200_000 + 10_000 + 500_000);
      expect(gemm?.startedUs).toBe(spin?.endUs);
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
      expect(run.trials).toHaveLength(3 * 4 * 2);
    });

    it('where this comparison’s processes switch to the next, the first later one that needs its own is prestarted now: it imports for longer', async () => {
      const run = newRun({ minRounds: 2, maxRounds: 2 }, { modes: ['streams', 'timeslice'] });
      const streams = testConfig({ modes: ['streams'] }).streamsWorkloads;
      run.config.streamsWorkloads = streams.filter((w) => w.name === 'spin' || w.name === 'pipeline');
      run.plan = buildPlan(run.config, null).comparisons;
      expect(run.plan.map((c) => c.id)).toEqual(['streams/spin', 'streams/pipeline', 'timeslice/spin']);
      const log: string[] = [];
      await execute(run, undefined, switching, undefined, 0, log);
      const at = (entry: string) => log.indexOf(entry);
      // timeslice/spin's clients are spawned held while streams/spin measures, once, and start after pipeline.
      expect(log.filter((e) => (e.startsWith('spawn') || e.startsWith('switch')) && own(e))).toEqual([
        'spawn p0',
        'spawn p1 held',
        'spawn p2 held',
        'switch p0 pipeline.py',
      ]);
      expect(Math.min(at('cuda p1'), at('cuda p2'))).toBeGreaterThan(at('exit p0'));
      expect(log.filter((e) => e.startsWith('exit') && own(e))).toEqual(['exit p0', 'exit p1', 'exit p2']);
      expect(run.clientStarts?.map((s) => s.prestarted)).toEqual([undefined, undefined, true]);
      expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    });

    it('--fresh-clients, or processes that did not say they switch: new processes for each comparison', async () => {
      for (const [fresh, ready] of [
        [true, switching],
        [false, () => ({ event: 'ready', protocol: 3, workload: 'fake', pid: 0 })],
      ] as const) {
        const run = threeComparisons(fresh);
        const log: string[] = [];
        await execute(run, undefined, ready, undefined, 0, log);
        expect(log.some((e) => e.startsWith('switch'))).toBe(false);
        expect(log.filter((e) => e.startsWith('spawn') && own(e))).toHaveLength(6);
        expect(run.clientStarts?.some((s) => s.switchedFrom !== undefined)).toBe(false);
      }
    });

    it('switches within one mode and one set of processes only: not across modes, tenancy, environments or interpreters', () => {
      const [c] = buildPlan(testConfig({ modes: ['timeslice'] }), null).comparisons as [Comparison];
      const custom = { ...c, workload: { ...c.workload, builtin: false } };
      expect(switchable({}, c, c)).toBe(true);
      expect(switchable({ freshClients: true }, c, c)).toBe(false);
      expect(switchable({}, custom, c)).toBe(false);
      expect(switchable({}, custom, c, true)).toBe(true);
      // Never into a custom command: it may need interpreter options, its own directory or a fresh stdout.
      expect(switchable({}, c, custom)).toBe(false);
      expect(switchable({}, c, { ...c, mode: 'mps' })).toBe(false);
      expect(switchable({}, c, { ...c, tenants: 2 })).toBe(false);
      expect(switchable({}, c, { ...c, clientEnv: [{ GPUSHARE_CPUS: '1' }, {}] })).toBe(false);
      expect(switchable({}, c, { ...c, clientEnv: c.clientEnv.slice(0, 1) })).toBe(false);
      expect(
        switchable({}, c, { ...c, workload: { ...c.workload, argv: ['python3.11', ...c.workload.argv.slice(1)] } }),
      ).toBe(false);
    });
  });

  describe('in-process tenancy', () => {
    const tenancy = { modes: ['streams' as const], clients: 4, tenancy: true, streamsWorkloads: [] };
    const readyV3 = (env: Record<string, string>) => ({
      event: 'ready',
      protocol: 3,
      workload: 'fake',
      pid: 0,
      tenants: Number(env.GPUSHARE_TENANTS ?? 1),
      memoryReservedMiB: 73 * Number(env.GPUSHARE_TENANTS ?? 1),
      graphPoolMiB: null,
    });

    it('starts one process of N tenants, maps tenant k to client k, and analyses it as the multi-process modes', async () => {
      const run = newRun({ minRounds: 6, maxRounds: 6 }, tenancy);
      const spawned: Array<Record<string, string>> = [];
      await execute(run, undefined, readyV3, spawned);
      expect(run.plan.map((c) => c.id)).toEqual(['streams/spin@4']);
      // One process of 4 tenants, and the plain process alone, of no tenants.
      expect(spawned.map((env) => [env.GPUSHARE_TENANTS, env.GPUSHARE_PLAIN])).toEqual([
        ['4', undefined],
        [undefined, '1'],
      ]);
      const contended = run.trials.find((t) => t.arm === 'contended');
      expect(contended?.status).toBe('ok');
      expect(contended?.status === 'ok' && contended.clients.map((c) => [c.client, c.stepHostUs])).toEqual([
        [0, 40],
        [1, 40],
        [2, 40],
        [3, 40],
      ]);
      expect(run.clientStarts?.[0]).toMatchObject({ processes: 1, memoryReservedMiB: 292, graphPoolMiB: null });
      const analysis = analyze(run);
      expect(analysis.metrics.find((m) => m.metric.id === 'streams/spin@4/slowdown')?.stats.value).toBe(4);
      expect(analysis.metrics.find((m) => m.metric.id === 'streams/spin@4/aggregate-throughput')?.stats.value).toBe(1);
      expect(analysis.comparisons[0]?.stepHost).toEqual({ soloUs: 10, contendedUs: 40 });
    });

    it('fails the trial, naming the tenants, where the process answers for other tenants than it was asked', async () => {
      const run = newRun({ minRounds: 2, maxRounds: 2 }, tenancy);
      const c = run.plan[0] as Comparison;
      c.clientEnv = c.clientEnv.map((env) => ({ ...env, FAKE_DROP_TENANT: '1' }));
      await execute(run, undefined, readyV3);
      // The plain process alone answers as one client; the first trial of the tenants fails.
      const [alone, first, ...rest] = run.trials;
      expect(alone).toMatchObject({ arm: 'alone', status: 'ok' });
      expect(first?.arm).toBe('solo-c0');
      expect(first).toMatchObject({
        status: 'failed',
        client: 0,
        exitCode: null,
        reason: 'workload "spin" (4 tenants) answered for tenants [] instead of [0]',
      });
      expect(rest.every((t) => t.status === 'skipped')).toBe(true);
    });

    it("skips, with the workload's words, a process that cannot make its tenants (unsupported)", async () => {
      const run = newRun({ minRounds: 6, maxRounds: 6 }, { ...tenancy, modes: ['green'] });
      await execute(run, undefined, () => ({ event: 'error', message: 'at most 16 tenants here', unsupported: true }));
      expect(run.stops).toMatchObject([
        {
          comparisonId: 'green/spin@4',
          reason: 'unsupported',
          detail: 'workload "spin" (4 tenants) cannot run here: at most 16 tenants here',
        },
      ]);
      expect(new Set(run.trials.map((t) => t.status))).toEqual(new Set(['skipped']));
      // Skipped, not failed; but a run whose every comparison was skipped measured nothing.
      expect(benchOutcome(run, analyze(run))).toEqual({
        exitCode: 3,
        problems: [
          'nothing was measured: green/spin@4 was skipped: workload "spin" (4 tenants) cannot run here: at most 16 tenants here',
        ],
      });
    });

    it('skips a workload of protocol 2, which knows no tenants, naming the protocol it needs', async () => {
      const run = newRun({ minRounds: 6, maxRounds: 6 }, tenancy);
      await execute(run, undefined, () => ({ event: 'ready', protocol: 2, workload: 'fake', pid: 0 }));
      expect(run.stops[0]).toMatchObject({
        reason: 'unsupported',
        detail:
          'workload "spin" speaks protocol 2, which has no tenants: in-process modes need protocol 3 (gpushare_protocol.serve speaks it)',
      });
    });
  });
});
