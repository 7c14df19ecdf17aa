/**
 * The whole CLI, as a user runs it, against fake executables on PATH: nvidia-smi, the MPS control
 * daemon and a python3 that plays the workloads with simulated timings.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { prestartable, switchable } from '../../harness/bench/pool/reuse.js';
import type { Comparison, Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { usableCpus } from '../../harness/system/cpus.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { cli, QUICK, tempDir } from '../helpers.js';

/** A metric's median; the fakes sleep for real, so their ratios carry a few percent of jitter. */
function metricValue(run: Run, id: string): number {
  const value = analyze(run).metrics.find((m) => m.metric.id === id)?.stats.value;
  if (value === undefined || value === null) throw new Error(`no value for ${id}`);
  return value;
}

/** One quiet run of the streams mode alone, made once for the two tests that read it. */
let streamsAloneRun: Promise<{ out: string; result: Awaited<ReturnType<typeof cli>> }> | null = null;
function streamsAlone() {
  streamsAloneRun ??= (async () => {
    const out = path.join(tempDir(), 'run');
    return {
      out,
      result: await cli(['bench', '--out', out, '--modes', 'streams', '--workloads', 'spin', '--quiet', ...QUICK]),
    };
  })();
  return streamsAloneRun;
}

describe.concurrent('gpushare bench end to end (fakes)', () => {
  it('measures all modes, skips MIG with its reason, and writes a valid run directory', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, ...QUICK]);
    expect(result.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.status).toBe('complete');
    expect(run.modes.map((m) => [m.mode, m.status])).toEqual([
      ['streams', 'ran'],
      ['timeslice', 'ran'],
      ['mps', 'ran'],
      ['mig', 'skipped'],
    ]);
    expect(run.modes[3]?.mig?.profiles).toHaveLength(7);
    // Streams' 2 comparisons of 2 arms; 3 workloads × 2 modes of 4 arms (the plain alone, each client alone, both).
    expect(run.trials).toHaveLength(6 * (2 + 2) + 6 * 3 * 4 * 2);
    expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    expect(run.samples.length).toBeGreaterThan(0);
    expect(run.samples.some((s) => s.trialId !== null)).toBe(true);
    const mps = run.modes[2]?.mps;
    expect(mps).toMatchObject({ shutdown: 'quit', logFiles: ['mps/control.log', 'mps/server.log'] });
    expect(await isRunning(mps?.controlPid as number)).toBe(false);
    expect(readFileSync(path.join(out, 'mps', 'control.log'), 'utf8')).toContain('Cmd:quit');
    const csv = readFileSync(path.join(out, 'trials.csv'), 'utf8').trim().split('\n');
    expect(csv[0]).toMatch(/^trialId,mode,workload,arm,round,status,client,/);
    expect(csv).toHaveLength(1 + 6 * (2 + 2) + 6 * 3 * 2 * 5);
    // The fake time-slices deterministically: two clients at once run half as fast (floor(50/0.18) ÷
    // floor(50/0.36) iterations); under MPS 1.1× slower.
    expect(metricValue(run, 'timeslice/gemm/slowdown')).toBeCloseTo(277 / 138, 12);
    expect(metricValue(run, 'mps/gemm/slowdown')).toBeCloseTo(277 / 252, 12);
    expect(result.stdout).toMatch(
      /^timeslice\/gemm \(6 rounds, fixed rounds\)\n {2}slowdown +2\.007× +\[2\.007, 2\.007\] +0\.00% +lower +pass \(1\.2–3\.5\)$/m,
    );
    expect(result.stderr).toMatch(/\[ *1\/168\] streams\/spin r0 s1 +ok/);
    // Where the time went: every comparison a part, the parts and the rest adding up to the wall time.
    const time = run.timeAccount;
    expect(time?.parts.map((p) => p.id)).toEqual(run.plan.map((c) => c.id));
    expect(time && time.windowsS + time.startupS + time.harnessS + time.outsideS).toBeCloseTo(time?.wallS ?? -1, 6);
    expect(time?.windowsS).toBeGreaterThan(0);
    expect(run.clientStarts?.every((s) => s.endUs !== undefined && s.endUs >= s.readyUs)).toBe(true);
    // Each comparison's clients were the previous comparison's processes, switched, where its mode and
    // processes match (spin → pipeline, spin → gemm → infer); else prestarted where the policy allows it on
    // this machine's cores (the first MPS one's too: its daemon is started early); the first comparison's
    // started at once, beside the Python probe, not held.
    const how = (c: Comparison, i: number) => {
      const prev = run.plan[i - 1];
      if (prev === undefined) return 'started';
      if (switchable(run.config, prev, c)) return 'switched';
      return prestartable(run.config, prev, c, usableCpus(run.fingerprint.host).count) ? 'prestarted' : 'started';
    };
    // The CPUs it counted are those this process may use: its affinity, online ones only (as the kernel counts them).
    if (process.platform === 'linux') expect(run.fingerprint.host.allowedCpus).toHaveLength(availableParallelism());
    expect(
      run.clientStarts?.map((s) => (s.switchedFrom ? 'switched' : s.prestarted ? 'prestarted' : 'started')),
    ).toEqual(run.plan.map(how));
    expect(run.clientStarts?.map((s) => s.switchedFrom ?? null)).toEqual([
      null,
      'streams/spin',
      null,
      'timeslice/spin',
      'timeslice/spin',
      null,
      'mps/spin',
      'mps/spin',
    ]);
    expect(
      run.clientStarts?.find((s) => s.comparisonId === run.plan.find((c) => c.mode === 'mps')?.id)?.prestarted,
    ).toBeUndefined();
    // The summary folds it at 80 columns.
    expect(result.stdout.replace(/\s+/g, ' ')).toMatch(
      /measuring: [\d.]+ s of [\d.]+ s \(\d+%\); client start-up and warm-up [\d.]+ s, harness between trials [\d.]+ s, outside comparisons [\d.]+ s /,
    );
  });

  it('on a MIG-enabled GPU (constructed -L) pins each client to its own slice', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, '--modes', 'mig', '--workloads', 'gemm', ...QUICK], {
      FAKE_SMI: 'mig',
    });
    expect(result.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.modes[0]).toMatchObject({ mode: 'mig', status: 'ran', reason: null });
    expect(run.modes[0]?.mig?.devices.map((d) => d.profile)).toEqual(['3g.71gb', '3g.71gb']);
    expect(run.plan[0]?.clientEnv.map((e) => e.CUDA_VISIBLE_DEVICES)).toEqual([
      'MIG-1c6e8e3a-5b7e-5f0a-9a77-3f0b1e0c2d11',
      'MIG-9d2f4b61-7a3c-5e29-8c14-62d0a5f3b7e2',
    ]);
    expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    // The fake runs undisturbed on its own slice, which it knows only from CUDA_VISIBLE_DEVICES.
    expect(metricValue(run, 'mig/gemm/slowdown')).toBeGreaterThan(0.9);
    expect(metricValue(run, 'mig/gemm/slowdown')).toBeLessThan(1.1);
  });

  it('adds rounds to a headline ratio until its CI reaches the target, and every round counts', async () => {
    const out = path.join(tempDir(), 'run');
    // FAKE_NOISE: each window's rate moves by up to ±3% in a fixed pattern, so 6 rounds are too wide.
    const args = [
      'bench',
      '--out',
      out,
      '--modes',
      'timeslice',
      '--workloads',
      'spin',
      '--rounds',
      '6',
      '--max-rounds',
      '40',
      '--ci-target',
      '0.03',
      '--time-budget-s',
      '600',
      '--window-ms',
      '50',
      '--quiet',
    ];
    const result = await cli(args, { FAKE_NOISE: '0.03' });
    expect(result.exitCode).toBe(0);
    const run = await loadRun(out);
    expect(run.stops).toEqual([
      {
        comparisonId: 'timeslice/spin',
        rounds: 12,
        reason: 'ci-target',
        halfWidths: { 'timeslice/spin/slowdown': expect.any(Number) },
      },
    ]);
    // 4 arms a round: the plain alone, each client alone, both at once.
    expect(run.trials).toHaveLength(12 * 4);
    const slowdown = analyze(run).metrics.find((m) => m.metric.id === 'timeslice/spin/slowdown');
    expect(slowdown?.metric.rounds).toEqual(Array.from({ length: 12 }, (_, r) => r));
    expect(slowdown?.stats.halfWidth).toBeLessThanOrEqual(0.03);
    expect(result.stdout).toMatch(
      /^timeslice\/spin \(12 rounds, CI on target\)\n {2}slowdown +\d\.\d{3}× +\[[\d., ]+\] +\d\.\d\d% +lower +none$/m,
    );
  });

  it('prints progress as JSON lines with --json', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, '--modes', 'streams', '--workloads', 'spin', '--json', ...QUICK]);
    expect(result.exitCode).toBe(0);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(events[0]).toMatchObject({ type: 'run-start', trials: 12 });
    expect(events.filter((e) => e.type === 'trial')).toHaveLength(12);
    expect(events.filter((e) => e.type === 'stop')).toEqual([
      {
        type: 'stop',
        stop: {
          comparisonId: 'streams/spin',
          rounds: 6,
          reason: 'fixed-rounds',
          halfWidths: { 'streams/spin/speedup-k2': 0 },
        },
      },
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'summary',
      status: 'complete',
      exitCode: 0,
      metrics: [{ metric: 'streams/spin/speedup-k2', rounds: 6, confidence: 1 - 2 / 64 }],
    });
  });

  it('prints nothing but the summary with --quiet', async () => {
    const { result } = await streamsAlone();
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^streams\/spin \(6 rounds, fixed rounds\)\n {2}speedup-k2 /m);
  });
});

