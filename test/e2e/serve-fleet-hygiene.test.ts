/**
 * The process hygiene of `capacity --serve --fleet` (the built CLI, on the simulated server): a search
 * starts and stops a fleet at each size, and however it ends no server of it, nor a child of one, is
 * left. One Ctrl-C keeps the steps measured and --resume goes on from them; a second Ctrl-C while the
 * servers are being stopped; kill -9 of the harness (its watchdog); and servers that daemonise or never
 * come up, each a step over or a mode failed with one line, as the single-server path records them.
 * Every server carries a tag of its test in its argv, so its processes are found among other suites'.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { loadRequests } from '../../harness/serve/requests-log.js';
import { findProcesses } from '../../harness/system/proc/process-table.js';
import { cli, ROOT, tempDir, until } from '../helpers.js';
import { oneKindFleet, searchArgs } from './fleet-kit.js';
import { jsonOnDisk } from './lifecycle-kit.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const FAKES = path.join(ROOT, 'test', 'fakes', 'servers');

/** The hygiene tests' search: the kit's, with servers given 5 s to come up. */
const search = ({ rounds = 2, readyTimeoutS = 5 } = {}) => searchArgs({ rounds, readyTimeoutS });

/** A tag for a test's servers, and its live processes (leaders and children alike: each carries it). */
function tagged(): { tag: string; processes: () => Promise<number[]> } {
  const tag = randomUUID();
  return {
    tag,
    processes: async () => (await findProcesses('node')).filter((p) => p.argv.includes(tag)).map((p) => p.pid),
  };
}

const sim = (tag: string) => `node ${SERVER} --port {port} --ttft-ms 2 --itl-ms 1 --tag ${tag}`;

/** The run started, with its stderr as it comes (the progress lines say which step is under way). */
function started(args: string[]) {
  const child = cli(['capacity', '--serve', ...args], {}, { timeoutMs: 120_000 });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let ended = false;
  void child.finally(() => {
    ended = true;
  });
  return { child, stderr: () => stderr, ended: () => ended };
}

const served = (out: string) => jsonOnDisk<ServeRun>(path.join(out, 'serve.json'));
const stepsOf = (run: ServeRun | null) => run?.fleet?.search?.modes[0]?.steps ?? [];
const sizes = (run: ServeRun | null) => stepsOf(run).map((s) => `${s.servers} ${s.why} ${s.verdict}`);

/** Every process of the test's servers gone, within a deadline (a stop is bounded: 10 s, then SIGKILL). */
async function expectNoServer(processes: () => Promise<number[]>): Promise<void> {
  await until(async () => (await processes()).length === 0, 20_000, 'every server process of the run to be gone');
}

/** The whole search of the first test's fleet, on a GPU that holds 2 of its servers. */
const WHOLE = ['2 search within', '4 search over', '3 search over', '2 replicate within', '3 replicate over'];

