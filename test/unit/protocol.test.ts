import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeRunCommand, parseWorkloadLine, runCommand, runCommandOf } from '../../harness/workload/protocol.js';

const result = {
  event: 'result',
  trial: 't1',
  windowStartUs: 10,
  windowEndUs: 20,
  iterations: 5,
  gpuMs: 1.5,
  latenciesMs: [0.1],
  chunkIterations: 1,
};

describe('workload protocol lines', () => {
  it('accepts ready, result and error messages', () => {
    expect(parseWorkloadLine('{"event":"ready","protocol":1,"workload":"gemm","pid":42}')).toMatchObject({
      ok: true,
      message: { event: 'ready', pid: 42 },
    });
    expect(parseWorkloadLine(JSON.stringify(result))).toEqual({ ok: true, message: result });
    expect(parseWorkloadLine('{"event":"error","message":"CUDA out of memory"}')).toMatchObject({
      ok: true,
      message: { message: 'CUDA out of memory' },
    });
  });

  it('fills latencies and chunk size when a workload leaves them out', () => {
    const { latenciesMs, chunkIterations, ...bare } = result;
    expect(parseWorkloadLine(JSON.stringify(bare))).toMatchObject({
      ok: true,
      message: { latenciesMs: [], chunkIterations: 1 },
    });
  });

  it('names a line that is not JSON', () => {
    expect(parseWorkloadLine('Using cuBLAS handle')).toEqual({
      ok: false,
      error: 'printed a line that is not JSON: "Using cuBLAS handle"',
    });
  });

  it('rejects NaN, which is not JSON', () => {
    expect(
      parseWorkloadLine('{"event":"result","trial":"t","windowStartUs":1,"windowEndUs":2,"iterations":3,"gpuMs":NaN}')
        .ok,
    ).toBe(false);
  });

  it('names the missing or mistyped field', () => {
    const missing = parseWorkloadLine('{"event":"result","trial":"t","windowStartUs":1,"windowEndUs":2,"gpuMs":1}');
    expect(!missing.ok && missing.error).toContain('field "iterations"');
    const mistyped = parseWorkloadLine(
      '{"event":"result","trial":"t","windowStartUs":1,"windowEndUs":2,"iterations":"many","gpuMs":1}',
    );
    expect(!mistyped.ok && mistyped.error).toContain('field "iterations"');
    const negative = parseWorkloadLine(
      '{"event":"result","trial":"t","windowStartUs":1,"windowEndUs":2,"iterations":3,"gpuMs":-1}',
    );
    expect(!negative.ok && negative.error).toContain('field "gpuMs"');
  });

  it('rejects a window that ends before it starts, and an unknown protocol version', () => {
    expect(parseWorkloadLine(JSON.stringify({ ...result, windowEndUs: 5 })).ok).toBe(false);
    expect(parseWorkloadLine('{"event":"ready","protocol":3,"workload":"x","pid":1}').ok).toBe(true);
    expect(parseWorkloadLine('{"event":"ready","protocol":4,"workload":"x","pid":1}').ok).toBe(false);
  });

  it('never throws, whatever the line (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (line) => {
          const parsed = parseWorkloadLine(line);
          expect(typeof parsed.ok).toBe('boolean');
        },
      ),
    );
  });

  it('accepts every well-formed result and returns its numbers unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e12, noNaN: true }),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.nat(),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (start, length, iterations, gpuMs) => {
          const message = {
            event: 'result',
            trial: 'x',
            windowStartUs: start,
            windowEndUs: start + length,
            iterations,
            gpuMs,
          };
          const parsed = parseWorkloadLine(JSON.stringify(message));
          expect(parsed).toMatchObject({ ok: true, message });
        },
      ),
    );
  });

  it('writes run commands for both kinds of work', () => {
    expect(JSON.parse(runCommand('a#r0/s2', 123, { kind: 'fixed-work', iterations: null }, { streams: 2 }))).toEqual({
      cmd: 'run',
      trial: 'a#r0/s2',
      startAtUs: 123,
      durationMs: null,
      iterations: null,
      variant: { streams: 2 },
      clients: 1,
    });
    expect(
      JSON.parse(runCommand('b', 1, { kind: 'fixed-duration', durationMs: 500 }, { streams: 1, pinned: false }, 2)),
    ).toMatchObject({
      durationMs: 500,
      iterations: null,
      variant: { streams: 1, pinned: false },
      clients: 2,
    });
  });

  it("sends mix's typed commands as the very lines its JSON round trip sent: keys in the same order", () => {
    const work = { kind: 'fixed-duration' as const, durationMs: 800 };
    const load = { kind: 'poisson' as const, qps: 750 };
    const beside = [{ workload: 'gemm', threadPct: 50, qps: null }];
    // What mix sent before its commands were typed: runCommand's line parsed back, fields added, stringified again.
    expect(encodeRunCommand({ ...runCommandOf('w', 5, work, { streams: 1 }, 2, load), beside })).toBe(
      '{"cmd":"run","trial":"w","startAtUs":5,"durationMs":800,"iterations":null,"variant":{"streams":1},"clients":2,"load":{"kind":"poisson","qps":750},"beside":[{"workload":"gemm","threadPct":50,"qps":null}]}',
    );
    const tenants = {
      ...runCommandOf('t', 5, work, { streams: 1, whole: true }, 1, null, [0]),
      tenantLoads: { 0: load },
      tenantBeside: {},
    };
    expect(encodeRunCommand(tenants)).toBe(
      '{"cmd":"run","trial":"t","startAtUs":5,"durationMs":800,"iterations":null,"variant":{"streams":1,"whole":true},"clients":1,"tenants":[0],"tenantLoads":{"0":{"kind":"poisson","qps":750}},"tenantBeside":{}}',
    );
  });
});
