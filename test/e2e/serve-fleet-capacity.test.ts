/**
 * capacity --serve --fleet against gpushare's simulated server (the built CLI): two fast servers and one
 * slow, each with its own rate (a rate the file gives per server is kept at every size). The slow kind's
 * token rate (20 tokens/s, 8 a request: 2.5 requests/s) is a sixth of its load, so any fleet with it misses
 * the SLO; by largest remainder it joins at 2 servers (every kind once n reaches the kinds). So the
 * answer is known: 1 server, bracketed by 2, reached from the file's 3 by halving and then bisecting,
 * with each boundary size measured once more.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { loadRequests } from '../../harness/serve/requests-log.js';
import { cli, ROOT, tempDir } from '../helpers.js';
import { oneKindFleet, searchArgs } from './fleet-kit.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const sim = (tokensPerS: number) => `node ${SERVER} --port {port} --tokens-per-s ${tokensPerS} --ttft-ms 2 --itl-ms 1`;

function fleetFile(): string {
  const file = path.join(tempDir('gpushare-fleet-capacity-'), 'fleet.yaml');
  writeFileSync(
    file,
    [
      'seed: 5',
      'traffic:',
      '  arrivals: {law: poisson}',
      '  input_tokens: {law: fixed, tokens: 8}',
      '  output_tokens: {law: fixed, tokens: 8}',
      'servers:',
      `  - {name: fast, model: sim-fast, command: "${sim(100000)}", mem_fraction: 0.2, count: 2, rate_per_s: 100}`,
      `  - {name: slow, model: sim-slow, command: "${sim(20)}", mem_fraction: 0.2, rate_per_s: 15}`,
      '',
    ].join('\n'),
  );
  return file;
}

describe('capacity --serve --fleet on the simulated server', () => {
  it('finds the largest fleet at the SLO, replicates the boundary and keeps servers between steps', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli([
      'capacity',
      '--serve',
      '--fleet',
      fleetFile(),
      // 500 ms: the fast server's 2 ms holds it on a machine busy with other suites (200 ms did not, once:
      // its 1-server step missed). The slow one's queue grows by 12.5 requests a second, each a 1/20 s turn
      // ahead of a new one's first token: past 500 ms within a second, past 1 s within two.
      ...searchArgs({ windowS: 2, rounds: 3, sloTtftP99Ms: 500 }),
      // A step's missing servers start at once (startMembers under --start parallel), each kept on its own.
      '--start',
      'parallel',
      '--request-timeout-s',
      '10',
      '--out',
      out,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    const mode = run.fleet?.search?.modes[0];
    if (mode === undefined) throw new Error('no search in the record');
    // 5 × 0.2 fills the GPU before their CUDA contexts (768 MiB each) are counted: the top is 4, by memory.
    expect(mode.top).toMatchObject({ servers: 4, limitedBy: 'memory' });
    // 400 requests of the fast server at 1 server: within (381 with none missed is the least), or once more.
    const sizes = mode.steps.filter((s) => s.why !== 'again').map((s) => `${s.servers} ${s.why}`);
    expect(sizes).toEqual(['3 search', '1 search', '2 search', '1 replicate', '2 replicate']);
    expect(mode.steps.filter((s) => s.servers !== 1).every((s) => s.verdict === 'over')).toBe(true);
    // At 2 servers the slow one's queue grows through each window (its load past its token rate): the early
    // stop ends the step in its warm-up, with why, rather than measuring its 3 rounds; the window that showed
    // it is kept, the slow server's attainment in it under 99%. (At 3 its seeded arrivals leave one slice of
    // the window empty: too few points for the trend test; measured, it missed.)
    for (const over of mode.steps.filter((s) => s.servers === 2)) {
      expect(over.earlyStop ?? '').toMatch(
        /^slow's TTFT p50 rose over 5 slices of a window \(Mann–Kendall p 0\.0\d\d\) while it completed \d+% of the requests sent: its queue grows without end$/,
      );
      expect([over.warmupWindows, over.windows.length, over.totals.length]).toEqual([0, 1, 1]);
      const slow = over.windows[0]?.find((w) => w.server === 2);
      expect(slow && slow.good / slow.requests).toBeLessThan(0.99);
    }
    // Every step's requests are kept, each line tagged with its step (rounds as 'step', warm-up apart).
    const log = await loadRequests(out);
    const rounds = (k: number) =>
      log?.lines.filter((l) => l.mode === 'timeslice' && l.kind === 'step' && l.index === k).length;
    expect(mode.steps.map((_, k) => rounds(k))).toEqual(
      mode.steps.map((x) => x.windows.flat().reduce((a, w) => a + w.requests, 0)),
    );
    expect(log?.lines.some((l) => l.mode === 'timeslice' && l.kind === 'warm-up' && l.server !== undefined)).toBe(true);
    expect(run.requests?.lines).toBe(log?.lines.length);
    expect(mode.steps.find((s) => s.servers === 3)?.counts).toEqual([
      { kind: 'fast', count: 2 },
      { kind: 'slow', count: 1 },
    ]);
    // From 3 to 1: two stopped, one kept; from 1 to 2: the slow one started.
    const second = mode.steps[1];
    expect(second && [second.started, second.stopped, second.kept]).toEqual([0, 2, 1]);
    const two = mode.steps.find((s) => s.servers === 2);
    expect(two && [two.started, two.stopped, two.kept]).toEqual([1, 0, 1]);
    expect(two?.fleet.map((s) => `${s.label} ${s.ratePerS}`)).toEqual(['fast 100', 'slow 15']);
    // Each server's mps-threads cap from its share of the sized fleet (100 and 15 of 115 req/s), kept for plan.
    expect(two?.fleet.map((s) => s.threadPct)).toEqual([87, 13]);
    expect(result.stdout).toContain('timeslice: 1 servers, interval 1–1, limited by the SLO');
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toContain('# gpushare capacity --serve --fleet');
    expect(report).toMatch(/\| 1 \| 3 \| search \| fast 2, slow 1 \| 215\.00 \|/);
    expect(report).toContain('## Baseline: each kind alone on the GPU');
    // `gpushare report` rewrites the search's report from the run, byte for byte.
    const rewritten = tempDir('gpushare-fleet-report-');
    expect((await cli(['report', out, '--out', rewritten])).exitCode).toBe(0);
    expect(readFileSync(path.join(rewritten, `${run.id}.md`), 'utf8')).toBe(report);
    // plan reads the search's answer: on CPU no step is checked against the generator's ceiling, so
    // the 1-server answer is unverified and plan names no fleet rather than a capacity it did not measure.
    const plan = await cli(['plan', '--run', out]);
    expect(plan.stdout + plan.stderr).toMatch(/its answer, 1 servers, is unverified/);
    expect(plan.exitCode, plan.stdout).toBe(3);
  }, 600_000);

  it('a size whose servers do not all start is over, with why, and the search goes on below it', async () => {
    // A GPU that holds 2 servers: a third, started beside 2 live ones, exits as out of memory.
    const dir = tempDir('gpushare-fleet-full-');
    const peers = path.join(dir, 'peers');
    mkdirSync(peers);
    const file = oneKindFleet(dir, `${sim(100000)} --peers-dir ${peers} --max-peers 2`, 2);
    const out = path.join(dir, 'run');
    const result = await cli(['capacity', '--serve', '--fleet', file, ...searchArgs(), '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    const steps = run.fleet?.search?.modes[0]?.steps ?? [];
    expect(steps.map((s) => `${s.servers} ${s.why} ${s.verdict}`)).toEqual([
      '2 search within',
      '4 search over',
      '3 search over',
      '2 replicate within',
      '3 replicate over',
    ]);
    expect(steps[1]?.earlyStop).toMatch(/^not every server started: .*out of memory: 2 servers already hold the GPU/);
    expect(result.stdout).toContain('timeslice: 2 servers, interval 2–2, limited by the SLO');
  }, 600_000);

  it('refuses --max-servers outside capacity --serve --fleet in one line', async () => {
    const result = await cli(['bench', '--serve', '--fleet', fleetFile(), '--max-servers', '4']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--max-servers sizes the search of capacity --serve --fleet');
  });
});
