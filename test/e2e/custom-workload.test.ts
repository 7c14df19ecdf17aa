/**
 * Bringing your own workload: gpushare check says in one line what is wrong with a command, bench
 * checks a custom command first and leaves no run behind when it fails, the Python helper is on the
 * workload's PYTHONPATH, and report and plan use a custom run's measurements as they do a built-in's.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { CUSTOM_RUN, cli, expectOneLineError, FAKE_TORCH, QUICK, ROOT, tempDir, unfolded } from '../helpers.js';

/** A custom command the simulated python3 plays: the built-in infer script, given as a command after --. */
const PLAYED = ['python3', path.join(ROOT, 'workloads', 'infer.py')];

/** The workload of docs/bring-your-own-workload.md, written to a directory of its own: real Python runs it, on a fake torch. */
function docsWorkload(): string {
  const doc = readFileSync(path.join(ROOT, 'docs', 'bring-your-own-workload.md'), 'utf8');
  const code = /```python\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
  expect(code).toContain('from gpushare_protocol import serve');
  expect(code).not.toMatch(/sys\.path\.(insert|append)/);
  const dir = tempDir('gpushare-my-model-');
  writeFileSync(path.join(dir, 'my_model.py'), code);
  return path.join(dir, 'my_model.py');
}

describe('gpushare check -- <cmd>', () => {
  it('passes a workload that speaks the protocol, in one line', async () => {
    const result = await cli(['check', '--', ...PLAYED]);
    expect(result.exitCode, result.stderr).toBe(0);
    // One line, folded to the terminal's 80 columns.
    expect(unfolded(result.stdout).trim().split('\n')).toHaveLength(1);
    expect(unfolded(result.stdout)).toMatch(
      /^check passed: "infer" \(protocol 3, NVIDIA H200 \(SIMULATED\)\) ready in [\d.]+ s; a 200 ms window: \d+ iterations; fixed work: 10 iterations on 2 streams in [\d.]+ ms of GPU time; open loop at \d+ req\/s: \d+ requests served; exited when asked$/,
    );
  });

  it('runs the workload of the docs with the real Python helper, imported from the PYTHONPATH gpushare gives it', async () => {
    const result = await cli(['check', '--', 'python3', docsWorkload(), '--batch', '4'], { PYTHONPATH: FAKE_TORCH });
    expect(result.exitCode, `${result.stdout}${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(/^check passed: "my-model" \(protocol 3, Fake GPU/);
  });

  it.each<[string, Record<string, string>, string[], string[], RegExp]>([
    [
      'a wrong script name',
      {},
      [],
      ['python3', '/nonexistent/my_modle.py'],
      /^check failed at ready: the workload exited with code 2 before sending "ready" \(stderr: .*can't open file '\/nonexistent\/my_modle\.py'/,
    ],
    [
      'a stray print',
      { FAKE_WORKLOAD: 'garbage' },
      [],
      PLAYED,
      /^check failed at fixed-work: the workload printed a line that is not JSON: "Using cuBLAS handle 0x55d"$/,
    ],
    [
      'a workload that never says ready',
      { FAKE_WORKLOAD: 'never-ready' },
      ['--ready-timeout-s', '1'],
      PLAYED,
      /^check failed at ready: the workload did not say ready within 1 s$/,
    ],
    [
      'a window on the wall clock',
      { FAKE_WORKLOAD: 'wall-clock' },
      [],
      PLAYED,
      /^check failed at window: the workload reported a window starting at \d+ µs, \d+ µs from the release time \d+ µs \(CLOCK_MONOTONIC µs expected\)$/,
    ],
    [
      'a crash',
      { FAKE_WORKLOAD: 'crash' },
      [],
      PLAYED,
      /^check failed at fixed-work: the workload exited with code 3 before sending "result" \(stderr: RuntimeError: CUDA error: an illegal memory access was encountered\)$/,
    ],
    [
      'a workload that will not exit',
      { FAKE_WORKLOAD: 'slow-exit' },
      ['--exit-timeout-s', '0.5'],
      PLAYED,
      /^check failed at exit: the workload did not exit within 0\.5 s of the exit command and was killed$/,
    ],
    [
      'a workload without PyTorch',
      {},
      [],
      ['python3', '-c', 'from gpushare_protocol import serve; import sys; sys.exit(serve("x", lambda: None))'],
      /^check failed at ready: the workload reported an error: gpushare_protocol needs PyTorch built for CUDA \(pip install torch\): No module named 'torch'$/,
    ],
  ])('fails %s in one line, exit 1', async (_name, env, flags, argv, line) => {
    const result = await cli(['check', ...flags, '--', ...argv], env);
    expect(result.exitCode).toBe(1);
    // One line, folded to the terminal's 80 columns.
    expect(unfolded(result.stdout).trim().split('\n')).toHaveLength(1);
    expect(unfolded(result.stdout).trim()).toMatch(line);
  });

  it('passes a protocol-1 workload, saying capacity needs protocol 2', async () => {
    const result = await cli(['check', '--', ...PLAYED], { FAKE_WORKLOAD: 'v1' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('no open loop (protocol 1: gpushare capacity needs protocol 2)');
  });

  it('prints the helper directory with --print-helper-path, and needs a command otherwise', async () => {
    const printed = await cli(['check', '--print-helper-path']);
    expect(printed.exitCode).toBe(0);
    expect(readdirSync(printed.stdout.trim())).toContain('gpushare_protocol');
    const none = await cli(['check']);
    expect(none.exitCode).toBe(2);
    expectOneLineError(
      none.stderr,
      'gpushare: check needs the workload command after --, e.g. gpushare check -- python3 my_model.py',
    );
  });
});

describe('bench -- <cmd>', () => {
  it.each<[string, Record<string, string>, string[], string]>([
    [
      'a wrong script name',
      {},
      ['python3', '/nonexistent/my_modle.py'],
      'gpushare: the workload command failed gpushare check at ready: the workload exited with code 2 before sending "ready"',
    ],
    [
      'a stray print',
      { FAKE_WORKLOAD: 'garbage' },
      PLAYED,
      'gpushare: the workload command failed gpushare check at fixed-work: the workload printed a line that is not JSON: "Using cuBLAS handle 0x55d"; nothing was run',
    ],
  ])(
    'checks the command first: %s is refused in one line, and no run directory is left',
    async (_name, env, argv, line) => {
      const out = path.join(tempDir(), 'run');
      const result = await cli(['bench', '--out', out, '--modes', 'timeslice', ...QUICK, '--', ...argv], env);
      expect(result.exitCode).toBe(2);
      const lines = result.stderr.trim().split('\n');
      expect(lines[0]).toMatch(/^gpushare: checking the workload command first \(gpushare check -- python3 /);
      expectOneLineError(lines.slice(1).join('\n'), line);
      expect(existsSync(out)).toBe(false);
    },
  );

  it('checks the command on the first comparison’s client 0, which the run keeps: no process of its own', async () => {
    const out = path.join(tempDir(), 'run');
    const log = path.join(tempDir(), 'fake.log');
    const bench = await cli(['bench', '--out', out, '--modes', 'timeslice', ...QUICK, '--quiet', '--', ...PLAYED], {
      FAKE_LOG: log,
    });
    expect(bench.exitCode, bench.stderr).toBe(0);
    expect(bench.stderr).toMatch(/^gpushare: checking the workload command first \(gpushare check -- python3 /);
    const entries = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { pid: number; client?: string; trial?: string });
    const starts = entries.filter((e) => e.client !== undefined);
    // The comparison's 2 clients, and the plain process that measures the alone arm.
    expect(starts.map((e) => e.client).sort()).toEqual(['0', '1', 'plain']);
    const checked = entries.filter((e) => e.trial?.startsWith('check/'));
    expect(checked.map((e) => e.trial)).toEqual(['check/window', 'check/fixed-work', 'check/open-loop']);
    const client0 = starts.find((e) => e.client === '0')?.pid;
    expect(new Set(checked.map((e) => e.pid))).toEqual(new Set([client0]));
    const run = JSON.parse(readFileSync(path.join(out, 'run.json'), 'utf8')) as Run;
    const solo = run.trials.find((t) => t.arm === 'solo-c0');
    expect(solo?.status === 'ok' && solo.clients[0]?.pid).toBe(client0);
  });

  it('measures a custom command, and report and plan use its measurements', async () => {
    const out = path.join(tempDir(), 'run');
    const bench = await cli(['bench', '--out', out, '--modes', 'timeslice,mps', ...QUICK, '--quiet', '--', ...PLAYED]);
    expect(bench.exitCode, bench.stderr).toBe(0);
    const report = await cli(['report', out, '--out', tempDir()]);
    const md = readFileSync(report.stdout.trim(), 'utf8');
    expect(md).toMatch(
      /^Measured with 2 `custom` clients \(your own command\): \*\*MPS\*\* shared this GPU better\. Time-sliced, each client slowed 2\.\d+× /m,
    );
    expect(md).not.toContain('did not measure both');
    const plan = await cli(['plan', '--explain', '--models', '2', '--mem-gib', '2', '--sm-pct', '20', '--run', out]);
    expect(plan.exitCode, plan.stderr).toBe(0);
    expect(plan.stdout).not.toContain('no run given');
    expect(unfolded(plan.stdout)).toMatch(
      /^ {2}! measured on run \S+ \(NVIDIA H200, driver [\d.]+\) with 2 custom clients: slowdown 1\.1\d×/m,
    );
    expect(unfolded(plan.stdout)).toMatch(
      /^ {2}! measured on run \S+ \(NVIDIA H200, driver [\d.]+\) with 2 custom clients: slowdown 2\.\d+×/m,
    );
    expect(unfolded(plan.stdout)).toContain('costs are those measured at 2 clients, the fewest measured at or above 2');
  }, 120_000);

  it('measures the workload of the docs as tenants of one process: the real helper gives it tenancy for free', async () => {
    const out = path.join(tempDir(), 'run');
    const bench = await cli(
      [
        'bench',
        '--out',
        out,
        '--modes',
        'streams',
        '--clients',
        '3',
        ...QUICK,
        '--quiet',
        '--',
        'python3',
        docsWorkload(),
      ],
      { PYTHONPATH: FAKE_TORCH },
    );
    expect(bench.exitCode, bench.stderr).toBe(0);
    const run = JSON.parse(readFileSync(path.join(out, 'run.json'), 'utf8')) as Run;
    expect(run.plan.map((c) => c.id)).toEqual(['streams/custom', 'streams/custom@3']);
    const contended = run.trials.filter((t) => t.comparisonId === 'streams/custom@3' && t.arm === 'contended');
    // Every trial was measured; one may be graded invalid (threads of the real python3 woken late on a
    // loaded CPU miss the overlap): the tenancy is what this checks, and an invalid trial records it too.
    expect(contended).toHaveLength(6);
    for (const t of contended) {
      expect(['ok', 'invalid']).toContain(t.status);
      if (t.status !== 'ok' && t.status !== 'invalid') continue;
      expect(t.clients.map((c) => c.client)).toEqual([0, 1, 2]);
      expect(new Set(t.clients.map((c) => c.pid)).size).toBe(1);
      for (const c of t.clients) expect(c.stepHostUs).toBeGreaterThan(0);
    }
    // The fake torch's allocator holds 64 MiB per model moved to the GPU: three tenants, 192.
    expect(run.clientStarts?.find((s) => s.comparisonId === 'streams/custom@3')).toMatchObject({
      processes: 1,
      memoryReservedMiB: 192,
    });
  }, 120_000);

  it('report answers "which mode" from a committed custom run (torchvision resnet18 on the H100)', async () => {
    const out = tempDir();
    const result = await cli(['report', CUSTOM_RUN, '--out', out]);
    const md = readFileSync(result.stdout.trim(), 'utf8');
    expect(md).toContain(
      'Measured with 2 `custom` clients (your own command): **MPS** shared this GPU better. Time-sliced, each client slowed 2.343×',
    );
  });
});
