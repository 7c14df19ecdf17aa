/**
 * The one decision "which sharing mode measured cheaper": a mode wins only where its 95% interval
 * separates from every other mode's; otherwise the modes measured the same and isolation decides.
 */
import { describe, expect, it } from 'vitest';
import { type MeasuredMode, modeDecision } from '../../harness/bench/analysis/which-mode.js';
import { separate } from '../../harness/stats/intervals.js';
import { decideMode, type ModeCost, type SharingMode } from '../../harness/stats/mode-decision.js';

const AT = { workload: 'infer', clients: 2 };
/** A mode's slowdown median and interval at AT (aggregate its reciprocal, clients over slowdown). */
const cost = (mode: SharingMode, value: number, ci: [number, number] | null, at = AT): ModeCost => ({
  mode,
  ...at,
  slowdown: { value, ci },
  aggregate: { value: at.clients / value, ci: ci ? [at.clients / ci[1], at.clients / ci[0]] : null },
});

describe('separate', () => {
  it.each([
    { a: [1, 2], b: [2.0001, 3], separated: true, case: 'just separated' },
    { a: [1, 2], b: [2, 3], separated: false, case: 'just touching' },
    { a: [1, 2], b: [1.5, 3], separated: false, case: 'overlapping' },
    { a: [2.0001, 3], b: [1, 2], separated: true, case: 'the other way round' },
    { a: [1, 3], b: [1.5, 2], separated: false, case: 'one inside the other' },
  ] as const)('$case: $separated', ({ a, b, separated }) => {
    expect(separate(a, b)).toBe(separated);
  });
});