describe.concurrent("the check of gpushare's own loop", () => {
  const args = ['--modes', 'timeslice,green', '--workloads', 'infer', '--clients', '2', ...QUICK];

  it('every workload process checks its loop once where it runs alone; the record, report and summary keep it', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, ...args]);
    expect(result.exitCode).toBe(0);
    const run = await loadRun(out);
    const checked = run.trials.flatMap((t) =>
      t.status === 'ok'
        ? t.clients.filter((c) => c.loopOverhead).map((c) => `${t.comparisonId} ${t.arm} c${c.client}`)
        : [],
    );
    // Both time-sliced processes, and the green process's tenant 0 on the whole GPU.
    expect(checked).toEqual(['timeslice/infer solo-c0 c0', 'timeslice/infer solo-c1 c1', 'green/infer@2 solo-c0 c0']);
    expect(result.stdout).toMatch(
      /^protocol loop: at most \+0\.20% of a request beyond a bare loop of the same step\s+\(3 process checks, each where it ran alone; none over the 1% limit\)/m,
    );
    expect(result.stdout).not.toContain("gpushare's protocol loop cost");
  });

  it('a loop over 1% of a request warns on that comparison, in the summary and the report', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, ...args], { FAKE_WORKLOAD: 'slow-loop' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain("timeslice/infer/slowdown: gpushare's protocol loop cost 3.00% of a request");
    const report = readFileSync(path.join(out, 'report', `${(await loadRun(out)).id}.md`), 'utf8');
    expect(report).toContain('over the 1% limit');
  });
});

