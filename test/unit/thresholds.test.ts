import { describe, expect, it, vi } from 'vitest';
import { boundsFor, DEFAULT_THRESHOLDS, parseThresholds } from '../../harness/bench/gate/thresholds.js';
import { userErrorOf } from '../helpers.js';

const error = (text: string, file = 'gates.yaml') => userErrorOf(() => parseThresholds(text, file));

describe('thresholds', () => {
  it('defaults grade the canonical probes', () => {
    expect(boundsFor(DEFAULT_THRESHOLDS, 'streams/spin/speedup-k8')?.bounds).toEqual({ min: 1.05 });
    expect(boundsFor(DEFAULT_THRESHOLDS, 'timeslice/gemm/slowdown')?.bounds).toEqual({ min: 1.2, max: 3.5 });
    expect(boundsFor(DEFAULT_THRESHOLDS, 'timeslice/infer/slowdown')).toBeNull();
    expect(boundsFor(DEFAULT_THRESHOLDS, 'streams/pipeline/pageable-speedup-k2')).toBeNull();
  });

  it('reads YAML and JSON; the first matching pattern wins', () => {
    const yaml = parseThresholds(
      'noiseBand: 0.03\nthresholds:\n  "timeslice/gemm/*": { max: 2 }\n  "timeslice/*/slowdown": { min: 1.1, max: 8 }\n',
      'x.yaml',
    );
    expect(yaml.noiseBand).toBe(0.03);
    expect(boundsFor(yaml, 'timeslice/gemm/slowdown')?.bounds).toEqual({ max: 2 });
    expect(boundsFor(yaml, 'timeslice/infer/slowdown')?.bounds).toEqual({ min: 1.1, max: 8 });
    expect(boundsFor(yaml, 'streams/spin/speedup-k2')).toBeNull();
    const json = parseThresholds('{"thresholds": {"mps/*/slowdown": {"max": 1.5}}}', 'x.json');
    expect(json.noiseBand).toBe(0.05);
    expect(json.rules).toEqual([{ pattern: 'mps/*/slowdown', bounds: { max: 1.5 } }]);
  });

  it('an empty file keeps the defaults', () => {
    expect(parseThresholds('', 'x.yaml')).toEqual(DEFAULT_THRESHOLDS);
  });

  it.each([
    [
      'thresholds:\n  "timeslice/gemm/slowdown": { min: high }\n',
      'gates.yaml: thresholds.timeslice/gemm/slowdown.min: Invalid input: expected number, received string (got "high")',
    ],
    [
      'thresholds:\n  "a": { min: 3, max: 2 }\n',
      'gates.yaml: thresholds.a: min must not be above max (got {"min":3,"max":2})',
    ],
    ['thresholds:\n  "a": {}\n', 'gates.yaml: thresholds.a: give min, max or both (got {})'],
    [
      'thresholds:\n  "a": { minimum: 3 }\n',
      'gates.yaml: thresholds.a: Unrecognized key: "minimum" (got {"minimum":3})',
    ],
    ['noiseBand: 2\n', 'gates.yaml: noiseBand: Too big: expected number to be <=1 (got 2)'],
    ['version: 2\n', 'gates.yaml: version: Invalid input: expected 1 (got 2)'],
    ['limits: {}\n', 'gates.yaml: (top level): Unrecognized key: "limits" (got {"limits":{}})'],
    ['thresholds: [\n', 'gates.yaml is not valid YAML: '],
  ])('rejects %j with a message naming the path, the value and what is allowed', (text, message) => {
    expect(error(text)).toContain(message);
  });
});

describe('many threshold rules', () => {
  it('compiles each pattern once, not once per lookup (200k rules took ~55 s when every lookup compiled them all)', () => {
    const rules = Array.from({ length: 2000 }, (_, i) => ({ pattern: `never/${i}/*`, bounds: { min: 1 } }));
    const thresholds = { noiseBand: 0.02, rules };
    const ids = Array.from({ length: 50 }, (_, i) => `timeslice/w${i}/slowdown`);
    const RealRegExp = globalThis.RegExp;
    let built = 0;
    const spy = vi.spyOn(globalThis, 'RegExp').mockImplementation(((source: string | RegExp, flags?: string) => {
      built += 1;
      return new RealRegExp(source, flags);
    }) as unknown as typeof RegExp);
    try {
      for (const id of ids) expect(boundsFor(thresholds, id)).toBeNull();
      for (const id of ids) boundsFor(thresholds, id);
    } finally {
      spy.mockRestore();
    }
    expect(built).toBe(rules.length);
  });
});