describe('decideMode on the slowdown', () => {
  it.each([
    {
      case: 'intervals just separated: the lower wins',
      costs: [cost('mps', 1.2, [1.1, 1.3]), cost('timeslice', 1.4, [1.3001, 1.5])],
      kind: 'cheaper',
      mode: 'mps',
    },
    {
      case: 'intervals just touching: measured the same, time-slicing by isolation',
      costs: [cost('mps', 1.2, [1.1, 1.3]), cost('timeslice', 1.4, [1.3, 1.5])],
      kind: 'same',
      mode: 'timeslice',
      tied: ['timeslice', 'mps'],
    },
    {
      // The case: a custom workload, 0.99× and 1.01×.
      case: 'two overlapping intervals, the lower median under MPS: still the same',
      costs: [cost('mps', 0.99, [0.918, 1.054]), cost('timeslice', 1.01, [0.936, 1.039])],
      kind: 'same',
      mode: 'timeslice',
      tied: ['timeslice', 'mps'],
    },
    {
      case: 'four-way tie: every interval overlaps the lowest',
      costs: [
        cost('streams', 1.2, [1.1, 1.35]),
        cost('green', 1.25, [1.15, 1.4]),
        cost('timeslice', 1.3, [1.2, 1.45]),
        cost('mps', 1.22, [1.12, 1.32]),
      ],
      kind: 'same',
      mode: 'timeslice',
      tied: ['timeslice', 'mps', 'green', 'streams'],
    },
    {
      case: 'four modes, one separated below the rest',
      costs: [
        cost('streams', 1.2, [1.15, 1.25]),
        cost('green', 1.4, [1.3, 1.5]),
        cost('timeslice', 2.7, [2.6, 2.8]),
        cost('mps', 1.3, [1.26, 1.35]),
      ],
      kind: 'cheaper',
      mode: 'streams',
      costlier: ['mps', 'green', 'timeslice'],
    },
    {
      case: 'two tied, two costlier: only the modes overlapping the lowest tie',
      costs: [
        cost('streams', 1.2, [1.1, 1.3]),
        cost('mps', 1.28, [1.25, 1.4]),
        cost('green', 1.38, [1.31, 1.45]),
        cost('timeslice', 2.7, [2.6, 2.8]),
      ],
      kind: 'same',
      mode: 'mps',
      tied: ['mps', 'streams'],
      costlier: ['green', 'timeslice'],
    },
    {
      case: 'equal medians: the same',
      costs: [cost('mps', 1.2, [1.19, 1.21]), cost('green', 1.2, [1.19, 1.21])],
      kind: 'same',
      mode: 'mps',
      tied: ['mps', 'green'],
    },
  ] as const)('$case', ({ costs, case: _case, ...want }) => {
    expect(decideMode(costs, AT)).toMatchObject(want);
  });

  it('skips a mode without an interval, or measured at another client count, and names why', () => {
    const d = decideMode(
      [
        cost('mps', 1.2, [1.1, 1.3]),
        cost('timeslice', 1.4, [1.31, 1.5]),
        cost('mig', 1.0, null),
        cost('streams', 1.1, [1.0, 1.2], { workload: 'infer', clients: 8 }),
      ],
      AT,
    );
    expect(d).toMatchObject({ kind: 'cheaper', mode: 'mps', costlier: ['timeslice'] });
    expect(d.skipped).toEqual([
      { mode: 'mig', reason: 'no 95% interval (too few rounds)' },
      { mode: 'streams', reason: 'measured with 8 infer clients, not 2 infer' },
    ]);
  });

  it('decides nothing with fewer than two modes weighed, and says which were skipped and why', () => {
    const d = decideMode([cost('mps', 1.12, null), cost('timeslice', 5.09, null)], AT);
    expect(d.kind).toBe('none');
    expect(d).toMatchObject({
      reason:
        'fewer than two modes measured with a 95% interval at 2 infer clients: MPS: no 95% interval (too few rounds); time-slicing: no 95% interval (too few rounds)',
    });
    expect(decideMode([cost('mps', 1.2, [1.1, 1.3])], AT)).toMatchObject({
      kind: 'none',
      reason: 'fewer than two modes measured with a 95% interval at 2 infer clients (only MPS has one)',
    });
  });

  it('says what then decided: isolation, and memory as measured (one context per process)', () => {
    const processes = decideMode([cost('mps', 0.99, [0.918, 1.054]), cost('timeslice', 1.01, [0.936, 1.039])], AT, 768);
    expect(processes).toMatchObject({
      kind: 'same',
      isolation:
        'isolation: time-slicing isolates faults (each client its own process and context); a fatal fault in one MPS client ends its neighbours',
      memory: 'memory: the same, one CUDA context per client (768 MiB each, measured here)',
    });
    const mixed = decideMode([cost('mps', 1.2, [1.1, 1.3]), cost('streams', 1.2, [1.1, 1.3])], AT);
    expect(mixed).toMatchObject({
      mode: 'mps',
      memory: 'memory: the in-process modes hold one CUDA context for all 2 tenants, the others one per client',
    });
    expect(mixed.kind === 'same' && mixed.isolation).toContain('in-process tenants share one process and die together');
  });

  it.each([
    // Green contexts are in-process too: one context for the process, whatever it is tied with.
    [
      ['green', 'mps'],
      'memory: the in-process modes hold one CUDA context for all 2 tenants, the others one per client',
    ],
    [['green', 'streams'], 'memory: the same, one CUDA context for every tenant'],
    [['streams', 'green'], 'memory: the same, one CUDA context for every tenant'],
    [['mps', 'timeslice'], 'memory: the same, one CUDA context per client'],
  ] as const)('a tie of %j: %s', (modes, memory) => {
    const d = decideMode(
      modes.map((m) => cost(m, 1.2, [1.1, 1.3])),
      AT,
    );
    expect(d).toMatchObject({ kind: 'same', memory });
  });

  it('skips a mode measured on another workload at the same client count', () => {
    const d = decideMode(
      [
        cost('mps', 1.2, [1.1, 1.3]),
        cost('timeslice', 1.4, [1.31, 1.5]),
        cost('mig', 1.0, [0.9, 1.1], { workload: 'gemm', clients: 2 }),
      ],
      AT,
    );
    expect(d).toMatchObject({ kind: 'cheaper', mode: 'mps', costlier: ['timeslice'] });
    expect(d.skipped).toEqual([{ mode: 'mig', reason: 'measured with 2 gemm clients, not 2 infer' }]);
  });

  it.each([
    ['slowdown', ['mps', 'green'], ['mps', 'green']],
    ['slowdown', ['green', 'mps'], ['mps', 'green']],
    ['aggregate', ['streams', 'timeslice'], ['timeslice', 'streams']],
    ['aggregate', ['timeslice', 'streams'], ['timeslice', 'streams']],
  ] as const)('equal %s medians of %j are compared in order of isolation: %j', (metric, modes, order) => {
    const d = decideMode(
      modes.map((m) => cost(m, 1.25, [1.2, 1.3])),
      AT,
      null,
      metric,
    );
    expect(d.kind !== 'none' && d.compared.map((c) => c.mode)).toEqual(order);
  });
});

