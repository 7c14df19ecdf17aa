/**
 * bench --serve's per-request evidence and warm-up, through the built CLI against the simulated server:
 * the requests file holds exactly the run's requests (each kept window's count, each warm-up window's,
 * the ceiling's), also after kill -9 and --resume; a server that warms up slowly (--warm-ms) is warmed
 * past the minimum until its trend is gone.
 */
import { readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { loadRequests, type RequestLine } from '../../harness/serve/requests-log.js';
import { WARMUP_TREND_WINDOWS } from '../../harness/serve/verdicts.js';
import { cli, ROOT, tempDir, until } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const served = (out: string): ServeRun => JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;

function ownServer(): string {
  const script = path.join(tempDir('gpushare-serve-'), 'server.cjs');
  symlinkSync(SERVER, script);
  return script;
}

/** Lines per window, keyed `mode×copies kind arm index`. */
function perWindow(lines: readonly RequestLine[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const l of lines) {
    const key = `${l.mode}×${l.copies} ${l.kind} ${l.arm} ${l.index}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** The requests file against serve.json: every kept window's requests, and one block of lines per warm-up window. */
async function expectRequestsMatch(out: string): Promise<void> {
  const run = served(out);
  const read = await loadRequests(out);
  expect(read?.cut).toBe(false);
  const lines = read?.lines ?? [];
  expect(run.requests).toEqual({ file: 'requests.jsonl.gz', lines: lines.length });
  const counts = perWindow(lines);
  const expected = new Map<string, number>();
  run.ceiling.forEach((c, i) => {
    expected.set(`null×null ceiling null ${i}`, c.window.requests);
  });
  for (const g of run.groups) {
    g.rounds.forEach((r, i) => {
      expected.set(`${g.mode}×${g.copies} round dedicated ${i}`, r.dedicated.requests);
      expected.set(`${g.mode}×${g.copies} round shared ${i}`, r.shared.requests);
    });
    for (const w of g.warmup ?? [])
      for (let i = 0; i < w.windows; i++) expected.set(`${g.mode}×${g.copies} warm-up ${w.arm} ${i}`, -1);
  }
  // The ceiling's unkept first step.
  expected.set('null×null warm-up null 0', -1);
  expect([...counts.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, n] of expected) if (n >= 0) expect(counts.get(key), key).toBe(n);
}

describe('bench --serve keeps every request', () => {
  it('warms a slowly warming server past the minimum, and keeps exactly the requests of its windows', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli([
      'bench',
      '--serve',
      `node ${ownServer()} --port {port} --ttft-ms 50 --itl-ms 2 --warm-ms 8000`,
      '--modes',
      'timeslice',
      '--copies',
      '1',
      '--window-s',
      '0.5',
      '--ceiling-step-s',
      '0.05',
      '--output-tokens',
      '8',
      '--input-tokens',
      '8',
      '--rounds',
      '2',
      '--warmup-s',
      '0.5',
      '--warmup-max-s',
      '20',
      '--out',
      out,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const g = served(out).groups[0];
    expect(g?.warmup?.map((w) => `${w.arm} ${w.stop}`)).toEqual(['dedicated steady', 'shared steady']);
    // Each copy slow for 8 s from its first request: warmed past the 0.5 s minimum and past the trend test's
    // first 5 windows (where a rule without the test would stop), until its TTFT stopped falling.
    for (const w of g?.warmup ?? []) {
      expect(w.durationMs).toBeGreaterThan(500);
      expect(w.windows).toBeGreaterThan(WARMUP_TREND_WINDOWS);
    }
    await expectRequestsMatch(out);
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toMatch(/warm-up until steady/);
  }, 120_000);

  it('after kill -9 and --resume, holds the requests of the windows kept and none of the group measured again', async () => {
    const out = path.join(tempDir(), 'run');
    const child = cli([
      'bench',
      '--serve',
      `node ${ownServer()} --port {port} --ttft-ms 5 --itl-ms 1`,
      '--modes',
      'timeslice,mps',
      '--copies',
      '1',
      '--window-s',
      '0.2',
      '--ceiling-step-s',
      '0.05',
      '--output-tokens',
      '8',
      '--rounds',
      '6',
      '--warmup-s',
      '0.5',
      '--out',
      out,
    ]);
    // Killed once the second group has requests in the file.
    await until(
      async () => ((await loadRequests(out).catch(() => null))?.lines ?? []).some((l) => l.mode === 'mps'),
      90_000,
      "the mps group's first requests kept",
    );
    child.kill('SIGKILL');
    await child;
    const resumed = await cli(['bench', '--resume', out]);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(served(out).groups.map((g) => `${g.status} ${g.rounds.length}`)).toEqual(['measured 6', 'measured 6']);
    await expectRequestsMatch(out);
  }, 240_000);
});
