/**
 * plan --run <fleet run>, end to end: a fleet run of gpushare's simulated servers (the built CLI's
 * bench --serve --fleet, three servers of two kinds under capped MPS, traffic enough for every server's
 * attainment interval to close above 99% at a generous SLO), then plan's answer and files, and verify on
 * the simulator's node checking every limit they declare. The same run with one server's windows made to
 * miss: no mode advised, exit 3, the server named, no files.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fleetFromCapacity } from '../../harness/deploy/fleet/facts.js';
import { FLEET_LAUNCHER } from '../../harness/deploy/fleet/files.js';
import type { ServeRun } from '../../harness/serve/record.js';
import type { VerifyRun } from '../../harness/verify/record.js';
import { cli, ROOT, runCli, tempDir, userErrorOf } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const sim = (gb: number) =>
  `node ${SERVER} --port {port} --model-gb ${gb} --gpu-gb 80 --mem-fraction {mem_fraction} --tokens-per-s 100000 --ttft-ms 1 --itl-ms 1`;

function fleetFile(): string {
  const file = path.join(tempDir('gpushare-fleet-'), 'fleet.yaml');
  writeFileSync(
    file,
    [
      'seed: 5',
      'traffic:',
      '  rate_per_s: 1000',
      '  arrivals: {law: constant}',
      '  input_tokens: {law: fixed, tokens: 4}',
      '  output_tokens: {law: fixed, tokens: 2}',
      'servers:',
      `  - {name: big, model: sim-big, command: "${sim(20)}", mem_fraction: 0.3, share: 0.35, count: 2, thread_pct: 45}`,
      `  - {name: small, model: sim-small, command: "${sim(1)}", mem_fraction: 0.05, share: 0.3}`,
      '',
    ].join('\n'),
  );
  return file;
}

describe('plan --run <fleet run>', () => {
  it("gives the mode, each server's memory and thread settings, files that verify checks, and no mode where a server missed", async () => {
    const run = path.join(tempDir(), 'run');
    // 1.5 s windows: 450 to 525 requests per server, past the 381 a 99% claim needs with none missed.
    const bench = await cli([
      'bench',
      '--serve',
      '--fleet',
      fleetFile(),
      '--modes',
      'mps-threads',
      '--window-s',
      '1.5',
      '--rounds',
      '1',
      '--warmup-s',
      '0',
      '--slo-ttft-p99-ms',
      '5000',
      '--ceiling-step-s',
      '0.05',
      '--out',
      run,
    ]);
    expect(bench.exitCode, bench.stderr).toBe(0);
    const record = JSON.parse(readFileSync(path.join(run, 'serve.json'), 'utf8')) as ServeRun;
    const gpuMiB = record.fingerprint.gpus[0]?.memoryTotalMiB as number;
    const limit = (fraction: number) => Math.floor(fraction * gpuMiB) + 1024;

    const out = path.join(tempDir(), 'plan');
    const plan = await runCli(['plan', '--run', run, '--out', out]);
    expect(plan.exitCode, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('mode: mps-threads, every server within TTFT p99 <= 5000 ms');
    expect(plan.stdout).toContain('servers per GPU: 3 (big 2, small 1)');
    // Memory: its share of the GPU's MiB, rounded down, in GiB to two decimals.
    const gib = (fraction: number) => Number((Math.floor(fraction * gpuMiB) / 1024).toFixed(2));
    expect(plan.stdout).toContain(`big-1 (big, sim-big): ${gib(0.3)} GiB (mem_fraction 0.3)`);
    expect(plan.stdout).toMatch(
      new RegExp(
        `big-2 \\(big, sim-big\\): [\\d.]+ GiB \\(mem_fraction 0\\.3\\), CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${limit(0.3)}M, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=45`,
      ),
    );
    // The small server's cap is its share of the requests, 30%.
    expect(plan.stdout).toContain(
      `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${limit(0.05)}M, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30`,
    );
    expect(plan.stdout).toContain(`big-1: ${sim(20)}`);
    expect(plan.stderr).toContain(`gpushare verify ${out}`);
    const launcher = readFileSync(path.join(out, FLEET_LAUNCHER), 'utf8');
    expect(launcher).toContain(
      `  big-1) export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${limit(0.3)}M CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=45 ;;`,
    );
    expect(
      readFileSync(path.join(out, 'gpushare-fleet-deployments.yaml'), 'utf8').match(/kind: Deployment/g),
    ).toHaveLength(3);

    const json = await runCli(['plan', '--run', run, '--json']);
    const answer = JSON.parse(json.stdout) as { mode: string; serversPerGpu: number; perKind: Record<string, number> };
    expect(answer).toMatchObject({ mode: 'mps-threads', serversPerGpu: 3, perKind: { big: 2, small: 1 } });

    // verify on the simulator's node: every limit the files declare, each distinct one probed once.
    const checked = path.join(tempDir(), 'verify');
    const verify = await runCli(['verify', out, '--out', checked]);
    expect(verify.exitCode, verify.stdout).toBe(0);
    const rows = (JSON.parse(readFileSync(path.join(checked, 'verify.json'), 'utf8')) as VerifyRun).rows;
    expect(rows.filter((r) => r.id.startsWith('fleet.')).map((r) => [r.id, r.verdict])).toEqual([
      ['fleet.thread-pct.30', 'enforced'],
      ['fleet.thread-pct.45', 'enforced'],
      [`fleet.pinned-mem.${limit(0.05)}`, 'enforced'],
      [`fleet.pinned-mem.${limit(0.3)}`, 'enforced'],
    ]);
    // A node that ignores the memory limit fails it.
    const ignored = await runCli(['verify', out, '--out', path.join(tempDir(), 'v2')], {
      FAKE_NODE: 'ignore-mem-limit',
    });
    expect(ignored.exitCode).toBe(1);
    expect(ignored.stdout).toMatch(/^not enforced +fleet\.pinned-mem\./m);
    // A node whose MPS daemon does not start: every limit the launcher declares is a row, "not measured".
    const v3 = path.join(tempDir(), 'v3');
    const down = await runCli(['verify', out, '--out', v3], { FAKE_MPS: 'no-start' });
    const downRows = (JSON.parse(readFileSync(path.join(v3, 'verify.json'), 'utf8')) as VerifyRun).rows;
    expect(down.exitCode).not.toBe(0);
    expect(downRows.filter((r) => r.id.startsWith('fleet.')).map((r) => [r.id, r.verdict])).toEqual([
      ['fleet.thread-pct.30', 'not measured'],
      ['fleet.thread-pct.45', 'not measured'],
      [`fleet.pinned-mem.${limit(0.05)}`, 'not measured'],
      [`fleet.pinned-mem.${limit(0.3)}`, 'not measured'],
    ]);

    // capacity's largest fleets (the interface capacity --serve --fleet feeds): that mode's fleet, per kind,
    // with each kind's settings from the run's fleet; past 48 under MPS refused.
    const capacity = fleetFromCapacity(record, [
      { mode: 'timeslice', servers: 3, interval: [2, 4], perKindCounts: { big: 1, small: 2 } },
      { mode: 'mps-threads', servers: 6, interval: [5, 7], perKindCounts: { big: 2, small: 4 } },
    ]);
    expect(capacity.choice).toEqual({ mode: 'mps-threads', tiedWith: [] });
    expect(capacity.servers.map((s) => `${s.label} ${s.memLimitMiB} ${s.threadPct}`)).toEqual([
      `big-1 ${limit(0.3)} 45`,
      `big-2 ${limit(0.3)} 45`,
      ...[1, 2, 3, 4].map((k) => `small-${k} ${limit(0.05)} 30`),
    ]);
    // Where the run recorded each server's cap (a sized fleet's share moves it), plan gives each its own.
    const measured = fleetFromCapacity(record, [
      {
        mode: 'mps-threads',
        servers: 3,
        interval: [3, 3],
        perKindCounts: { big: 1, small: 2 },
        measured: [
          { label: 'big', kind: 'big', threadPct: 60 },
          { label: 'small-1', kind: 'small', threadPct: 25 },
          { label: 'small-2', kind: 'small', threadPct: 15 },
        ],
      },
    ]);
    expect(measured.servers.map((s) => `${s.label} ${s.memLimitMiB} ${s.threadPct}`)).toEqual([
      `big ${limit(0.3)} 60`,
      `small-1 ${limit(0.05)} 25`,
      `small-2 ${limit(0.05)} 15`,
    ]);
    expect(
      userErrorOf(() =>
        fleetFromCapacity(record, [{ mode: 'mps', servers: 49, interval: [48, 50], perKindCounts: { small: 49 } }]),
      ),
    ).toMatch(/^49 servers under mps: /);

    // The same run, one server's windows made to miss: no mode kept every server, none advised.
    const missed = path.join(tempDir(), 'missed');
    cpSync(run, missed, { recursive: true });
    const edited = JSON.parse(readFileSync(path.join(missed, 'serve.json'), 'utf8')) as ServeRun;
    for (const w of edited.fleet?.windows[0]?.windows.flat() ?? [])
      if (w.server === 3) w.good = Math.floor(w.requests / 2);
    writeFileSync(path.join(missed, 'serve.json'), JSON.stringify(edited));
    const none = path.join(tempDir(), 'none');
    const noPlan = await runCli(['plan', '--run', missed, '--out', none]);
    expect(noPlan.exitCode).toBe(3);
    expect(noPlan.stdout).toContain('mps-threads: missed: small missed;');
    expect(noPlan.stdout).toContain('none advised: no mode kept every server within TTFT p99 <= 5000 ms');
    expect(noPlan.stderr).toContain('no files written');
    expect(existsSync(none)).toBe(false);
  });
});
