/**
 * workloads/mix_tenants.py (mix's in-process modes) run by the real python3 on the fake torch: the victim
 * and an aggressor built by their own scripts as tenants 0 and 1, the victim on the high-priority stream,
 * a run command giving the victim alone its load.
 */
import path from 'node:path';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { parseWorkloadLine } from '../../harness/workload/protocol.js';
import { FAKE_TORCH, PYTHON, ROOT } from '../helpers.js';

const WORKLOADS = path.join(ROOT, 'workloads');

it('serves the victim open-loop and the aggressor flat out, each its own result, in one process', async (context) => {
  const probe = await execa(PYTHON, ['--version'], { reject: false });
  if (probe.exitCode !== 0) {
    if (process.env.CI === 'true') throw new Error('python3 is needed (CI installs it)');
    context.skip();
  }
  const now = Number(process.hrtime.bigint() / 1000n);
  const run = {
    cmd: 'run',
    trial: 't',
    startAtUs: now + 1_500_000,
    durationMs: 300,
    iterations: null,
    variant: { streams: 1 },
    clients: 2,
    tenants: [0, 1],
    tenantLoads: { 0: { kind: 'constant', qps: 100 } },
  };
  const result = await execa(
    PYTHON,
    [
      '-B',
      path.join(WORKLOADS, 'mix_tenants.py'),
      '--victim',
      JSON.stringify([path.join(WORKLOADS, 'infer.py'), '--model', 'mlp', '--graph', 'false', '--hidden', '8']),
      '--aggressor',
      JSON.stringify([path.join(WORKLOADS, 'gemm.py'), '--size', '8', '--sync-every', '4']),
      '--warmup-ms',
      '1',
    ],
    {
      env: { PYTHONPATH: [WORKLOADS, FAKE_TORCH].join(path.delimiter), GPUSHARE_TENANTS: '2' },
      input: `${JSON.stringify(run)}\n${JSON.stringify({ cmd: 'exit' })}\n`,
      reject: false,
      timeout: 60_000,
    },
  );
  expect(result.exitCode, result.stderr).toBe(0);
  const [ready, answer] = result.stdout.split('\n').map((l) => parseWorkloadLine(l));
  expect(ready).toMatchObject({ ok: true, message: { event: 'ready', workload: 'mix_tenants', tenants: 2 } });
  const tenants = answer?.ok && answer.message.event === 'result' ? (answer.message.tenants ?? []) : [];
  const [victim, aggressor] = tenants;
  // 100 req/s, evenly spaced, over 300 ms: 30 requests (29 to 31 as the phase falls), each with a latency.
  expect(victim?.tenant).toBe(0);
  expect(victim?.latenciesMs.length).toBeGreaterThanOrEqual(29);
  expect(victim?.latenciesMs.length).toBeLessThanOrEqual(31);
  expect(victim?.scheduleLagMs).toBeDefined();
  // Closed loop, flat out: synchronized every 4 iterations, no schedule.
  expect(aggressor?.tenant).toBe(1);
  expect(aggressor?.chunkIterations).toBe(4);
  expect(aggressor?.scheduleLagMs).toBeUndefined();
  expect(aggressor?.iterations).toBeGreaterThan(victim?.iterations ?? 0);
});
