/**
 * workloads/protocol.schema.json, generated from the harness's zod definitions (workload/protocol.ts,
 * npm run schema) and committed so that any language can read it: the committed file is what the
 * definitions make, and every speaker is checked against it: what the Python helper prints (its pure
 * message builders, and a real serve() on a fake torch), what the simulator's python3 prints, and what
 * the harness parses (workload/protocol.ts) and sends (runCommand, the start, switch and exit commands).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import {
  EXIT_COMMAND,
  parseWorkloadLine,
  runCommand,
  START_COMMAND,
  switchCommand,
} from '../../harness/workload/protocol.js';
import { protocolJsonSchemaText } from '../../harness/workload/protocol-json-schema.js';
import { FAKE_TORCH, PYTHON, ROOT, tempDir } from '../helpers.js';

const WORKLOADS = path.join(ROOT, 'workloads');
const schema = JSON.parse(readFileSync(path.join(WORKLOADS, 'protocol.schema.json'), 'utf8')) as { $id: string };
const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addSchema(schema);
const validator = (def: string) => {
  const validate = ajv.getSchema(`${schema.$id}#/$defs/${def}`);
  if (!validate) throw new Error(`no $defs/${def} in the schema`);
  return (value: unknown) => validate(value) === true;
};
const isWorkloadMessage = validator('workloadMessage');
const isHarnessCommand = validator('harnessCommand');

/** Lines printed by a Python snippet run with the helper importable (no torch needed: the builders are pure). */
async function python(code: string, env: Record<string, string> = {}, input?: string): Promise<string[]> {
  const result = await execa(PYTHON, ['-c', code], {
    env: { PYTHONPATH: WORKLOADS, ...env },
    input,
    reject: false,
    timeout: 60_000,
  });
  expect(result.exitCode, result.stderr).toBe(0);
  return result.stdout.split('\n').filter(Boolean);
}

/** What the simulator's python3 prints playing the built-in `script` with `env`, given `commands` on stdin. */
async function simulated(script: string, env: Record<string, string>, commands: string[]): Promise<string[]> {
  const result = await execa(path.join(ROOT, 'simulator', 'bin', 'python3'), [path.join(WORKLOADS, script)], {
    env,
    input: `${commands.join('\n')}\n`,
    reject: false,
    timeout: 60_000,
  });
  return result.stdout.split('\n').filter(Boolean);
}