describe.concurrent('misbehaving workloads are outcomes, not crashes', () => {
  const contention = ['--modes', 'timeslice', '--workloads', 'gemm', ...QUICK];

  /** A comparison whose trials broke measured nothing: bench exits 3 and says so. */
  async function runWith(env: Record<string, string>, extra: string[] = [], exitCode = 3) {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, ...contention, ...extra], env);
    expect(result.exitCode).toBe(exitCode);
    if (exitCode === 3)
      expect(result.stderr).toContain('gpushare: timeslice/gemm measured nothing: no round completed');
    return { result, run: await loadRun(out) };
  }

  it('a crash fails its trial with the exit code and stderr; the rest are skipped', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'crash', FAKE_WORKLOAD_CLIENT: '1' });
    const failed = run.trials.find((t) => t.status === 'failed');
    expect(failed).toMatchObject({ client: 1, exitCode: 3 });
    expect(failed?.status === 'failed' && failed.reason).toContain('workload "gemm" (client 1) exited with code 3');
    expect(failed?.status === 'failed' && failed.stderrTail).toContain('illegal memory access');
    // Client 1 runs solo (its first command), then crashes on its second: the contended trial.
    expect(run.trials.map((t) => `${t.arm}:${t.status}`)).toEqual([
      'alone:ok',
      'solo-c0:ok',
      'solo-c1:ok',
      'contended:failed',
      ...Array.from({ length: 5 }, (_, r) =>
        (r % 2 === 0 ? ['contended', 'solo-c1', 'solo-c0', 'alone'] : ['alone', 'solo-c0', 'solo-c1', 'contended']).map(
          (a) => `${a}:skipped`,
        ),
      ).flat(),
    ]);
    expect(run.status).toBe('complete');
  });

  it('a plain process that crashes fails its comparison, and the next comparison of its workload starts a new one', async () => {
    const out = path.join(tempDir(), 'run');
    const log = path.join(tempDir(), 'log.jsonl');
    const args = ['bench', '--out', out, '--modes', 'timeslice,mps', '--workloads', 'gemm', ...QUICK, '--quiet'];
    const result = await cli(args, { FAKE_WORKLOAD: 'crash', FAKE_WORKLOAD_CLIENT: 'plain', FAKE_LOG: log });
    expect(result.exitCode).toBe(3);
    const run = await loadRun(out);
    // It answers its first command and crashes on its second: in each comparison, round 1's alone arm.
    for (const id of ['timeslice/gemm', 'mps/gemm']) {
      const failed = run.trials.find((t) => t.comparisonId === id && t.status === 'failed');
      expect(failed).toMatchObject({ arm: 'alone', round: 1 });
      expect(failed?.status === 'failed' && failed.reason).toContain(
        'workload "gemm" (plain, alone) exited with code 3',
      );
    }
    const plains = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { client?: string })
      .filter((e) => e.client === 'plain');
    expect(plains).toHaveLength(2);
  });

  it('a line that is not protocol JSON fails the trial, naming the workload and the line', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'garbage', FAKE_WORKLOAD_CLIENT: '0' });
    const failed = run.trials.find((t) => t.status === 'failed');
    expect(failed?.status === 'failed' && failed.reason).toBe(
      'workload "gemm" (client 0) printed a line that is not JSON: "Using cuBLAS handle 0x55d"',
    );
  });

  it('NaN in a result fails the trial', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'nan', FAKE_WORKLOAD_CLIENT: '0' });
    expect(run.trials.find((t) => t.status === 'failed')).toBeDefined();
  });

  it('a result for the wrong trial fails it', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'wrong-trial', FAKE_WORKLOAD_CLIENT: '0' });
    const failed = run.trials.find((t) => t.status === 'failed');
    expect(failed?.status === 'failed' && failed.reason).toContain('answered for trial "other"');
  });

  // The run ending at all (exit 3, within the test's deadline) is what "does not hang" means here:
  // how long it took is not asserted (no timed assertions on a loaded machine).
  it('a hung workload times out in its window and does not hang the run', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'hang', FAKE_WORKLOAD_CLIENT: '1' }, [
      '--trial-timeout-s',
      '1',
      '--exit-timeout-s',
      '1',
    ]);
    const timeout = run.trials.find((t) => t.status === 'timeout');
    expect(timeout).toMatchObject({ phase: 'window', client: 1 });
    expect(run.status).toBe('complete');
  });

  it('a workload that never becomes ready times out in the ready phase', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'never-ready', FAKE_WORKLOAD_CLIENT: '0' }, [
      '--ready-timeout-s',
      '1',
      '--exit-timeout-s',
      '1',
    ]);
    expect(run.trials[0]).toMatchObject({
      status: 'timeout',
      phase: 'ready',
      client: 0,
      reason: 'workload "gemm" (client 0) did not say ready within 1 s',
    });
    expect(run.trials.slice(1).every((t) => t.status === 'skipped')).toBe(true);
  });

  it('bench exits 3, naming what measured nothing, when the MPS daemon does not start; 2 when the custom command is not found', async () => {
    const out = path.join(tempDir(), 'run');
    const mps = await cli(['bench', '--out', out, '--modes', 'mps', '--workloads', 'spin', ...QUICK], {
      FAKE_MPS: 'no-start',
    });
    expect(mps.exitCode).toBe(3);
    expect(mps.stderr).toMatch(/^gpushare: mps measured nothing: nvidia-cuda-mps-control -d failed/m);
    expect((await loadRun(out)).status).toBe('complete');
    const custom = await cli([
      'bench',
      '--out',
      path.join(tempDir(), 'run'),
      '--modes',
      'timeslice',
      ...QUICK,
      '--',
      '/nonexistent/my-service',
    ]);
    // gpushare check runs first for a custom command: nothing is run, and no run directory is made.
    expect(custom.exitCode).toBe(2);
    expect(custom.stderr).toContain(
      'gpushare: the workload command failed gpushare check at ready: the workload could not be started: /nonexistent/my-service: not found',
    );
  });

  it.each([
    [
      'wall-clock',
      /client 1 reported a window starting at \d+ µs, \d+ µs from the release time \d+ µs \(CLOCK_MONOTONIC µs expected\)/,
    ],
    ['absurd', /client 1 reported 1000000000000000 iterations in 50\.0 ms/],
  ])('a result that cannot be true (%s) makes its trial invalid, and no ratio uses it', async (behaviour, reason) => {
    const { run, result } = await runWith({ FAKE_WORKLOAD: behaviour, FAKE_WORKLOAD_CLIENT: '1' });
    // Client 1's trials; client 0's own and the plain process's are fine.
    const trials = run.trials.filter((t) => t.arm !== 'solo-c0' && t.arm !== 'alone');
    expect(trials.every((t) => t.status === 'invalid')).toBe(true);
    expect(trials[0]?.status === 'invalid' && trials[0].reason).toMatch(reason);
    expect(result.stdout).toMatch(/^timeslice\/gemm \(\d+ rounds[^)\n]*\)\n {2}slowdown +n\/a/m);
  });

  it('a workload that will not exit is killed, and the run says so', async () => {
    const { run } = await runWith({ FAKE_WORKLOAD: 'slow-exit' }, ['--exit-timeout-s', '0.5'], 0);
    expect(run.trials.every((t) => t.status === 'ok')).toBe(true);
    expect(run.warnings).toContain(
      'workload "gemm" (client 0) did not exit within 500 ms of the exit command and was killed',
    );
  });
});