describe('capacity --serve --fleet: no server outlives the run', () => {
  it('one Ctrl-C mid-search: exit 130, steps kept, servers gone; --resume goes on from the kept steps', async () => {
    // A GPU that holds 2 servers (--max-peers): the search is 2 within, 4 and 3 over (a server refused to
    // start), then the boundary again: 2 within, 3 over (the second test of serve-fleet-capacity.test.ts).
    const { tag, processes } = tagged();
    const dir = tempDir('gpushare-fleet-hyg-');
    const peers = path.join(dir, 'peers');
    mkdirSync(peers);
    const file = oneKindFleet(dir, `${sim(tag)} --peers-dir ${peers} --max-peers 2`, 2);
    const out = path.join(dir, 'run');
    // 4 rounds of 1 s: the replicate of 2 runs for 4 s after its warm-up is logged, time for the Ctrl-C to land
    // inside it on a busy machine (with 2 rounds it once landed after it).
    const run = started(['--fleet', file, ...search({ rounds: 4 }), '--out', out]);
    // Stopped while the replicate of 2 runs: its servers up, three steps measured before it, and a window of
    // its warm-up logged (the resume must drop it).
    const logged = async () => (await loadRequests(out))?.lines.some((l) => l.kind === 'warm-up' && l.index === 3);
    await until(
      async () =>
        run.ended() ||
        (run.stderr().includes('timeslice: 2 servers (replicate)') &&
          (await processes()).length === 2 &&
          (await logged()) === true),
      90_000,
      "the replicate step's first window logged",
    );
    expect(run.ended(), run.stderr()).toBe(false);
    run.child.kill('SIGINT');
    const result = await run.child;
    expect(result.exitCode, result.stderr).toBe(130);
    expect(result.stderr).toContain(`gpushare capacity --resume ${out}`);
    await expectNoServer(processes);
    const before = served(out);
    expect(before?.status).toBe('interrupted');
    expect(before?.groups.map((g) => g.status)).toEqual(['pending']);
    // Three steps, or on a machine slow to deliver the signal four: some kept, some left to the resume.
    const kept = stepsOf(before).length;
    expect([3, 4]).toContain(kept);
    expect(sizes(before)).toEqual(WHOLE.slice(0, kept));

    const resumed = await cli(['capacity', '--resume', out], {}, { timeoutMs: 120_000 });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    await expectNoServer(processes);
    const after = served(out);
    expect(after?.status).toBe('complete');
    expect(after?.groups.map((g) => g.status)).toEqual(['measured']);
    expect(sizes(after)).toEqual(WHOLE);
    // The kept steps as they were, windows and all: measured once, not again by the resume.
    expect(stepsOf(after).slice(0, kept)).toEqual(stepsOf(before));
    // The requests of the step cut short went with it: each step's lines are its windows' requests, once.
    const log = await loadRequests(out);
    const lines = (k: number) => log?.lines.filter((l) => l.mode === 'timeslice' && l.kind === 'step' && l.index === k);
    expect(stepsOf(after).map((_, k) => lines(k)?.length)).toEqual(
      stepsOf(after).map((x) => x.windows.flat().reduce((a, w) => a + w.requests, 0)),
    );
    expect(after?.requests?.lines).toBe(log?.lines.length);
    // ... its warm-up's too: every line from step `kept` on was sent after the resume began.
    const resumedAtMs = Date.parse(after?.resumes?.[0]?.at ?? '');
    const late = log?.lines.filter((l) => l.mode === 'timeslice' && l.index >= kept) ?? [];
    // With 4 kept, the one step left is 3 servers, which do not all start: it sends nothing.
    expect(late.length > 0).toBe(kept === 3);
    expect(late.filter((l) => l.windowAtMs < resumedAtMs)).toEqual([]);
    expect(resumed.stdout).toContain('timeslice: 2 servers, interval 2–2, limited by the SLO');
  }, 180_000);

  it('a second Ctrl-C while the servers are being stopped leaves none of them', async () => {
    // Servers that ignore SIGTERM once the step runs: the first Ctrl-C's stop waits out its bound, and the
    // second comes in it.
    const { tag, processes } = tagged();
    const dir = tempDir('gpushare-fleet-hyg-');
    const stubborn = path.join(dir, 'stubborn');
    const termLog = path.join(dir, 'sigterm.log');
    const serve = `node ${path.join(FAKES, 'stubborn-server.cjs')} --port {port} --ttft-ms 2 --itl-ms 1 --stubborn-while ${stubborn} --term-log ${termLog} --tag ${tag}`;
    const out = path.join(dir, 'run');
    const run = started(['--fleet', oneKindFleet(dir, serve, 2), ...search(), '--out', out]);
    // The search's servers up (the baseline's is one alone); from 2 the search only grows the fleet.
    await until(async () => run.ended() || (await processes()).length >= 2, 90_000, "the search's servers up");
    expect(run.ended(), run.stderr()).toBe(false);
    writeFileSync(stubborn, '');
    run.child.kill('SIGINT');
    // Every live server asked to stop, and holding out: the harness is within its stop bound.
    const termed = async () => {
      let log = '';
      try {
        log = readFileSync(termLog, 'utf8');
      } catch {
        return false;
      }
      const asked = new Set(log.trim().split('\n').map(Number));
      const live = await processes();
      return live.length > 0 && live.every((pid) => asked.has(pid));
    };
    await until(async () => run.ended() || (await termed()), 30_000, 'every server asked to stop (SIGTERM, ignored)');
    expect(run.ended(), run.stderr()).toBe(false);
    run.child.kill('SIGINT');
    const result = await run.child;
    // 130, or killed by the second SIGINT as Node tears down (lifecycle-kit.ts expectAfterStop says why).
    expect([
      { exitCode: 130, signal: undefined },
      { exitCode: undefined, signal: 'SIGINT' },
    ]).toContainEqual({ exitCode: result.exitCode, signal: result.signal });
    await expectNoServer(processes);
    expect(served(out)?.status).toBe('interrupted');
  }, 120_000);

  it('kill -9 of the harness: its watchdog kills the servers and the children that left their group', async () => {
    // Each server a leader that stays and a daemon it forked into a session of its own.
    const { tag, processes } = tagged();
    const dir = tempDir('gpushare-fleet-hyg-');
    const serve = `node ${path.join(FAKES, 'daemonising-server.cjs')} --leader stay --port {port} --ttft-ms 2 --itl-ms 1 --lifetime-s 600 --tag ${tag}`;
    const out = path.join(dir, 'run');
    const run = started(['--fleet', oneKindFleet(dir, serve, 2), ...search(), '--out', out]);
    // The search's servers up (the baseline's is one alone); from 2 the search only grows the fleet.
    await until(
      async () => run.ended() || (await processes()).length >= 4,
      90_000,
      "the search's leaders and their daemons up",
    );
    expect(run.ended(), run.stderr()).toBe(false);
    run.child.kill('SIGKILL');
    const result = await run.child;
    expect(result.signal).toBe('SIGKILL');
    await expectNoServer(processes);
    expect(served(out)?.status).toBe('running');
  }, 180_000);

  it.each([
    [
      'daemonises (its leader exits)',
      (tag: string) =>
        `node ${path.join(FAKES, 'daemonising-server.cjs')} --leader exit --port {port} --ttft-ms 2 --itl-ms 1 --lifetime-s 600 --tag ${tag}`,
      // Seen before it was ready, or, where its daemon answered first, during the window (serve.test.ts).
      /exited with status 0 .*daemonises/,
      /^(not every server started|warm-up|round 1): /,
    ],
    [
      'never answers its ready path',
      (tag: string) => `${sim(tag)} --mode never-ready`,
      /did not come up: not ready within 1 s/,
      /^not every server started: /,
    ],
  ] as const)(
    'a server that %s: each step a typed outcome in one line, exit 3, nothing left',
    async (_, command, why, stop) => {
      const { tag, processes } = tagged();
      const dir = tempDir('gpushare-fleet-hyg-');
      const out = path.join(dir, 'run');
      const result = await cli(
        [
          'capacity',
          '--serve',
          '--fleet',
          oneKindFleet(dir, command(tag), 2),
          ...search({ readyTimeoutS: 1 }),
          '--out',
          out,
        ],
        {},
        { timeoutMs: 120_000 },
      );
      expect(result.exitCode, result.stderr).toBe(3);
      await expectNoServer(processes);
      const run = served(out) as ServeRun;
      expect(run.status).toBe('complete');
      // The baseline's server alone, failed with why; 2 servers over (not every one started); 1 fails the mode.
      expect(run.fleet?.baseline.map((b) => b.status)).toEqual(['failed']);
      expect(run.fleet?.baseline[0]?.reason).toMatch(why);
      expect(sizes(run)).toEqual(['2 search over']);
      const over = stepsOf(run)[0]?.earlyStop ?? '';
      expect(over).toMatch(stop);
      expect(over).toMatch(why);
      const group = run.groups[0];
      expect(group?.status).toBe('failed');
      expect(group?.reason).toMatch(why);
      for (const line of [over, group?.reason ?? '']) expect(line).not.toContain('\n');
    },
    120_000,
  );
});
