/**
 * The scheduler against a deterministic fake client: an in-process workload that answers each run
 * command with the window it was asked for and a rate set by how many clients run at once, on a
 * fake clock. No processes, no sleeps: the same inputs give the same run.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { buildPlan } from '../../harness/bench/plan.js';
import type { ProgressEvent } from '../../harness/bench/progress.js';
import type { Run } from '../../harness/bench/record/schema.js';
import type { RunStore } from '../../harness/bench/record/store.js';
import { executeRun } from '../../harness/bench/scheduler.js';
import type { Clock } from '../../harness/core/clock.js';
import type { ChildHandle, ProcessRunner } from '../../harness/core/process.js';
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
function fakeRunner(clock: Clock & { now: number }, wobble: (n: number) => number = () => 1): ProcessRunner {
  return {
    exec: async () => ({ status: 'exited', exitCode: 0, stdout: '', stderr: '' }),
    which: async () => null,
    spawn(): ChildHandle {
      const listeners: Array<(line: string, tooLong: boolean) => void> = [];
      let resolveExit: (info: { exitCode: number; signal: null }) => void = () => undefined;
      const exited = new Promise<{ exitCode: number; signal: null }>((resolve) => (resolveExit = resolve));
      const say = (message: object) =>
        queueMicrotask(() => {
          for (const l of listeners) l(JSON.stringify(message), false);
        });
      let windows = 0;
      const child: ChildHandle = {
        // No PID: closing a client looks for its real descendants by PID, and this one has none.
        pid: undefined,
        onLine: (listener) => {
          listeners.push(listener);
          say({ event: 'ready', protocol: 1, workload: 'fake', pid: 0 });
        },
        writeLine: (line) => {
          const cmd = JSON.parse(line) as {
            cmd: string;
            trial: string;
            startAtUs: number;
            durationMs: number;
            clients: number;
          };
          if (cmd.cmd === 'exit') {
            queueMicrotask(() => resolveExit({ exitCode: 0, signal: null }));
            return true;
          }
          const end = cmd.startAtUs + cmd.durationMs * 1000;
          const iterations = Math.round(((cmd.durationMs / 1000) * 1000 * wobble(windows++)) / cmd.clients);
          clock.now = Math.max(clock.now, end);
          say({
            event: 'result',
            trial: cmd.trial,
            windowStartUs: cmd.startAtUs,
            windowEndUs: end,
            iterations,
            gpuMs: cmd.durationMs,
            latenciesMs: [],
            chunkIterations: 1,
          });
          return true;
        },
        closeStdin: () => queueMicrotask(() => resolveExit({ exitCode: 0, signal: null })),
        stderrTail: () => '',
        killGroup: () => undefined,
        exited,
      };
      return child;
    },
  };
}

function memoryStore(): RunStore & { saves: number } {
  const store = {
    dir: '/nowhere',
    saves: 0,
    saveRun: async () => void store.saves++,
    writeText: async () => undefined,
    saveRunSync: () => undefined,
  };
  return store;
}

function newRun(policy: Partial<Run['config']['roundPolicy']>): Run {
  const base = testConfig({ modes: ['timeslice'], windowMs: 100, releaseLeadMs: 100 });
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
    fingerprint: { gpus: [] } as unknown as Run['fingerprint'],
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

async function execute(run: Run, wobble?: (n: number) => number) {
  const clock = fakeClock();
  const events: ProgressEvent[] = [];
  const store = memoryStore();
  await executeRun(run, {
    runner: fakeRunner(clock, wobble),
    clock,
    store,
    progress: { emit: (e) => events.push(e) },
    sampler: { samples: [], status: () => ({ status: 'ok', error: null }), stop: async () => undefined },
    reaper: new Reaper(),
    signal: new AbortController().signal,
    startMps: async () => ({ ok: false, reason: 'not in this test', logs: [] }),
  });
  return { events, store };
}

describe('scheduler (deterministic fake client)', () => {
  it('runs the minimum rounds in ABBA order and stops at ci-target when the ratio is exact', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 40 });
    const { store } = await execute(run);
    expect(run.trials.map((t) => `${t.round}:${t.arm}`).slice(0, 6)).toEqual([
      '0:solo-c0',
      '0:solo-c1',
      '0:contended',
      '1:contended',
      '1:solo-c1',
      '1:solo-c0',
    ]);
    expect(run.trials).toHaveLength(18);
    expect(run.stops).toEqual([
      { comparisonId: 'timeslice/spin', rounds: 6, reason: 'ci-target', halfWidths: { 'timeslice/spin/slowdown': 0 } },
    ]);
    expect(analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin/slowdown')?.stats.value).toBe(2);
    // Every finished trial is saved before the next one starts.
    expect(store.saves).toBeGreaterThanOrEqual(18);
  });

  it('adds rounds while the CI is wide, and the analysis uses every one of them', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 12, ciTarget: 0.0001 });
    // Solo windows alternate ±5%: the slowdown wobbles and never reaches a ±0.01% target.
    const { events } = await execute(run, (n) => (n % 2 === 0 ? 1.05 : 0.95));
    expect(run.stops[0]).toMatchObject({ rounds: 12, reason: 'max-rounds' });
    expect(run.trials).toHaveLength(36);
    const slowdown = analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin/slowdown');
    expect(slowdown?.metric.rounds).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // The progress total grows visibly, round by round, past the planned 18.
    const totals = events.flatMap((e) => (e.type === 'trial' ? [e.total] : []));
    expect(totals[0]).toBe(18);
    expect(totals.at(-1)).toBe(36);
  });

  it('stops at the time budget: a comparison gets its share of what is left', async () => {
    const run = newRun({ minRounds: 6, maxRounds: 40, ciTarget: 0.0001, timeBudgetS: 1 });
    await execute(run, (n) => (n % 2 === 0 ? 1.05 : 0.95));
    // A round is 3 trials of 100 ms windows with a 100 ms release lead on the fake clock: 0.6 s.
    expect(run.stops[0]).toMatchObject({ rounds: 8, reason: 'time-budget' });
  });
});