describe.concurrent('bench writes the report of every run', () => {
  it('beside a run given --out', async () => {
    const out = path.join(tempDir(), 'run');
    const result = await cli(['bench', '--out', out, '--modes', 'streams,timeslice', '--workloads', 'spin', ...QUICK]);
    expect(result.exitCode).toBe(0);
    const reportDir = path.join(out, 'report');
    const md = readdirSync(reportDir).find((f) => f.endsWith('.md'));
    expect(md).toBeDefined();
    expect(result.stdout).toContain(`report: ${path.join(reportDir, md as string)}`);
  });

  it('for the streams mode alone: no "which mode" section, and charts name only the modes that ran', async () => {
    const { out, result } = await streamsAlone();
    expect(result.exitCode).toBe(0);
    const reportDir = path.join(out, 'report');
    const md = readdirSync(reportDir).find((f) => f.endsWith('.md')) as string;
    expect(readFileSync(path.join(reportDir, md), 'utf8')).not.toContain('Which mode');
    const charts = path.join(reportDir, md.replace(/\.md$/, ''));
    const texts = (file: string) =>
      [...readFileSync(path.join(charts, file), 'utf8').matchAll(/>([^<]+)<\/text>/g)].map((m) => m[1]);
    // The legend lists streams only; each ratio's label says which direction is better.
    expect(texts('ratios.svg')).toEqual(expect.arrayContaining(['streams', 'streams/spin/speedup-k2 ↑']));
    expect(texts('ratios.svg')).not.toEqual(expect.arrayContaining(['mps']));
    expect(texts('timeline.svg')).toEqual(expect.arrayContaining(['streams/spin']));
    expect(texts('timeline.svg')).not.toEqual(expect.arrayContaining(['timeslice']));
  });
});
