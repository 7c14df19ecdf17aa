/**
 * The Python side on the CPU, with the real python3 and no PyTorch: every Python file compiles, the
 * protocol module's pure parts pass their unit tests (test/python/test_protocol.py), and what the
 * workloads print or accept is what the harness reads and writes. Skipped, saying what to install,
 * where python3 is missing; under CI=true that fails instead.
 */
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, type TestContext } from 'vitest';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { PROTOCOL_VERSIONS, parseWorkloadLine } from '../../harness/workload/protocol.js';
import { BUILTIN_WORKLOADS, builtinSpec } from '../../harness/workload/registry.js';
import { FAKES, ROOT, requireTool, runCli, tempDir } from '../helpers.js';

const WORKLOADS = path.join(ROOT, 'workloads');
/** Folders that hold no Python of the project. */
const NOT_OURS = new Set(['node_modules', '.git', 'dist', 'scratch']);

/** The real python3 on PATH (never the fake one), or a skip/failure saying to install it. */
async function python3(context: TestContext): Promise<string> {
  await requireTool(context, 'python3', 'install Python 3 (e.g. apt-get install python3)');
  const found = await execaRunner.which('python3');
  if (found === null || found.startsWith(FAKES)) throw new Error(`python3 on PATH is the fake one: ${found}`);
  return found;
}

/** Every .py file of the repository, relative to it, and every __pycache__ folder. */
function pythonTree(): { sources: string[]; caches: string[] } {
  const entries = readdirSync(ROOT, { recursive: true, encoding: 'utf8' }).filter(
    (p) => !NOT_OURS.has(p.split(path.sep)[0] as string),
  );
  return {
    sources: entries.filter((p) => p.endsWith('.py')).sort(),
    caches: entries.filter((p) => path.basename(p) === '__pycache__').sort(),
  };
}

/** Byte-compiles `files` with compileall, the bytecode under `cacheRoot`: nothing is written beside the sources. */
function compile(python: string, files: string[], cacheRoot: string) {
  return execa(python, ['-m', 'compileall', '-q', '-f', ...files], {
    reject: false,
    all: true,
    env: { PYTHONPYCACHEPREFIX: cacheRoot },
  });
}

