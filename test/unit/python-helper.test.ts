/**
 * The Python helper (the package workloads/gpushare_protocol/) as a user meets it, run by the real python3 on a
 * fake torch (test/fakes/python): importing it changes nothing, serve() documents step's arguments,
 * takes the workload's own arguments through add_arguments, keeps the old call form working, and
 * refuses a call that cannot work with one error line before anything is built.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { parseWorkloadLine } from '../../harness/workload/protocol.js';
import { FAKE_TORCH, PYTHON, ROOT, tempDir } from '../helpers.js';

const WORKLOADS = path.join(ROOT, 'workloads');

/** Runs a Python program with the helper importable (and torch, unless `torch` is false); stdin closed at once. */
async function run(
  code: string,
  args: string[] = [],
  { torch = true, env = {}, input = '' }: { torch?: boolean; env?: Record<string, string>; input?: string } = {},
) {
  const result = await execa(PYTHON, ['-c', code, ...args], {
    env: { PYTHONPATH: [WORKLOADS, ...(torch ? [FAKE_TORCH] : [])].join(path.delimiter), ...env },
    input,
    reject: false,
    timeout: 60_000,
  });
  const messages = result.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code: result.exitCode, messages, stderr: result.stderr };
}

/** A workload whose setup leaves a mark on stderr, so a test can tell whether it was built. */
const WORKLOAD = `
import sys
from gpushare_protocol import parser, serve
def setup(*args):
    print("SETUP CALLED", args and vars(args[0]).get("batch"), file=sys.stderr)
    return lambda i, lane, variant: None
`;

