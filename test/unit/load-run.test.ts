/**
 * Load runs of harness/load against the fake OpenAI-compatible server (simulator/openai-server.cjs, a
 * child process): measured TTFT and ITL match the fake's timing within bounds a busy 2-core machine
 * keeps; each hostile mode is its outcome in the result; latency counts from the schedule, so a
 * stalled server or a stalled generator shows in it, and a generator that sent late is refused.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { type RequestRecord, type RequestSpec, sendRequest } from '../../harness/load/request.js';
import { generatorLagProblem, runLoad, summarize } from '../../harness/load/run.js';
import { MAX_LINE_CHARS } from '../../harness/load/sse.js';
import { fakeOpenAiServer } from '../fake-openai-server.js';

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

const fakeServer = (...args: string[]) => fakeOpenAiServer(started, ...args);

const spec = (baseUrl: string, over: Partial<RequestSpec> = {}): RequestSpec => ({
  baseUrl,
  api: 'completions',
  model: 'fake',
  inputTokens: 32,
  maxTokens: 8,
  timeoutMs: 10_000,
  ...over,
});

describe('a load run against the fake server', () => {
  it.each(['completions', 'chat'] as const)(
    'closed loop (%s): every request ok, TTFT and ITL as the fake times them',
    async (api) => {
      const baseUrl = await fakeServer('--ttft-ms', '60', '--itl-ms', '15');
      const r = await runLoad({
        request: spec(baseUrl, { api }),
        schedule: { kind: 'closed', concurrency: 2 },
        durationMs: 800,
      });
      expect(r.failures).toEqual([]);
      expect(r.outcomes.ok).toBe(r.requests);
      expect(r.requests).toBeGreaterThanOrEqual(2);
      expect(r.records.every((x) => x.outputTokens === 8 && x.itlMs.length === 7)).toBe(true);
      // Timers fire no earlier than asked (1 ms of rounding); a busy machine only adds.
      expect(r.ttft.p50Ms).toBeGreaterThanOrEqual(59);
      expect(r.ttft.p50Ms).toBeLessThan(60 + 80);
      expect(r.itl.p50Ms).toBeGreaterThanOrEqual(14);
      expect(r.itl.p50Ms).toBeLessThan(15 + 40);
      // e2e ≈ TTFT + 7 gaps; the rates follow from the records.
      expect(r.e2e.p50Ms).toBeGreaterThanOrEqual(60 + 7 * 14);
      expect(r.outputTokensPerS).toBeCloseTo(r.requestsPerS * 8, 6);
    },
  );

  it.each([
    ['never-ready', 'timeout', 'no complete response within 400 ms'],
    ['http-500', 'http-error', 'HTTP 500'],
    ['cut', 'cut', 'mid-response'],
    ['garbage', 'malformed', 'not JSON'],
    ['ignore-max-tokens', 'overlong', '16 tokens for max_tokens 8'],
  ] as const)('a server in mode %s: every request is %s, named', async (mode, outcome, detail) => {
    const baseUrl = await fakeServer('--mode', mode, '--ttft-ms', '5', '--itl-ms', '2');
    const r = await runLoad({
      request: spec(baseUrl, { timeoutMs: 400 }),
      schedule: { kind: 'constant', ratePerS: 10 },
      durationMs: 300,
    });
    expect(r.requests).toBe(3);
    expect(r.outcomes[outcome]).toBe(3);
    expect(r.failures).toHaveLength(1);
    expect(r.failures[0]).toContain(`${outcome}: `);
    expect(r.failures[0]).toContain(detail);
    expect(r.e2e.count).toBe(0); // no failed request is a latency
  });

  it('a port nobody listens on: every request refused', async () => {
    const baseUrl = await fakeServer();
    const child = started[0] as ChildProcess;
    const gone = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    const r = await runLoad({ request: spec(baseUrl), schedule: { kind: 'constant', ratePerS: 10 }, durationMs: 200 });
    expect(r.outcomes.refused).toBe(2);
    expect(r.failures[0]).toMatch(/^refused: ECONNREFUSED connecting to 127\.0\.0\.1:\d+$/);
  });

  it('a server that resets kept-alive connections: each request sent again once on a new one, all ok', async () => {
    const baseUrl = await fakeServer('--mode', 'reset-reused', '--ttft-ms', '5', '--itl-ms', '1');
    const r = await runLoad({
      request: spec(baseUrl),
      schedule: { kind: 'closed', concurrency: 2 },
      durationMs: 300,
    });
    // Without the resend every second request of each slot was refused (ECONNRESET), as against llama.cpp.
    expect(r.requests).toBeGreaterThanOrEqual(4);
    expect(r.failures).toEqual([]);
    expect(r.outcomes.ok).toBe(r.requests);
  });
});

describe('latency counts from the schedule', () => {
  it('a stalled server (one request at a time): open-loop latency grows with the queue', async () => {
    // Each request takes ≥ 20 + 4·5 = 40 ms served alone: at 40/s the queue grows by 15 ms a request.
    const baseUrl = await fakeServer('--serial', '--ttft-ms', '20', '--itl-ms', '5');
    const r = await runLoad({
      request: spec(baseUrl, { maxTokens: 5 }),
      schedule: { kind: 'constant', ratePerS: 40 },
      durationMs: 1000,
    });
    expect(r.outcomes.ok).toBe(40);
    const byTime = [...r.records].sort((a, b) => a.scheduledMs - b.scheduledMs);
    const mean = (xs: RequestRecord[]) => xs.reduce((s, x) => s + x.e2eMs, 0) / xs.length;
    // The last five waited behind ~35 others: ≥ 35·40 − 35·25 = 525 ms more than the first five.
    expect(mean(byTime.slice(-5)) - mean(byTime.slice(0, 5))).toBeGreaterThan(400);
    expect(r.e2e.p99Ms).toBeGreaterThan(500);
  });

  it('a stalled generator: requests sent late count their lag, and the run is refused', async () => {
    const baseUrl = await fakeServer('--ttft-ms', '5', '--itl-ms', '2');
    // The generator's event loop is blocked for 300 ms from 200 ms in: arrivals meanwhile go out late.
    const block = setTimeout(() => {
      const until = performance.now() + 300;
      while (performance.now() < until);
    }, 200);
    const r = await runLoad({
      request: spec(baseUrl, { maxTokens: 4 }),
      schedule: { kind: 'constant', ratePerS: 50 },
      durationMs: 1000,
    });
    clearTimeout(block);
    expect(r.outcomes.ok).toBe(50);
    expect(r.lag.maxMs).toBeGreaterThan(250);
    for (const x of r.records) expect(x.e2eMs).toBeGreaterThanOrEqual(x.sentMs - x.scheduledMs);
    expect(r.e2e.maxMs).toBeGreaterThan(250);
    expect(generatorLagProblem(r, 50)).toContain('could not sustain this rate');
  });

  it('the refusal is at the generator p99 lag limit (boundary), and never for a closed loop', () => {
    const record = (lagMs: number): RequestRecord => ({
      outcome: 'ok',
      detail: null,
      status: 200,
      scheduledMs: 0,
      sentMs: lagMs,
      ttftMs: lagMs + 10,
      itlMs: [],
      e2eMs: lagMs + 10,
      outputTokens: 1,
      textChunks: 1,
      usageTokens: null,
      requestedTokens: 1,
    });
    const open = { kind: 'constant', ratePerS: 10 } as const;
    expect(generatorLagProblem(summarize(open, 1000, 1000, [record(0), record(9.9)]), 10)).toBeNull();
    expect(generatorLagProblem(summarize(open, 1000, 1000, [record(0), record(10.1)]), 10)).toContain('10.1 ms late');
    expect(
      generatorLagProblem(summarize({ kind: 'closed', concurrency: 1 }, 1000, 1000, [record(500)]), 10),
    ).toBeNull();
  });
});

describe('a server that streams one line of 100 MB', () => {
  it('ends as overlong within the request timeout, having read about the bound, not the 100 MB', async () => {
    const LINE_BYTES = 100 * 1024 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: ');
      // Written as the client reads, until it hangs up or the line is done.
      const more = () => {
        while (sent < LINE_BYTES && !res.destroyed) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const record = await sendRequest(spec(`http://127.0.0.1:${port}`, { timeoutMs: 30_000 }), 0, () =>
        performance.now(),
      );
      expect(record).toMatchObject({
        outcome: 'overlong',
        detail: `a line of more than ${MAX_LINE_CHARS} characters`,
      });
      expect(sent).toBeLessThan(LINE_BYTES);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
