/**
 * Bench's client pool, each policy alone, with the simulator's workload processes (simulator/bin/python3)
 * as clients: which processes a comparison gets, which it keeps, starts early or stops, and what the
 * run records of their start. The trial loop that uses the pool is test/unit/scheduler.test.ts's.
 */
import { describe, expect, it } from 'vitest';
import { buildPlan } from '../../harness/bench/comparisons.js';
import { choosePolicy } from '../../harness/bench/pool/choose.js';
import { FreshPool } from '../../harness/bench/pool/fresh.js';
import { createPool } from '../../harness/bench/pool/index.js';
import type { ClientPool, PoolContext, PoolMode } from '../../harness/bench/pool/types.js';
import { WarmPool } from '../../harness/bench/pool/warm.js';
import type { Comparison, Run } from '../../harness/bench/record/schema.js';
import { systemClock } from '../../harness/core/clock.js';
import type { ProcessRunner } from '../../harness/core/process.js';
import { usableCpus } from '../../harness/system/cpus.js';
import { Reaper } from '../../harness/system/proc/reaper.js';
import { createRunner } from '../../harness/system/proc/runner.js';
import { fakePath } from '../helpers.js';
import { testConfig } from './config-fixture.js';

const MODE: PoolMode = { env: {}, daemon: null };

/** A time-sliced run of `workloads`' comparisons, 2 clients each; `custom`: each runs spin's script as a command of the user's. */
function newRun(workloads: string[], custom = false): Run {
  const base = testConfig({ modes: ['timeslice'] });
  const config = { ...base, contentionWorkloads: base.contentionWorkloads.filter((w) => workloads.includes(w.name)) };
  const plan = buildPlan(config, null);
  const spin = plan.comparisons.find((c) => c.workload.name === 'spin')?.workload;
  if (custom && spin) for (const c of plan.comparisons) c.workload = { ...spin, name: 'mine', builtin: false };
  return {
    ...({} as Run),
    config,
    plan: plan.comparisons,
    modes: plan.modes,
    stops: [],
    trials: [],
    fingerprint: { gpus: [], host: { cpus: 8 } } as unknown as Run['fingerprint'],
  };
}

/** The simulator's python3 as every client, each spawn's environment kept in `spawns`. */
function context(run: Run, over: Partial<PoolContext> = {}, env: Record<string, string> = {}) {
  const inner = createRunner({ ...process.env, PATH: fakePath(), ...env });
  const spawns: Array<Record<string, string>> = [];
  const runner: ProcessRunner = {
    exec: (argv, options) => inner.exec(argv, options),
    which: (name) => inner.which(name),
    spawn: (argv, options) => {
      spawns.push(options?.env ?? {});
      return inner.spawn(argv, options);
    },
  };
  const warnings: string[] = [];
  const ctx: PoolContext = {
    run,
    runner,
    clock: systemClock,
    reaper: new Reaper(),
    signal: new AbortController().signal,
    store: { writeText: async () => undefined },
    warn: (message) => warnings.push(message),
    startDaemon: async () => ({ ok: false, reason: 'no MPS in this test', logs: [] }),
    gpuUuid: 'GPU-0',
    cpus: usableCpus(run.fingerprint.host),
    prestarted: null,
    sampledAfter: async () => undefined,
    ...over,
  };
  return { ctx, spawns, warnings };
}

/** Comparison `i` of the run's plan. */
const at = (run: Run, i: number) => run.plan[i] as Comparison;

/** acquire and ready, which must say ready. */
async function ready(pool: ClientPool, c: Comparison) {
  const lease = await pool.acquire(c, MODE);
  expect(await pool.ready(lease)).toEqual({ kind: 'ready' });
  return lease;
}