describe('decideMode on the aggregate (higher is better)', () => {
  it.each([
    { case: 'separated above: MPS', mps: [1.07, 1.08], ts: [0.98, 1.01], kind: 'cheaper', mode: 'mps' },
    { case: 'separated below: time-slicing', mps: [0.9, 0.97], ts: [0.98, 1.01], kind: 'cheaper', mode: 'timeslice' },
    { case: 'touching: the same', mps: [1.01, 1.08], ts: [0.98, 1.01], kind: 'same', mode: 'timeslice' },
  ] as const)('$case', ({ mps, ts, kind, mode }) => {
    const of = (m: SharingMode, ci: readonly [number, number]): ModeCost => ({
      mode: m,
      ...AT,
      slowdown: null,
      aggregate: { value: (ci[0] + ci[1]) / 2, ci: [ci[0], ci[1]] },
    });
    expect(decideMode([of('mps', mps), of('timeslice', ts)], AT, null, 'aggregate')).toMatchObject({ kind, mode });
  });

  it('skips a mode without an aggregate, saying so', () => {
    const none = {
      mode: 'mig' as const,
      ...AT,
      slowdown: { value: 1, ci: [0.9, 1.1] as [number, number] },
      aggregate: null,
    };
    expect(decideMode([none], AT, null, 'aggregate')).toMatchObject({
      kind: 'none',
      skipped: [{ mode: 'mig', reason: 'no aggregate measured' }],
    });
  });
});

describe("modeDecision: a run's modes", () => {
  const measuredMode = (slowdown: number | null, ci: [number, number] | null, clients = 2): MeasuredMode => ({
    workload: 'infer',
    clients,
    slowdown,
    slowdownCi: ci,
    aggregate: null,
    p99Ratio: null,
    contendedP99Ms: null,
  });

  it('decides where the slowdowns were measured, and names a mode measured without one', () => {
    // Green recorded only in-slice ratios (no slowdown against the whole GPU), at 4 tenants.
    const d = modeDecision({
      source: 'run r',
      timeslice: measuredMode(2.7, [2.6, 2.8]),
      mps: measuredMode(1.7, [1.65, 1.75]),
      green: measuredMode(null, null, 4),
    });
    expect(d).toMatchObject({ kind: 'cheaper', mode: 'mps', clients: 2 });
    expect(d.skipped).toEqual([{ mode: 'green', reason: 'measured with 4 infer clients, not 2 infer' }]);
    const same = modeDecision({
      source: 'run r',
      timeslice: measuredMode(2.7, [2.6, 2.8]),
      mps: null,
      green: measuredMode(null, null),
    });
    expect(same).toMatchObject({ kind: 'none' });
    expect(same.skipped).toEqual([
      { mode: 'green', reason: 'no slowdown against one client alone on the whole GPU in this run' },
    ]);
  });

  it('compares nothing where no mode measured a slowdown (a cross-GPU run)', () => {
    expect(modeDecision({ source: 'run r', timeslice: measuredMode(null, null, 3), mps: null })).toEqual({
      kind: 'none',
      reason: 'no sharing mode measured on a contention workload',
      skipped: [],
    });
  });
});