describe('gpushare_protocol', () => {
  it('has no side effect on import: print() still reaches stdout until serve() runs', async () => {
    const { messages, code } = await run(
      'import gpushare_protocol, json; print(json.dumps({"printed": "after import"}))',
    );
    expect(code).toBe(0);
    expect(messages).toEqual([{ printed: 'after import' }]);
  });

  it('explains step, lane and variant in serve()', async () => {
    const { messages } = await run(
      'import gpushare_protocol, json; print(json.dumps(gpushare_protocol.serve.__doc__))',
    );
    const doc = String(messages[0]);
    for (const text of [
      'setup()',
      'setup(args)',
      'add_arguments',
      'step(i, lane, variant)',
      'lane:',
      'variant:',
      'must\n    not synchronize',
    ])
      expect(doc).toContain(text);
  });

  it('serve(name, setup, add_arguments=…): the workload parses its own arguments and setup(args) gets them', async () => {
    const { code, messages, stderr } = await run(
      `${WORKLOAD}
def add(p): p.add_argument("--batch", type=int, default=8)
def setup_args(args):
    print("a library's print once serve() runs")
    return setup(args)
sys.exit(serve("mine", setup_args, add_arguments=add))`,
      ['--batch', '3', '--warmup-ms', '1'],
    );
    expect(code).toBe(0);
    expect(stderr).toContain('SETUP CALLED 3');
    expect(stderr).toContain("a library's print once serve() runs");
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ event: 'ready', protocol: 3, workload: 'mine', params: { batch: 3 } });
  });

  it('setup() without arguments works too', async () => {
    const { code, messages } = await run(
      `from gpushare_protocol import serve
import sys
sys.exit(serve("plain", lambda: (lambda i, lane, variant: None), ["--warmup-ms", "1"]))`,
    );
    expect(code).toBe(0);
    expect(messages).toMatchObject([{ event: 'ready', workload: 'plain' }]);
  });

  it('the old form serve(name, build, parser().parse_args()) still works', async () => {
    const { code, messages, stderr } = await run(
      `${WORKLOAD}
a = parser("old").parse_args(["--warmup-ms", "1"])
sys.exit(serve("old", lambda: setup(), a))`,
    );
    expect(code).toBe(0);
    expect(stderr).toContain('SETUP CALLED');
    expect(messages).toMatchObject([{ event: 'ready', workload: 'old' }]);
  });

  it.each([
    [
      'a dict as argv',
      `sys.exit(serve("x", setup, {"warmup_ms": 10}))`,
      "serve(name, setup, argv): argv must be a list of command-line strings (default sys.argv[1:]), not dict; declare your workload's own arguments with serve(..., add_arguments=fn)",
    ],
    ['a string as argv', `sys.exit(serve("x", setup, "--batch 3"))`, 'argv must be a list of command-line strings'],
    [
      'a setup of two arguments',
      `sys.exit(serve("x", lambda a, b: None, []))`,
      'setup must take no argument or one (the parsed arguments), but <lambda> takes 2',
    ],
    [
      'a bad argument',
      `sys.exit(serve("x", setup, ["--batch", "3"]))`,
      "bad arguments '--batch 3': unrecognized arguments: --batch 3",
    ],
  ])('refuses %s with one error line, before anything is built', async (_name, call, message) => {
    const { code, messages, stderr } = await run(`${WORKLOAD}\n${call}`);
    expect(code).toBe(2);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.event).toBe('error');
    expect(String(messages[0]?.message)).toContain(message);
    expect(stderr).not.toContain('SETUP CALLED');
    expect(stderr).not.toContain('Traceback');
  });

  it('says it needs PyTorch, before anything is built, where there is none', async () => {
    const { code, messages, stderr } = await run(`${WORKLOAD}\nsys.exit(serve("x", setup, []))`, [], { torch: false });
    expect(code).toBe(2);
    expect(messages).toEqual([
      {
        event: 'error',
        message: expect.stringMatching(
          /^gpushare_protocol needs PyTorch built for CUDA \(pip install torch\): No module named 'torch'/,
        ),
      },
    ]);
    expect(stderr).not.toContain('SETUP CALLED');
  });

  it('an exception in setup is one error line, with its traceback on stderr', async () => {
    const { code, messages, stderr } = await run(
      `from gpushare_protocol import serve
import sys
def setup():
    raise RuntimeError("CUDA error: out of memory")
sys.exit(serve("x", setup, []))`,
    );
    expect(code).toBe(1);
    expect(messages).toEqual([{ event: 'error', message: 'RuntimeError: CUDA error: out of memory' }]);
    expect(stderr).toContain('Traceback');
  });

  describe('switch: one process serves the next workload', () => {
    /** A workload script named `name` building one model (64 MiB on the fake allocator). */
    const script = (name: string) => `
import sys
from gpushare_protocol import serve
import torch
def setup():
    print("SETUP ${name}", file=sys.stderr)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8)).cuda()
    x = torch.randn(4, 8, device="cuda")
    return lambda i, lane, variant: model(x)
sys.exit(serve("${name}", setup))`;

    it('releases the first workload (its model and the cached memory), builds the next with its own arguments, and says what was released; a held process waits for start once', async () => {
      const dir = tempDir('gpushare-switch-');
      writeFileSync(path.join(dir, 'first.py'), script('first'));
      writeFileSync(path.join(dir, 'second.py'), script('second'));
      const window = JSON.stringify({
        cmd: 'run',
        trial: 't',
        startAtUs: 0,
        durationMs: 20,
        iterations: null,
        variant: { streams: 1 },
        clients: 1,
      });
      const switchTo = JSON.stringify({ cmd: 'switch', argv: [path.join(dir, 'second.py'), '--warmup-ms', '1'] });
      const result = await execa(PYTHON, [path.join(dir, 'first.py'), '--warmup-ms', '1'], {
        env: { PYTHONPATH: [WORKLOADS, FAKE_TORCH].join(path.delimiter), GPUSHARE_HOLD: '1' },
        input: ['{"cmd":"start"}', switchTo, window, '{"cmd":"exit"}', ''].join('\n'),
        reject: false,
        timeout: 60_000,
      });
      expect(result.exitCode, result.stderr).toBe(0);
      const messages = result.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      // Held once: holding before the first ready, never again after the switch.
      expect(messages.map((m) => m.event)).toEqual(['holding', 'ready', 'ready', 'result']);
      messages.shift();
      expect(messages[0]).toMatchObject({ workload: 'first', switches: true, memoryReservedMiB: 64 });
      expect(messages[0]?.released).toBeUndefined();
      expect(messages[1]).toMatchObject({
        workload: 'second',
        pid: messages[0]?.pid,
        memoryReservedMiB: 64,
        released: { workload: 'first', memoryReservedMiB: 64, leftMiB: 0 },
        params: { warmup_ms: 1 },
      });
      expect(result.stderr.match(/SETUP \w+/g)).toEqual(['SETUP first', 'SETUP second']);
      for (const m of messages) expect(parseWorkloadLine(JSON.stringify(m)).ok).toBe(true);
    });

    it('switches in a loop, not by recursion: the 12th workload is set up as deep in the stack as the 2nd', async () => {
      const dir = tempDir('gpushare-switch-loop-');
      // Each setup notes how deep in the stack it runs; a switch that recursed went deeper by a level each time.
      const deep = (name: string) =>
        script(name).replace(
          'def setup():',
          'import inspect\ndef setup():\n    print(f"DEPTH {len(inspect.stack())}", file=sys.stderr)',
        );
      writeFileSync(path.join(dir, 'a.py'), deep('a'));
      writeFileSync(path.join(dir, 'b.py'), deep('b'));
      const switches = Array.from({ length: 11 }, (_, k) =>
        JSON.stringify({ cmd: 'switch', argv: [path.join(dir, k % 2 ? 'a.py' : 'b.py'), '--warmup-ms', '0'] }),
      );
      const result = await execa(PYTHON, [path.join(dir, 'a.py'), '--warmup-ms', '0'], {
        env: { PYTHONPATH: [WORKLOADS, FAKE_TORCH].join(path.delimiter) },
        input: [...switches, '{"cmd":"exit"}', ''].join('\n'),
        reject: false,
        timeout: 60_000,
      });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout.split('\n').filter(Boolean)).toHaveLength(12);
      const depths = (result.stderr.match(/DEPTH \d+/g) ?? []).map((d) => Number(d.slice(6)));
      expect(depths).toHaveLength(12);
      // The first workload runs from its own script's serve() call; every switched-to one from the loop.
      expect(new Set(depths.slice(1)).size).toBe(1);
    });

    it('refuses a switch without a script, with one error line', async () => {
      const { code, messages } = await run(`${script('first')}`, ['--warmup-ms', '1'], {
        input: '{"cmd":"switch","argv":[]}\n',
      });
      expect(code).toBe(2);
      expect(messages.at(-1)).toMatchObject({ event: 'error', message: expect.stringContaining('switch takes argv') });
    });
  });

  describe('tenants (protocol 3)', () => {
    /** A model per setup call: the fake allocator holds 64 MiB for each one moved to the GPU. */
    const MODEL = `
import sys
from gpushare_protocol import serve
import torch
def setup():
    print("SETUP CALLED", file=sys.stderr)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8)).cuda()
    x = torch.randn(4, 8, device="cuda")
    return lambda i, lane, variant: model(x)
sys.exit(serve("tenanted", setup, ["--warmup-ms", "1"]))`;
    const window = (trial: string, tenants?: number[]) =>
      `${JSON.stringify({ cmd: 'run', trial, startAtUs: 0, durationMs: 20, iterations: null, variant: { streams: 1 }, clients: tenants?.length ?? 1, ...(tenants ? { tenants } : {}) })}\n`;

    it('builds one model per tenant and answers a run naming tenants with one result each, host time per step included', async () => {
      const { code, messages, stderr } = await run(MODEL, [], {
        env: { GPUSHARE_TENANTS: '3' },
        input: `${window('solo', [0])}${window('all', [0, 1, 2])}{"cmd":"exit"}\n`,
      });
      expect(code).toBe(0);
      expect(stderr.match(/SETUP CALLED/g)).toHaveLength(3);
      const [ready, solo, all] = messages as Array<Record<string, unknown> & { tenants?: unknown }>;
      expect(ready).toMatchObject({ event: 'ready', protocol: 3, tenants: 3, memoryReservedMiB: 192 });
      const entries = (m: typeof solo) => m?.tenants as Array<Record<string, number>>;
      expect(entries(solo).map((t) => t.tenant)).toEqual([0]);
      expect(entries(all).map((t) => t.tenant)).toEqual([0, 1, 2]);
      for (const t of entries(all)) {
        expect(t.iterations).toBeGreaterThan(0);
        expect(t.stepHostUs).toBeGreaterThan(0);
        expect(t.windowEndUs).toBeGreaterThanOrEqual(t.windowStartUs as number);
      }
      expect(all?.iterations).toBe(entries(all).reduce((n, t) => n + (t.iterations as number), 0));
      for (const m of messages) expect(parseWorkloadLine(JSON.stringify(m)).ok).toBe(true);
    });

    it('a run command without tenants is tenant 0 on its own, as protocols 1 and 2 run', async () => {
      const { code, messages } = await run(MODEL, [], { input: `${window('plain')}{"cmd":"exit"}\n` });
      expect(code).toBe(0);
      expect(messages[0]).toMatchObject({ tenants: 1, memoryReservedMiB: 64 });
      expect(messages[1]).toMatchObject({ event: 'result', trial: 'plain' });
      expect(messages[1]).not.toHaveProperty('tenants');
    });

    it('refuses a run naming a tenant the process does not have, in one error line', async () => {
      const { code, messages } = await run(MODEL, [], {
        env: { GPUSHARE_TENANTS: '2' },
        input: window('bad', [0, 2]),
      });
      expect(code).not.toBe(0);
      expect(messages.at(-1)).toMatchObject({
        event: 'error',
        message: expect.stringContaining('names tenants [0, 2], but this process has 2 (0-1)'),
      });
    });

    it('refuses GPUSHARE_TENANTS that is not a whole number, before anything is built', async () => {
      const { code, messages, stderr } = await run(MODEL, [], { env: { GPUSHARE_TENANTS: 'two' } });
      expect(code).toBe(2);
      expect(messages).toEqual([
        { event: 'error', message: "GPUSHARE_TENANTS='two': expected a whole number of tenants, 1 or more" },
      ]);
      expect(stderr).not.toContain('SETUP CALLED');
    });

    it('green contexts without the driver bindings: unsupported, with the reason, nothing built', async () => {
      const { code, messages, stderr } = await run(MODEL, [], {
        env: { GPUSHARE_TENANTS: '2', GPUSHARE_GREEN_SM_PCT: 'even' },
      });
      expect(code).toBe(2);
      expect(messages).toEqual([
        {
          event: 'error',
          unsupported: true,
          message: expect.stringContaining("green contexts need NVIDIA's Python bindings of the CUDA driver"),
        },
      ]);
      expect(stderr).not.toContain('SETUP CALLED');
    });
  });
});
