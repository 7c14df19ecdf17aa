/**
 * The load generator's worker processes (load/pool.ts, the built dist/harness/load/worker-main.js)
 * against the fake OpenAI-compatible server: a load dealt over several workers merges to the counts
 * one sender gives; a worker killed mid-window fails the load at once, in one line, and fails the
 * copy's window as a typed outcome; a closed loop's first sends are staggered, not one burst at t=0;
 * the ceiling sweep runs with several null servers.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { LoadGeneratorFailed, LoadPool } from '../../harness/load/pool.js';
import type { RequestSpec } from '../../harness/load/request.js';
import { firstSendMs, monotonicMs, runLoad } from '../../harness/load/run.js';
import { measureCeiling } from '../../harness/serve/ceiling.js';
import { ServerMember } from '../../harness/serve/server-member.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { fakeOpenAiServer, OPENAI_SERVER } from '../fake-openai-server.js';

const started: ChildProcess[] = [];
const pools: LoadPool[] = [];

afterEach(async () => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
  await Promise.all(pools.splice(0).map((p) => p.stop()));
});

const fakeServer = (...args: string[]) => fakeOpenAiServer(started, ...args);

const spec = (baseUrl: string): RequestSpec => ({
  baseUrl,
  api: 'completions',
  model: 'fake',
  inputTokens: 8,
  maxTokens: 4,
  timeoutMs: 10_000,
});

const pool = (size: number) => {
  const p = new LoadPool(execaRunner, size, null);
  pools.push(p);
  return p;
};

/** Resolves once `condition` holds, polling; rejects past `deadlineMs`. */
async function until(condition: () => boolean, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`not within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a pool of generator workers', () => {
  it('deals an open-loop load over 3 workers and merges to the counts one sender gives', async () => {
    const baseUrl = await fakeServer('--ttft-ms', '5', '--itl-ms', '1');
    const load = {
      request: spec(baseUrl),
      schedule: { kind: 'constant', ratePerS: 100 } as const,
      durationMs: 400,
      inputTokensMax: 12,
    };
    const alone = await runLoad(load);
    const three = pool(3);
    expect(await three.start()).toBeNull();
    const merged = await three.run(load);
    // 100 req/s for 0.4 s: arrivals at 0, 10, …, 390 ms.
    expect(alone.requests).toBe(40);
    expect(merged.requests).toBe(alone.requests);
    expect(merged.outcomes).toEqual(alone.outcomes);
    expect(merged.e2e.count).toBe(alone.e2e.count);
    expect(merged.workers?.map((w) => w.requests)).toEqual([14, 13, 13]);
    // One clock: every record's scheduled time is the merged run's start plus its arrival.
    const scheduled = merged.records.map((r) => Math.round(r.scheduledMs - merged.startMs)).sort((a, b) => a - b);
    expect(scheduled).toEqual(Array.from({ length: 40 }, (_, i) => i * 10));
    // With one worker, the same counts again.
    const one = await pool(1).run(load);
    expect(one.requests).toBe(40);
    expect(one.workers).toHaveLength(1);
  });

  it('fails the load at once, in one line, when a worker is killed mid-window, and the copy window with it', async () => {
    const baseUrl = await fakeServer('--ttft-ms', '5', '--itl-ms', '5');
    const two = pool(2);
    expect(await two.start()).toBeNull();
    const startMs = monotonicMs();
    const running = two.run({
      request: spec(baseUrl),
      schedule: { kind: 'closed', concurrency: 4 },
      durationMs: 20_000,
    });
    const failed = running.catch((error: unknown) => error);
    await until(() => monotonicMs() - startMs > 200, 5000);
    process.kill(two.pids[1] as number, 'SIGKILL');
    const error = await failed;
    expect(error).toBeInstanceOf(LoadGeneratorFailed);
    expect((error as Error).message).toMatch(/^the load generator's worker 2 of 2 exited on SIGKILL/);
    // Long before the 20 s window would have ended: no hang.
    expect(monotonicMs() - startMs).toBeLessThan(10_000);
    // The next load starts a new worker in its place.
    const again = await two.run({
      request: spec(baseUrl),
      schedule: { kind: 'constant', ratePerS: 20 },
      durationMs: 100,
    });
    expect(again.requests).toBe(2);
  });

  it("a copy whose worker dies answers its window's collect as failed, not a hang", async () => {
    const one = pool(1);
    expect(await one.start()).toBeNull();
    const member = new ServerMember(
      execaRunner,
      systemClock,
      {
        index: 1,
        label: 'copy 1',
        command: `${process.execPath} ${OPENAI_SERVER} --port {port} --ttft-ms 5 --itl-ms 5`.replace('{port}', '0'),
        env: {},
        port: 1,
        readyPath: '/v1/models',
        request: { api: 'completions', inputTokens: 8, maxTokens: 4, timeoutMs: 1000 },
        inputTokensMax: null,
        cpus: null,
      },
      one,
    );
    member.release({
      startAtUs: systemClock.monotonicUs(),
      schedule: { kind: 'closed', concurrency: 2 },
      durationMs: 20_000,
    });
    await until(() => one.pids.length === 1, 5000);
    process.kill(one.pids[0] as number, 'SIGKILL');
    const reply = await member.collect(15_000, new AbortController().signal);
    expect(reply).toMatchObject({ kind: 'failed', exitCode: null });
    expect(reply.kind === 'failed' && reply.reason).toMatch(/worker 1 of 1 exited on SIGKILL/);
  });

  it('staggers a closed loop: slot i first sends at i × span ÷ c, not all at t=0', async () => {
    // Each request lasts longer than the stagger span: a slot's first send is the first of its records.
    const baseUrl = await fakeServer('--ttft-ms', '400', '--itl-ms', '1');
    const c = 8;
    const durationMs = 2000;
    const r = await pool(2).run({ request: spec(baseUrl), schedule: { kind: 'closed', concurrency: c }, durationMs });
    const first = r.records
      .map((x) => x.sentMs - r.startMs)
      .sort((a, b) => a - b)
      .slice(0, c);
    expect(firstSendMs(c - 1, c, durationMs)).toBe(175);
    // Never early (the wait re-checks the clock after its timer): the 8th first send is 175 ms in, at least.
    for (const [i, at] of first.entries()) expect(at).toBeGreaterThanOrEqual(firstSendMs(i, c, durationMs) - 1e-6);
    // ... and staggered: the first send comes before the last slot's time (a loop that waited for the last
    // slot's time to send any would not). Not a spread between two sends: under load the first can be late.
    expect(first[0]).toBeLessThan(firstSendMs(c - 1, c, durationMs));
  });
});

describe("the generator's ceiling", () => {
  it('sweeps with several null servers, the load split over them and over the workers', async () => {
    const steps = await measureCeiling(execaRunner, {
      inputTokens: 8,
      inputTokensMax: null,
      outputTokens: 4,
      api: 'completions',
      slo: { ttftP99Ms: 1000, itlMaxMs: null },
      cpus: null,
      nullServers: 3,
      generator: pool(2),
      stepMs: 300,
      rates: [30, 60],
    });
    expect(steps.problem).toBeNull();
    expect(steps.steps.length).toBeGreaterThanOrEqual(1);
    const w = steps.steps[0]?.window;
    // One run per null server, each sent by both workers.
    expect(w?.copies).toBe(3);
    expect(w?.workers).toHaveLength(2);
    expect(w?.requests).toBe(w?.workers?.reduce((sum, x) => sum + x.requests, 0));
    expect(w?.sentPerS).toBeGreaterThan(0);
  });
});