describe('choosePolicy: which pool a run gets', () => {
  const all = ['fresh', 'warm'] as const;
  it.each([
    [{ freshClients: true }, all, 'fresh'],
    [{ freshClients: false }, all, 'warm'],
    // warm deleted from the registry: fresh, which is always there.
    [{ freshClients: false }, ['fresh'], 'fresh'],
  ] as const)('%j among %j: %s', (wanted, registered, expected) => {
    expect(choosePolicy(wanted, registered)).toBe(expected);
  });

  it('createPool builds the chosen one', () => {
    const run = newRun(['spin']);
    expect(createPool({ freshClients: true }, context(run).ctx)).toBeInstanceOf(FreshPool);
    expect(createPool({}, context(run).ctx)).toBeInstanceOf(WarmPool);
  });
});

describe('fresh pool (--fresh-clients)', () => {
  it('starts each comparison’s processes when it begins and stops them when it ends', async () => {
    const run = newRun(['spin', 'gemm']);
    const { ctx } = context(run);
    const pool = new FreshPool(ctx);
    const spin = await ready(pool, at(run, 0));
    expect(spin.group.clients.every((c) => c.running)).toBe(true);
    await pool.release(spin, true);
    expect(spin.group.clients.some((c) => c.running)).toBe(false);
    const gemm = await ready(pool, at(run, 1));
    const pids = (lease: typeof spin) => lease.group.clients.map((c) => c.pid);
    expect(pids(gemm).some((pid) => pids(spin).includes(pid))).toBe(false);
    await pool.release(gemm, true);
    await pool.close();
    expect(run.clientStarts?.map((s) => Object.keys(s).sort())).toEqual([
      ['comparisonId', 'endUs', 'graphPoolMiB', 'memoryReservedMiB', 'processes', 'readyUs', 'startedUs'],
      ['comparisonId', 'endUs', 'graphPoolMiB', 'memoryReservedMiB', 'processes', 'readyUs', 'startedUs'],
    ]);
    expect(run.clientStarts?.[0]).toMatchObject({ comparisonId: 'timeslice/spin', processes: 2 });
  });
});

describe("the plain process, every mode's alone", () => {
  it('is one process per workload, outside the mode, kept while a later comparison measures it alone', async () => {
    const base = testConfig({ modes: ['timeslice', 'mps'] });
    const config = { ...base, contentionWorkloads: base.contentionWorkloads.filter((w) => w.name === 'spin') };
    const { comparisons, modes } = buildPlan(config, null);
    const run: Run = { ...newRun(['spin']), config, plan: comparisons, modes };
    const { ctx, spawns } = context(run);
    const pool = new FreshPool(ctx);
    // As the scheduler does: a comparison's stop is recorded before its processes go back.
    const stop = (id: string) => run.stops.push({ comparisonId: id, rounds: 6, reason: 'ci-target', halfWidths: {} });
    const timeslice = await ready(pool, at(run, 0));
    stop(at(run, 0).id);
    await pool.release(timeslice, true);
    expect(timeslice.plain?.running).toBe(true);
    const mps = await pool.acquire(at(run, 1), { env: { CUDA_MPS_PIPE_DIRECTORY: '/tmp/pipe' }, daemon: null });
    expect(await pool.ready(mps)).toEqual({ kind: 'ready' });
    expect(mps.plain).toBe(timeslice.plain);
    // 2 time-sliced clients, the plain process, 2 MPS clients; the plain one never saw the MPS pipe.
    expect(spawns.map((env) => env.CUDA_MPS_PIPE_DIRECTORY ?? '-')).toEqual(['-', '-', '-', '/tmp/pipe', '/tmp/pipe']);
    stop(at(run, 1).id);
    await pool.release(mps, true);
    expect(mps.plain?.running).toBe(false);
    await pool.close();
  });

  it('that never says ready fails the comparison, naming it', async () => {
    const run = newRun(['spin']);
    run.config = { ...run.config, timeouts: { ...run.config.timeouts, readyMs: 1000 } };
    const { ctx } = context(run, {}, { FAKE_WORKLOAD: 'never-ready', FAKE_WORKLOAD_CLIENT: 'plain' });
    const pool = new FreshPool(ctx);
    const lease = await pool.acquire(at(run, 0), MODE);
    const readiness = await pool.ready(lease);
    expect(readiness).toMatchObject({ kind: 'failed', client: 0, reply: { kind: 'timeout' } });
    if (readiness.kind === 'failed') expect(readiness.clients[0]?.label).toBe('workload "spin" (plain, alone)');
    await pool.release(lease, false);
    await pool.close();
  });
});

