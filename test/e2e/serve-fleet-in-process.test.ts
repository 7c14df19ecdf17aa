/**
 * bench --serve --fleet's in-process arm (#49 Build 5) on the simulated server: the file's in_process command
 * starts one process serving every server's model (--models {models}), and each server's traffic names its
 * own model there. The simulator answers a model it does not serve with 404, so a request that named the
 * wrong one would fail: every request ok is the proof that each server's requests reached its own model.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeRun } from '../../harness/serve/record.js';
import { loadRequests } from '../../harness/serve/requests-log.js';
import { cli, expectOneLineError, ROOT, tempDir } from '../helpers.js';
import { searchArgs } from './fleet-kit.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const SIM = `node ${SERVER} --port {port} --ttft-ms 5 --itl-ms 1`;

function fleetFile(inProcess: string): string {
  const file = path.join(tempDir('gpushare-fleet-'), 'fleet.yaml');
  writeFileSync(
    file,
    [
      'seed: 3',
      'traffic:',
      '  rate_per_s: 30',
      '  popularity: {law: zipf, s: 1}',
      '  arrivals: {law: poisson}',
      '  input_tokens: {law: fixed, tokens: 8}',
      '  output_tokens: {law: fixed, tokens: 4}',
      'servers:',
      `  - {name: big, model: sim-big, command: "${SIM}", mem_fraction: 0.2}`,
      `  - {name: small, model: sim-small, command: "${SIM}", mem_fraction: 0.05, count: 2}`,
      `in_process: {command: "${inProcess}"}`,
      '',
    ].join('\n'),
  );
  return file;
}

const FLAGS = [
  '--ceiling-step-s',
  '0.05',
  '--modes',
  'timeslice',
  '--window-s',
  '1',
  '--rounds',
  '1',
  '--warmup-s',
  '0',
  '--slo-ttft-p99-ms',
  '1000',
];

describe('bench --serve --fleet: the in-process arm', () => {
  it('runs one process for every model after the modes, each server naming its own model, and reports it beside them', async () => {
    const out = path.join(tempDir(), 'run');
    const fleet = fleetFile(`${SIM} --models {models}`);
    const result = await cli(['bench', '--serve', '--fleet', fleet, ...FLAGS, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    expect(run.groups.map((g) => `${g.mode} ${g.copies} ${g.status}`)).toEqual([
      'timeslice 3 measured',
      'in-process 3 measured',
    ]);
    const f = run.fleet;
    if (f === undefined) throw new Error('no fleet section');
    const arm = f.windows.find((w) => w.mode === 'in-process');
    const plain = f.windows.find((w) => w.mode === 'timeslice');
    // The same arrivals as the processes got, every one answered by the model its server names.
    expect(arm?.windows[0]?.map((x) => `${x.server} ${x.requests} ${x.ok}`)).toEqual(
      plain?.windows[0]?.map((x) => `${x.server} ${x.requests} ${x.requests}`),
    );
    expect(arm?.windows[0]?.every((x) => x.requests > 0)).toBe(true);
    const log = await loadRequests(out);
    const armLines = log?.lines.filter((l) => l.mode === 'in-process' && l.kind === 'round') ?? [];
    expect(armLines.length).toBe(arm?.windows[0]?.reduce((n, x) => n + x.requests, 0));
    expect(new Set(armLines.map((l) => l.server))).toEqual(new Set([1, 2, 3]));
    // One process holds every model: no server has a memory figure of its own, and each says why.
    const memory = f.memory?.filter((m) => m.mode === 'in-process') ?? [];
    expect(memory.map((m) => [m.server, m.memoryMiB])).toEqual([
      [1, null],
      [2, null],
      [3, null],
    ]);
    expect(memory.every((m) => m.reason !== null && m.reason !== '')).toBe(true);
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(report).toMatch(/### in-process: /);
    // plan lists the arm beside the modes and never deploys it: its files are for processes.
    const plan = await cli(['plan', '--run', out]);
    expect(plan.stdout.replace(/\s+/g, ' ')).toMatch(/in-process: [^\n]*\(beside the modes: plan deploys processes\)/);
  });

  it('requests naming models the process does not serve measure nothing: the arm fails, exit 3', async () => {
    // {models} filled, but the process ignores it and serves one other model: every request gets 404.
    const out = path.join(tempDir(), 'run');
    const fleet = fleetFile(`${SIM} --models other=x --ignored {models}`);
    const result = await cli(['bench', '--serve', '--fleet', fleet, ...FLAGS, '--out', out]);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    const timeslice = run.fleet?.windows.find((w) => w.mode === 'timeslice');
    expect(timeslice?.windows[0]?.every((x) => x.ok === x.requests)).toBe(true);
    // A window in which no request ended ok measured nothing: the arm fails, and so does the run (exit 3).
    const arm = run.groups.find((g) => g.mode === 'in-process');
    expect(arm?.status).toBe('failed');
    expect(arm?.reason).toMatch(/in-process warm-up: the window measured nothing: none of \d+ requests ended ok/);
    expect(result.exitCode).toBe(3);
  });

  it('the one process exiting during a window fails the arm with how it ended and its last words, as a copy does', async () => {
    // It ends by itself 2.5 s after it starts: inside the 4 s warm-up window that follows its readiness.
    const stubborn = path.join(ROOT, 'test', 'fakes', 'servers', 'stubborn-server.cjs');
    const out = path.join(tempDir(), 'run');
    const fleet = fleetFile(`node ${stubborn} --port {port} --ttft-ms 5 --itl-ms 1 --lifetime-s 2.5 --models {models}`);
    const flags = FLAGS.map((f, k) => (FLAGS[k - 1] === '--window-s' ? '4' : f));
    const result = await cli(['bench', '--serve', '--fleet', fleet, ...flags, '--out', out]);
    expect(result.exitCode, result.stderr).toBe(3);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    const arm = run.groups.find((g) => g.mode === 'in-process');
    expect(arm?.status).toBe('failed');
    expect(arm?.reason).toMatch(
      /in-process warm-up: in-process big stopped answering: exited with status 0 during the window .*; its log ends: stubborn-server: its 2\.5 s are over \| port \d+$/,
    );
  });

  it('a dry run names the arm; capacity says it does not measure it', async () => {
    const fleet = fleetFile(`${SIM} --models {models}`);
    const bench = await cli(['bench', '--serve', '--fleet', fleet, ...FLAGS, '--dry-run']);
    expect(bench.exitCode, bench.stderr).toBe(0);
    expect(bench.stdout).toMatch(/in-process arm: after the modes, one process[\s\S]*serving all 3 models/);
    const capacity = await cli(['capacity', '--serve', '--fleet', fleet, '--modes', 'timeslice', '--dry-run']);
    expect(capacity.exitCode, capacity.stderr).toBe(0);
    expect(capacity.stdout).toMatch(/in-process arm: not\s+measured/);
  });

  it('capacity --serve --fleet measures processes only, and says so in the run and on stderr', async () => {
    const out = path.join(tempDir(), 'run');
    const fleet = fleetFile(`${SIM} --models {models}`);
    const result = await cli([
      'capacity',
      '--serve',
      '--fleet',
      fleet,
      ...searchArgs(),
      '--max-servers',
      '1',
      '--out',
      out,
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'serve.json'), 'utf8')) as ServeRun;
    expect(run.groups.map((g) => g.mode)).toEqual(['timeslice']);
    expect(run.warnings.filter((w) => w.includes('its in_process arm is not measured'))).toHaveLength(1);
    expect(result.stderr.replace(/\s+/g, ' ')).toContain(
      'its in_process arm is not measured: capacity sizes fleets of processes',
    );
  });

  it('an in_process command without {models} is one line, exit 2', async () => {
    const fleet = fleetFile(`${SIM}`);
    const result = await cli(['bench', '--serve', '--fleet', fleet, ...FLAGS, '--out', path.join(tempDir(), 'run')]);
    expect(result.exitCode).toBe(2);
    expectOneLineError(result.stderr, 'in_process.command: put {models}');
  });
});
