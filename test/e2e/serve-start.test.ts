/**
 * A fleet's servers started at once (--start parallel, issue #49) with real processes of gpushare's
 * simulated server: each waits, before it answers ready, until every server of the set has started
 * (--ready-peers), so one at a time could never bring up the first; a server that fails is named,
 * every one of them, and none of the set is left running.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { type MemberPlan, startMembers } from '../../harness/serve/copies.js';
import { resolveServeOptions } from '../../harness/serve/options.js';
import type { ServeSettings } from '../../harness/serve/record.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { ROOT, tempDir } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');

function settings(start: 'serial' | 'parallel'): ServeSettings {
  const resolved = resolveServeOptions(
    { serve: 'x --port {port}', start, readyTimeoutS: '600', readyPath: '/v1/models' },
    'bench',
  ).settings;
  return { ...resolved, serverCpus: null, generatorCpu: null, generatorCpus: null };
}

function set(start: 'serial' | 'parallel') {
  return {
    runner: execaRunner,
    clock: systemClock,
    reaper: { add: () => () => undefined },
    abort: new AbortController().signal,
    settings: settings(start),
    gpuUuid: 'GPU-test',
  };
}

/** `n` servers that each wait for `n` to have started into `dir`; `extra` of server k's command line. */
function plans(n: number, dir: string, extra: (k: number) => string = () => ''): MemberPlan[] {
  return Array.from({ length: n }, (_, k) => ({
    index: k + 1,
    label: `server ${k + 1}`,
    command: (port: number) =>
      `node ${SERVER} --port ${port} --peers-dir ${dir} --ready-peers ${n} --ttft-ms 1 --itl-ms 1${extra(k)}`,
    env: {},
  }));
}

describe('startMembers: --start parallel', () => {
  it('starts every server at once, each awaited ready: a set that serial start could not bring up', async () => {
    const dir = tempDir('gpushare-peers-');
    const got = await startMembers(set('parallel'), plans(12, dir));
    expect(got.problem).toBeNull();
    try {
      expect(got.copies?.members.map((m) => m.label)).toEqual(Array.from({ length: 12 }, (_, k) => `server ${k + 1}`));
      expect(new Set(got.copies?.members.map((m) => m.spec.port)).size).toBe(12);
      expect(readdirSync(dir)).toHaveLength(12);
    } finally {
      expect(await got.copies?.stop()).toEqual([]);
    }
  }, 240_000);

  it("a server that does not come up: named, its wait not the others' deadline, and every server stopped", async () => {
    const dir = tempDir('gpushare-peers-');
    // Server 4 refuses to start (its model does not fit its memory share): the five others wait for six
    // to have started, which never happens, so only the failure ends the start before their deadline.
    const bad = (k: number) => (k === 3 ? ' --model-gb 10 --gpu-gb 1 --mem-fraction 0.5' : '');
    const got = await startMembers(set('parallel'), plans(6, dir, bad));
    if (got.copies !== null) {
      await got.copies.stop();
      throw new Error('the set came up with a server that exits at start');
    }
    expect(got.failed).toEqual(['server 4']);
    expect(got.problem).toMatch(/^server 4 \(node .*\) did not come up: exited with status 1 before it was ready/);
    expect(got.problem).toContain('does not fit its memory share');
    // Every one that started was stopped: none of the pids in the peers directory runs, and no process
    // started with this peers directory is left (on a busy machine some of the five may have been stopped
    // before they wrote their pid, so the directory holds one to five).
    const pids = readdirSync(dir).map(Number);
    expect(pids.length).toBeGreaterThanOrEqual(1);
    expect(pids.length).toBeLessThanOrEqual(5);
    for (const pid of pids) expect(await isRunning(pid), `pid ${pid}`).toBe(false);
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(`--peers-dir ${dir}`));
    expect(left).toEqual([]);
  }, 240_000);
});