describe('Python on the CPU', () => {
  it('every Python file compiles; a planted syntax error fails the same check; no __pycache__ is left in the tree', async (context) => {
    const python = await python3(context);
    const before = pythonTree();
    expect(before.sources).toEqual(
      expect.arrayContaining(['workloads/gemm.py', 'workloads/gpushare_protocol/loop.py']),
    );
    const all = await compile(
      python,
      before.sources.map((p) => path.join(ROOT, p)),
      tempDir(),
    );
    expect([all.exitCode, all.all]).toEqual([0, '']);

    const planted = path.join(tempDir(), 'gemm.py');
    cpSync(path.join(WORKLOADS, 'gemm.py'), planted);
    writeFileSync(planted, `${readFileSync(planted, 'utf8')}\ndef broken(:\n    pass\n`);
    const bad = await compile(python, [planted], tempDir());
    expect(bad.exitCode).toBe(1);
    expect(bad.all).toContain(planted);
    expect(bad.all).toContain('SyntaxError');
    expect(pythonTree().caches).toEqual(before.caches);
  });

  it("the protocol module's pure parts: arrivals, the protocol line, argument parsing (test/python/test_protocol.py)", async (context) => {
    const python = await python3(context);
    const result = await execa(python, ['-B', path.join(ROOT, 'test', 'python', 'test_protocol.py')], {
      reject: false,
    });
    expect([result.exitCode, result.stderr]).toEqual([0, expect.stringMatching(/\nOK$/)]);
    // A file whose tests were all lost would pass too: count them.
    expect(Number(/^Ran (\d+) tests? in /m.exec(result.stderr)?.[1])).toBeGreaterThanOrEqual(12);
  });

  it("the reference server's torch-free parts: validation, SSE framing, usage, tokenizer, batching (test/python/test_reference_server.py)", async (context) => {
    const python = await python3(context);
    const result = await execa(python, ['-B', path.join(ROOT, 'test', 'python', 'test_reference_server.py')], {
      reject: false,
    });
    expect([result.exitCode, result.stderr]).toEqual([0, expect.stringMatching(/\nOK$/)]);
    // A file whose tests were all lost would pass too: count them.
    expect(Number(/^Ran (\d+) tests? in /m.exec(result.stderr)?.[1])).toBeGreaterThanOrEqual(31);
  });

  it('what emit prints on stdout the harness reads as protocol lines; print() goes to stderr', async (context) => {
    const python = await python3(context);
    const script = [
      'import sys',
      `sys.path.insert(0, ${JSON.stringify(WORKLOADS)})`,
      'import gpushare_protocol as p',
      'args = p.parser("test").parse_args(["--iterations", "3"])',
      'p.emit("ready", protocol=p.PROTOCOL, workload="test", pid=42, device=None, params=vars(args))',
      // The first protocol line takes stdout (importing the module changes nothing): a print from then on goes to stderr.
      'print("a library writing to stdout")',
      'p.emit("result", trial="t1", windowStartUs=1.0, windowEndUs=2.5, iterations=3, gpuMs=0.5,',
      '       latenciesMs=[0.1], chunkIterations=1, scheduleLagMs=0.0, scheduleLagMaxMs=0.0, droppedRequests=0)',
      'p.emit("error", message="CUDA error:\\nan illegal memory access")',
    ].join('\n');
    const result = await execa(python, ['-B', '-c', script], { reject: false });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('a library writing to stdout');
    const lines = result.stdout.split('\n').map((line) => parseWorkloadLine(line));
    expect(lines).toEqual([
      {
        ok: true,
        message: expect.objectContaining({ event: 'ready', workload: 'test', pid: 42, params: expect.any(Object) }),
      },
      { ok: true, message: expect.objectContaining({ event: 'result', trial: 't1', iterations: 3 }) },
      { ok: true, message: { event: 'error', message: 'CUDA error:\nan illegal memory access' } },
    ]);
    const ready = lines[0]?.ok && lines[0].message.event === 'ready' ? lines[0].message : null;
    expect(PROTOCOL_VERSIONS).toContain(ready?.protocol);
  });

  it.for(BUILTIN_WORKLOADS.map((w) => w.name))(
    'the argv the harness builds for %s parses in its script (no usage error), and a bad value does not',
    async (name, context) => {
      const python = await python3(context);
      const [, script, ...args] = builtinSpec(name, python, {}).argv as [string, string, ...string[]];
      // No GPU and (here) no PyTorch: past its arguments the workload is refused with an error line (exit 2).
      const env = { CUDA_VISIBLE_DEVICES: '' };
      const run = await execa(python, ['-B', script, ...args], { reject: false, input: '', env });
      expect([run.exitCode, run.stderr]).toEqual([2, expect.not.stringContaining('usage:')]);
      expect(parseWorkloadLine(run.stdout)).toMatchObject({ ok: true, message: { event: 'error' } });
      const bad = await execa(python, ['-B', script, ...args, '--iterations', 'many'], {
        reject: false,
        input: '',
        env,
      });
      // A bad argument is refused as a protocol error line naming it, which the harness shows as the reason.
      expect(bad.exitCode).toBe(2);
      expect(parseWorkloadLine(bad.stdout)).toMatchObject({
        ok: true,
        message: {
          event: 'error',
          message: expect.stringContaining("argument --iterations: invalid int value: 'many'"),
        },
      });
    },
  );

  it("probe.py's line, as doctor reads it with the real python3, matches the fingerprint schema", async (context) => {
    const python = await python3(context);
    const version = (await execa(python, ['-c', 'import platform; print(platform.python_version())'])).stdout;
    const doctor = await runCli(['doctor', '--json', '--python', python]);
    expect(JSON.parse(doctor.stdout).python).toMatchObject({ status: 'ok', executable: python, version });
  });

  it('leaves no __pycache__ beside the workloads', () => {
    expect(existsSync(path.join(WORKLOADS, '__pycache__'))).toBe(false);
  });
});
