/**
 * bench --serve --fleet on the simulated server (the built CLI), issue #49: servers started at once
 * (--start parallel), each server's memory once warm as the simulated nvidia-smi lists it (a server
 * holds --mem-fraction × --gpu-gb), and a trace replay run twice: the two runs' requests files carry,
 * per server, the same arrivals with the same input and output lengths.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { loadRequests } from '../../harness/serve/requests-log.js';
import { cli, ROOT, tempDir } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const sim = (gb: number) =>
  `node ${SERVER} --port {port} --model-gb ${gb} --gpu-gb 80 --mem-fraction {mem_fraction} --tokens-per-s 5000 --ttft-ms 2 --itl-ms 1`;
const KINDS = ['large 4 0.1 2', 'medium 2 0.05 3', 'small 1 0.025 4'].map((k) => k.split(' '));
const FAST = [
  '--window-s',
  '0.5',
  '--warmup-s',
  '0',
  '--rounds',
  '1',
  '--modes',
  'timeslice',
  '--ceiling-step-s',
  '0.05',
];

function fleetFile(traffic: string[]): string {
  const file = path.join(tempDir('gpushare-fleet-'), 'fleet.yaml');
  const servers = KINDS.map(
    ([name, gb, mem, count]) =>
      `  - {name: ${name}, model: sim-${name}, command: "${sim(Number(gb))}", mem_fraction: ${mem}, count: ${count}}`,
  );
  writeFileSync(file, ['seed: 3', 'traffic:', ...traffic, 'servers:', ...servers, ''].join('\n'));
  return file;
}

const read = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'serve.json'), 'utf8')) as ServeRun;

/** Per server, its kept requests' (arrival offset, input length, output length), sorted: what a replay must repeat. */
async function sent(dir: string): Promise<Map<number, string[]>> {
  const read = await loadRequests(dir);
  if (read === null) throw new Error(`${dir} has no requests file`);
  const per = new Map<number, string[]>();
  for (const l of read.lines.filter((x) => x.kind === 'round' && x.mode === 'timeslice')) {
    if (l.server === undefined || l.inputTokens === undefined)
      throw new Error('a fleet line without its server or length');
    per.set(l.server, [
      ...(per.get(l.server) ?? []),
      `${l.scheduledMs.toFixed(3)} ${l.inputTokens} ${l.requestedTokens}`,
    ]);
  }
  for (const list of per.values()) list.sort();
  return per;
}

describe('bench --serve --fleet: parallel start, memory per server, a trace replayed twice', () => {
  it('starts 9 servers at once, records each one memory, and two replays of its trace send the same requests', async () => {
    const tag = `fleet-${process.pid}-${Date.now()}`;
    const first = path.join(tempDir(), 'first');
    const generated = fleetFile([
      '  rate_per_s: 200',
      '  popularity: {law: zipf, s: 1}',
      '  arrivals: {law: gamma, cv: 2}',
      '  input_tokens: {law: uniform, min: 4, max: 40}',
      '  output_tokens: {law: uniform, min: 2, max: 9}',
    ]);
    const one = await cli(['bench', '--serve', '--fleet', generated, '--start', 'parallel', ...FAST, '--out', first], {
      FAKE_SMI_APPS: tag,
    });
    expect(one.exitCode, one.stderr).toBe(0);
    const run = read(first);
    expect(run.settings.start).toBe('parallel');
    const f = run.fleet;
    if (f === undefined) throw new Error('no fleet section');
    // Each server's memory: its {mem_fraction} of the simulated 80 GB, in MiB, as the fake nvidia-smi lists it.
    const mib = (server: number) => Math.round((f.servers[server - 1]?.memFraction as number) * 80 * 1024);
    expect(f.memory?.filter((m) => m.mode === 'timeslice')).toEqual(
      f.servers.map((s) => ({ mode: 'timeslice', server: s.index, memoryMiB: mib(s.index), reason: null })),
    );
    expect(f.memory?.filter((m) => m.mode === 'baseline')).toEqual(
      [1, 3, 6].map((server) => ({ mode: 'baseline', server, memoryMiB: mib(server), reason: null })),
    );
    // The pre-check, kept: the simulated H200's memory holds the 9 servers' shares and contexts.
    expect(f.fit?.map((c) => `${c.check} ${c.fits}`)).toEqual(['memory true', expect.stringMatching(/^host-cpus /)]);
    const report = readFileSync(path.join(first, 'report.md'), 'utf8');
    expect(report).toContain('## What limits the fleet');
    expect(report).toContain('- fits (timeslice): memory: Σ mem_fraction 0.450 × 143771 MiB');
    expect(report).toContain('| memory (MiB) |');
    expect(report).toMatch(new RegExp(`\\| large-1 \\|.* \\| ${mib(1)} \\|`));

    // The first run's trace replayed twice: per server, the same arrivals and lengths in both requests files.
    const replay = fleetFile([`  trace: ${path.join(first, f.trace.file)}`]);
    const again = [path.join(tempDir(), 'a'), path.join(tempDir(), 'b')];
    for (const out of again) {
      const r = await cli(['bench', '--serve', '--fleet', replay, '--start', 'parallel', ...FAST, '--out', out]);
      expect(r.exitCode, r.stderr).toBe(0);
      // Without FAKE_SMI_APPS the simulated nvidia-smi lists nothing, as the recorded VM did: null, and why.
      expect(read(out).fleet?.memory?.[0]?.reason).toMatch(/^nvidia-smi lists no process on this GPU/);
    }
    const [a, b] = await Promise.all(again.map(sent));
    expect(a?.size).toBe(9);
    expect(b).toEqual(a);
    // And the replays sent what the first run sent: each server its own arrivals.
    expect(a).toEqual(await sent(first));
  }, 240_000);
});