describe('the protocol JSON Schema', () => {
  it('is the file the zod definitions make (npm run schema writes it)', () => {
    const committed = readFileSync(path.join(WORKLOADS, 'protocol.schema.json'), 'utf8');
    expect(committed, 'workloads/protocol.schema.json is stale: run npm run schema').toBe(protocolJsonSchemaText());
  });

  it("accepts every line the simulator's python3 prints: ready, results of each kind, tenants, holding, a switch and unsupported", async () => {
    const window = runCommand('w', 0, { kind: 'fixed-duration', durationMs: 5 }, { streams: 1, pinned: true }, 2);
    const fixed = runCommand('f', 0, { kind: 'fixed-work', iterations: 4 }, { streams: 2, pinned: true });
    const open = runCommand('o', 0, { kind: 'fixed-duration', durationMs: 5 }, { streams: 1 }, 1, {
      kind: 'poisson',
      qps: 2000,
    });
    const checked = runCommand('c', 0, { kind: 'fixed-duration', durationMs: 5 }, { streams: 1 }, 1, null, null, 50);
    const tenants = runCommand('t', 0, { kind: 'fixed-duration', durationMs: 5 }, { streams: 1 }, 1, null, [0, 1]);
    const runs = [
      await simulated('gemm.py', {}, [window, fixed, open, checked, EXIT_COMMAND]),
      await simulated('gemm.py', { GPUSHARE_TENANTS: '2' }, [tenants, EXIT_COMMAND]),
      await simulated('infer.py', { GPUSHARE_HOLD: '1' }, [
        START_COMMAND,
        switchCommand([path.join(WORKLOADS, 'gemm.py'), '--size', '64']),
        window,
        EXIT_COMMAND,
      ]),
      await simulated('gemm.py', { GPUSHARE_TENANTS: '40', GPUSHARE_GREEN_SM_PCT: 'even' }, [EXIT_COMMAND]),
    ];
    const events = runs.map((lines) => lines.map((l) => (JSON.parse(l) as { event: string }).event));
    expect(events).toEqual([
      ['ready', 'result', 'result', 'result', 'result'],
      ['ready', 'result'],
      ['holding', 'ready', 'ready', 'result'],
      ['error'],
    ]);
    const lines = runs.flat();
    expect(lines.join('\n')).toMatch(/"tenants":\[\{"tenant":0/);
    expect(lines.join('\n')).toMatch(/"loopOverhead":\{/);
    expect(lines.join('\n')).toMatch(/"released":\{/);
    expect(lines.join('\n')).toMatch(/"unsupported":true/);
    for (const line of lines) {
      expect([line.slice(0, 200), isWorkloadMessage(JSON.parse(line))]).toEqual([line.slice(0, 200), true]);
      expect([line.slice(0, 200), parseWorkloadLine(line).ok]).toEqual([line.slice(0, 200), true]);
    }
  });

  it('accepts every message the Python helper builds, and so does the harness parser', async () => {
    const lines = await python(`
import gpushare_protocol as g
for m in [
    g.ready_message("my-model", 4242, "NVIDIA H100 80GB HBM3", {"batch": 8, "graph": True, "path": object(), "inf": float("inf")}),
    g.result_message("timeslice/custom#r0/solo-c0", 10.5, 250010.5, 812, 249.8, [0.3, 0.31], 1),
    g.result_message("streams/custom#r0/k2", 10.0, 4010.0, 10, 3.05, [], 10),
    g.result_message("capacity@2#0", 10.0, 200010.0, 200, 0.0, [0.4] * 200, 1, schedule_lag_ms=0.05, schedule_lag_max_ms=0.2, dropped_requests=0),
    g.error_message("RuntimeError: CUDA error: out of memory"),
    g.holding_message(4242),
]:
    print(g.line(m))
`);
    expect(lines).toHaveLength(6);
    for (const line of lines) {
      expect([line, isWorkloadMessage(JSON.parse(line))]).toEqual([line, true]);
      expect([line, parseWorkloadLine(line).ok]).toEqual([line, true]);
    }
  });

  it('accepts what a real serve() prints, on a fake torch, for a window, fixed work and an open loop', async () => {
    const commands = [
      runCommand('w', 0, { kind: 'fixed-duration', durationMs: 20 }, { streams: 1, pinned: true }),
      runCommand('f', 0, { kind: 'fixed-work', iterations: 4 }, { streams: 2, pinned: true }),
      runCommand('o', 0, { kind: 'fixed-duration', durationMs: 20 }, { streams: 1 }, 1, { kind: 'poisson', qps: 200 }),
      EXIT_COMMAND,
    ];
    const lines = await python(
      `
import sys
from gpushare_protocol import serve
def setup():
    import torch
    x = torch.randn(4, 4, device="cuda")
    return lambda i, lane, variant: torch.matmul(x, x)
sys.exit(serve("schema-check", setup, ["--warmup-ms", "1"]))
`,
      { PYTHONPATH: `${WORKLOADS}${path.delimiter}${FAKE_TORCH}` },
      `${commands.join('\n')}\n`,
    );
    expect(lines.map((l) => (JSON.parse(l) as { event: string }).event)).toEqual([
      'ready',
      'result',
      'result',
      'result',
    ]);
    for (const line of lines) {
      expect([line.slice(0, 200), isWorkloadMessage(JSON.parse(line))]).toEqual([line.slice(0, 200), true]);
      expect(parseWorkloadLine(line).ok).toBe(true);
    }
    for (const command of [...commands, START_COMMAND, switchCommand(['/w/gemm.py', '--size', '64'])])
      expect([command, isHarnessCommand(JSON.parse(command))]).toEqual([command, true]);
  });

  it('accepts what a real serve() prints held, with tenants and a loop check, and after a switch', async () => {
    const script = (name: string) => `
import sys
from gpushare_protocol import serve
def setup():
    import torch
    x = torch.randn(4, 4, device="cuda")
    return lambda i, lane, variant: torch.matmul(x, x)
sys.exit(serve("${name}", setup, ["--warmup-ms", "1"]))
`;
    const dir = tempDir('gpushare-schema-');
    writeFileSync(path.join(dir, 'next.py'), script('next'));
    const env = { PYTHONPATH: `${WORKLOADS}${path.delimiter}${FAKE_TORCH}`, GPUSHARE_HOLD: '1' };
    const window = { kind: 'fixed-duration', durationMs: 5 } as const;
    const tenants = await python(
      script('tenants'),
      { ...env, GPUSHARE_TENANTS: '2' },
      [START_COMMAND, runCommand('t', 0, window, { streams: 1 }, 1, null, [0, 1], 20), EXIT_COMMAND, ''].join('\n'),
    );
    const switched = await python(
      script('first'),
      env,
      [
        START_COMMAND,
        switchCommand([path.join(dir, 'next.py')]),
        runCommand('s', 0, window, { streams: 1 }),
        EXIT_COMMAND,
        '',
      ].join('\n'),
    );
    const lines = [...tenants, ...switched];
    expect(lines.map((l) => (JSON.parse(l) as { event: string }).event)).toEqual([
      'holding',
      'ready',
      'result',
      'holding',
      'ready',
      'ready',
      'result',
    ]);
    expect(tenants[2]).toMatch(/"tenants":\[\{"tenant":0,.*"loopOverhead":\{/);
    expect(switched[2]).toMatch(/"released":\{"workload":"first"/);
    for (const line of lines) {
      expect([line.slice(0, 200), isWorkloadMessage(JSON.parse(line))]).toEqual([line.slice(0, 200), true]);
      expect(parseWorkloadLine(line).ok).toBe(true);
    }
  });

  const result = {
    event: 'result',
    trial: 't',
    windowStartUs: 1,
    windowEndUs: 2,
    iterations: 3,
    gpuMs: 0.5,
  };
  it.each<[string, unknown]>([
    ['a bare result', result],
    ['a ready of protocol 1', { event: 'ready', protocol: 1, workload: 'w', pid: 1 }],
    [
      'a ready with a null device and extra fields',
      { event: 'ready', protocol: 2, workload: 'w', pid: 1, device: null, x: 1 },
    ],
    ['an error', { event: 'error', message: 'boom' }],
    ['a ready of protocol 3', { event: 'ready', protocol: 3, workload: 'w', pid: 1 }],
    [
      'a ready after a switch',
      {
        event: 'ready',
        protocol: 3,
        workload: 'w',
        pid: 1,
        switches: true,
        released: { workload: 'v', memoryReservedMiB: 64, leftMiB: null },
      },
    ],
    [
      'a release without what was left',
      { event: 'ready', protocol: 3, workload: 'w', pid: 1, released: { workload: 'v', memoryReservedMiB: 64 } },
    ],
    ['a ready without its pid', { event: 'ready', protocol: 2, workload: 'w' }],
    ['a fractional pid', { event: 'ready', protocol: 2, workload: 'w', pid: 1.5 }],
    ['negative iterations', { ...result, iterations: -1 }],
    ['fractional iterations', { ...result, iterations: 1.5 }],
    ['negative GPU time', { ...result, gpuMs: -1 }],
    ['a negative latency', { ...result, latenciesMs: [1, -1] }],
    ['chunks of 0 iterations', { ...result, chunkIterations: 0 }],
    ['a string for a number', { ...result, gpuMs: '1' }],
    ['a negative schedule lag', { ...result, scheduleLagMs: -0.1 }],
    ['an error without its message', { event: 'error' }],
    ['an unknown event', { event: 'progress', done: 1 }],
    ['no event', { trial: 't' }],
  ])('and the harness parser agree on %s', (_name, value) => {
    expect(parseWorkloadLine(JSON.stringify(value)).ok).toBe(isWorkloadMessage(value));
  });

  it('cannot say that a window ends after it starts: only the parser refuses that (the schema says so in words)', () => {
    const backwards = { ...result, windowStartUs: 2, windowEndUs: 1 };
    expect(isWorkloadMessage(backwards)).toBe(true);
    expect(parseWorkloadLine(JSON.stringify(backwards)).ok).toBe(false);
    expect(JSON.stringify(schema)).toContain('windowEndUs must not be before windowStartUs');
  });

  it('refuses commands the harness never sends', () => {
    expect(
      isHarnessCommand({
        cmd: 'run',
        trial: 't',
        startAtUs: 0,
        durationMs: 0,
        iterations: null,
        variant: { streams: 1 },
      }),
    ).toBe(false);
    expect(
      isHarnessCommand({
        cmd: 'run',
        trial: 't',
        startAtUs: 0,
        durationMs: null,
        iterations: null,
        variant: { streams: 0 },
      }),
    ).toBe(false);
    expect(
      isHarnessCommand({
        cmd: 'run',
        trial: 't',
        startAtUs: 0,
        durationMs: 5,
        iterations: null,
        variant: { streams: 1 },
        load: { kind: 'burst', qps: 1 },
      }),
    ).toBe(false);
    expect(isHarnessCommand({ cmd: 'stop' })).toBe(false);
  });
});