describe('warm pool', () => {
  it('switches a finished comparison’s processes to the next built-in workload and records the switch', async () => {
    const run = newRun(['spin', 'gemm']);
    const pool = new WarmPool(context(run).ctx);
    const spin = await ready(pool, at(run, 0));
    expect(spin.carryTo).toMatchObject({ carry: 'switch', next: { id: 'timeslice/gemm' } });
    await pool.release(spin, true);
    expect(spin.group.clients.every((c) => c.running)).toBe(true);
    const gemm = await ready(pool, at(run, 1));
    expect(gemm.group.clients).toEqual(spin.group.clients);
    expect(gemm.group.clients.map((c) => c.lastReady?.workload)).toEqual(['gemm', 'gemm']);
    expect(run.clientStarts?.[1]).toMatchObject({ comparisonId: 'timeslice/gemm', switchedFrom: 'timeslice/spin' });
    // The last comparison's processes have nowhere to go: they exit.
    await pool.release(gemm, true);
    expect(gemm.group.clients.some((c) => c.running)).toBe(false);
    await pool.close();
  });

  it('a comparison that did not finish as planned keeps nothing: the next one starts its own', async () => {
    const run = newRun(['spin', 'gemm']);
    const { ctx, spawns } = context(run);
    const pool = new WarmPool(ctx);
    const spin = await ready(pool, at(run, 0));
    await pool.release(spin, false);
    expect(spin.group.clients.some((c) => c.running)).toBe(false);
    const gemm = await ready(pool, at(run, 1));
    // Each comparison's 2 clients, and each workload's plain process.
    expect(spawns).toHaveLength(6);
    await pool.release(gemm, true);
    await pool.close();
  });

  it('prestarts the next comparison’s processes held once its command said it holds, and tells them to start at its turn', async () => {
    const run = newRun(['spin', 'gemm'], true);
    const { ctx, spawns } = context(run);
    const pool = new WarmPool(ctx);
    const first = await ready(pool, at(run, 0));
    // Custom commands do not switch: the next comparison's own processes, held, import meanwhile.
    expect(first.carryTo).toBeNull();
    // Its 2 clients, its plain process (never held), and the next comparison's 2 clients, held.
    expect(spawns.map((env) => env.GPUSHARE_HOLD ?? '-')).toEqual(['-', '-', '-', '1', '1']);
    await pool.release(first, true);
    const second = await ready(pool, at(run, 1));
    expect(second.prestarted).toBe(true);
    // The same command: the plain process serves the second comparison too.
    expect(spawns).toHaveLength(5);
    expect(second.plain).toBe(first.plain);
    expect(run.clientStarts?.[1]).toMatchObject({ comparisonId: 'timeslice/gemm', prestarted: true });
    await pool.release(second, true);
    await pool.close();
    expect(second.group.clients.some((c) => c.running)).toBe(false);
  });

  it('close tells held processes of comparisons that never ran to exit', async () => {
    const run = newRun(['spin', 'gemm'], true);
    const pool = new WarmPool(context(run).ctx);
    const first = await ready(pool, at(run, 0));
    await pool.release(first, false);
    await pool.close();
    const second = await pool.acquire(at(run, 1), MODE); // nothing held any more: started anew
    expect(second.prestarted).toBe(false);
    await pool.release(second, false);
  });
});
