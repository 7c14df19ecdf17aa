/**
 * The plan's arithmetic as properties (fast-check) and at its boundaries: in-process options (streams,
 * green contexts) make one CUDA context whatever the models, time-slicing and MPS one per model; a fit
 * is the need against the GPU's memory less the headroom, its edge included; the most models is the
 * largest count that fits; the binding limit is the smallest limit; MPS stops at its client limit and
 * green contexts at their SM groups; nothing fitting, the fewest GPUs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MeasuredMode } from '../../harness/bench/analysis/which-mode.js';
import { advise } from '../../harness/deploy/advice.js';
import { MAX_MPS_REPLICAS } from '../../harness/deploy/k8s.js';
import {
  CONTEXT_OVERHEAD_GIB,
  DEFAULT_HEADROOM_PCT,
  type ModeAssessment,
  type PlanGpu,
  type PlanRequest,
} from '../../harness/deploy/plan-types.js';
import { sloReach } from '../../harness/deploy/slo-reach.js';
import {
  bindingLimit,
  contextOverhead,
  greenGranule,
  limitReasons,
  limitsOf,
  memoryFit,
  type Overhead,
} from '../../harness/deploy/verdicts.js';

const ASSUMED: Overhead = { gib: CONTEXT_OVERHEAD_GIB, measured: false, text: '0.5 GiB assumed overhead' };
const GPU80: PlanGpu = { name: 'GPU80', memoryGiB: 80, mig: null };
const request = (models: number, memGiB: number, extra: Partial<PlanRequest> = {}): PlanRequest => ({
  models,
  memGiB,
  smPct: 10,
  sloP99Ms: null,
  ...extra,
});
const of = (assessments: ModeAssessment[], mode: ModeAssessment['mode']) =>
  assessments.find((a) => a.mode === mode) as ModeAssessment;
/** The "at N models" of a binding-limit line. */
const limitAt = (text: string) => Number(/binding limit: .*, at (\d+) models/.exec(text)?.[1]);

// GiB on a grid of 1/64 (exact in binary), so that the properties test the rule, not rounding.
const gibArb = (lo: number, hi: number) => fc.integer({ min: lo * 64, max: hi * 64 }).map((x) => x / 64);
const requestArb = fc.record({
  models: fc.integer({ min: 1, max: 80 }),
  memGiB: gibArb(1 / 64, 100),
  smPct: fc.integer({ min: 1, max: 100 }),
  sloP99Ms: fc.constant(null),
  headroomPct: fc.integer({ min: 0, max: 50 }),
});
const gpuArb = fc.record({ name: fc.constant('G'), memoryGiB: gibArb(1, 200), mig: fc.constant(null) });
const overArb = gibArb(0, 4).map((gib): Overhead => ({ gib, measured: true, text: `${gib} GiB` }));

describe('memoryFit: properties', () => {
  it('one context for an in-process option, one per model otherwise', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, overArb, (req, gpu, over) => {
        const one = memoryFit(req, gpu, over, false);
        const each = memoryFit(req, gpu, over, true);
        expect(one.needGiB).toBeCloseTo(req.models * req.memGiB + over.gib, 9);
        expect(each.needGiB).toBeCloseTo(req.models * (req.memGiB + over.gib), 9);
        expect(one.usableGiB).toBeCloseTo(gpu.memoryGiB * (1 - req.headroomPct / 100), 9);
      }),
    );
  });

  it('fits exactly when the need is within the usable memory', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, overArb, fc.boolean(), (req, gpu, over, perModel) => {
        const fit = memoryFit(req, gpu, over, perModel);
        expect(fit.fits).toBe(fit.needGiB <= fit.usableGiB + 1e-9);
        expect(fit.line).toContain(fit.fits ? 'left' : 'short');
      }),
    );
  });

  it('the most models is the largest count that fits', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, overArb, fc.boolean(), (req, gpu, over, perModel) => {
        const most = memoryFit(req, gpu, over, perModel).mostModels;
        expect(most).toBeGreaterThanOrEqual(0);
        if (most > 0) expect(memoryFit({ ...req, models: most }, gpu, over, perModel).fits).toBe(true);
        expect(memoryFit({ ...req, models: most + 1 }, gpu, over, perModel).fits).toBe(false);
      }),
    );
  });

  it('a need over the usable memory by float rounding only (1e-9 GiB) still fits; more does not', () => {
    const exact: Overhead = { gib: 0, measured: true, text: '0 GiB' };
    const gpu = { name: 'G', memoryGiB: 1, mig: null };
    expect(memoryFit({ ...request(1, 1 + 1e-9), headroomPct: 0 }, gpu, exact, true).fits).toBe(true);
    expect(memoryFit({ ...request(1, 1 + 2e-9), headroomPct: 0 }, gpu, exact, true).fits).toBe(false);
  });

  it('the default headroom is 5%, the assumed overhead 0.5 GiB a context', () => {
    expect(DEFAULT_HEADROOM_PCT).toBe(5);
    expect(CONTEXT_OVERHEAD_GIB).toBe(0.5);
    expect(memoryFit(request(1, 1), GPU80, ASSUMED, true).usableGiB).toBeCloseTo(76, 12);
    expect(contextOverhead(null, 'streams')).toEqual({ gib: 0.5, measured: false, text: '0.5 GiB assumed overhead' });
  });
});

describe('advise: each option against the memory arithmetic (properties)', () => {
  it('in-process options charge one context, time-slicing and MPS one per model; MPS stops at its client limit', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, (req, gpu) => {
        const a = advise(req, gpu, null).assessments;
        const one = memoryFit(req, gpu, ASSUMED, false);
        const each = memoryFit(req, gpu, ASSUMED, true);
        expect(of(a, 'streams')).toMatchObject({ fits: one.fits, mostModels: one.mostModels });
        expect(of(a, 'timeslice')).toMatchObject({ fits: each.fits, mostModels: each.mostModels });
        expect(of(a, 'mps')).toMatchObject({
          fits: each.fits && req.models <= MAX_MPS_REPLICAS,
          mostModels: Math.min(each.mostModels, MAX_MPS_REPLICAS),
        });
        expect(of(a, 'green').mostModels).toBeLessThanOrEqual(one.mostModels);
        if (of(a, 'green').fits) expect(one.fits).toBe(true);
        expect(of(a, 'streams').mostModels).toBeGreaterThanOrEqual(of(a, 'timeslice').mostModels);
        expect(of(a, 'mig')).toMatchObject({ fits: false, mostModels: 0 });
      }),
    );
  });

  it('the binding limit is the smallest of the limits, and says when it is below the models asked', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, (req, gpu) => {
        const memoryEach = memoryFit(req, gpu, ASSUMED, true).mostModels;
        const memoryOne = memoryFit(req, gpu, ASSUMED, false).mostModels;
        expect(limitAt(bindingLimit(req, gpu, null, 'timeslice'))).toBe(memoryEach);
        expect(limitAt(bindingLimit(req, gpu, null, 'streams'))).toBe(memoryOne);
        expect(limitAt(bindingLimit(req, gpu, null, 'mps'))).toBe(Math.min(memoryEach, MAX_MPS_REPLICAS));
        expect(limitAt(bindingLimit(req, gpu, null, 'green'))).toBe(Math.min(memoryOne, Math.floor(100 / req.smPct)));
        const text = bindingLimit(req, gpu, null, 'timeslice');
        expect(text.includes(`(fewer than the ${req.models} asked)`)).toBe(memoryEach < req.models);
      }),
    );
  });

  it('nothing fitting one GPU: the fewest GPUs with the option that holds the most models', () => {
    fc.assert(
      fc.property(requestArb, gpuArb, (req, gpu) => {
        const advice = advise(req, gpu, null);
        if (advice.assessments.some((a) => a.fits)) return;
        const most = Math.max(...advice.assessments.map((a) => a.mostModels));
        expect(advice.recommendation).toBeNull();
        if (most > 0) expect(advice.why).toContain(`the fewest is ${Math.ceil(req.models / most)} such GPUs`);
        else expect(advice.why).toContain('no option fits even one model per GPU');
      }),
    );
  });
});

describe('boundaries on an 80 GiB GPU (76 GiB usable with 5% headroom)', () => {
  const e = 1e-6;
  // 10 models: in process, 10 × m + 0.5 ≤ 76 (m ≤ 7.55); a context each, 10 × (m + 0.5) ≤ 76 (m ≤ 7.1).
  it.each([
    [7.1 - e, true, true],
    [7.1, true, true],
    [7.1 + e, true, false],
    [7.55 - e, true, false],
    [7.55, true, false],
    [7.55 + e, false, false],
  ])('10 models of %d GiB: in process fits %s, a context each fits %s', (memGiB, inProcess, perModel) => {
    const a = advise(request(10, memGiB), GPU80, null).assessments;
    expect(of(a, 'streams').fits).toBe(inProcess);
    expect(of(a, 'green').fits).toBe(inProcess);
    expect(of(a, 'timeslice').fits).toBe(perModel);
    expect(of(a, 'mps').fits).toBe(perModel);
  });

  it('at the in-process edge, the most models is 10 in process and 9 with a context each', () => {
    const a = advise(request(10, 7.55), GPU80, null).assessments;
    expect(of(a, 'streams').mostModels).toBe(10);
    expect(of(a, 'timeslice').mostModels).toBe(9);
    expect(of(a, 'streams').reasons[0]).toContain('1 context × 0.5 GiB assumed overhead (one process) = 76 GiB');
    expect(of(a, 'timeslice').reasons[0]).toContain('10 contexts × 0.5 GiB assumed overhead = 80.5 GiB');
  });

  it.each([
    [MAX_MPS_REPLICAS - 1, true],
    [MAX_MPS_REPLICAS, true],
    [MAX_MPS_REPLICAS + 1, false],
  ])('MPS with %i clients of 0.25 GiB fits: %s', (models, fits) => {
    const mps = of(advise(request(models, 0.25, { smPct: 1 }), GPU80, null).assessments, 'mps');
    expect(mps.fits).toBe(fits);
    expect(mps.mostModels).toBe(MAX_MPS_REPLICAS);
  });

  it.each([
    [5, 10, true],
    [0, 10, true],
    [5, 10.5, false],
  ])('headroom %d% with 7 models of %d GiB (a context each): fits %s', (headroomPct, memGiB, fits) => {
    // 7 × (10 + 0.5) = 73.5 ≤ 76 (5%) and ≤ 80 (0%); 7 × 11 = 77 > 76.
    expect(of(advise(request(7, memGiB, { headroomPct }), GPU80, null).assessments, 'timeslice').fits).toBe(fits);
  });
});

describe('the binding limit and the memory line, word for word', () => {
  it('memory binds; the throughput note only when SMs run out first', () => {
    expect(bindingLimit(request(4, 10, { smPct: 30 }), GPU80, null, 'timeslice')).toBe(
      'binding limit: memory (10 GiB per model + 0.5 GiB assumed overhead per model, a context each, of 76 GiB usable), at 7 models; before it, throughput: with every model busy at once only 3 get their 30% of the SMs',
    );
    // 100 ÷ 14% = 7 busy models, as many as memory allows: no note.
    expect(bindingLimit(request(4, 10, { smPct: 14 }), GPU80, null, 'timeslice')).toBe(
      'binding limit: memory (10 GiB per model + 0.5 GiB assumed overhead per model, a context each, of 76 GiB usable), at 7 models',
    );
    // As many models as memory allows: not "fewer than asked".
    expect(bindingLimit(request(7, 10, { smPct: 14 }), GPU80, null, 'timeslice')).toMatch(/, at 7 models$/);
    expect(bindingLimit(request(8, 10, { smPct: 10 }), GPU80, null, 'streams')).toBe(
      'binding limit: memory (10 GiB per model + 0.5 GiB assumed overhead once, one process, of 76 GiB usable), at 7 models (fewer than the 8 asked)',
    );
  });

  it('the MPS client limit binds when memory allows more; a tie names the first limit', () => {
    expect(bindingLimit(request(50, 1, { smPct: 1 }), { ...GPU80, memoryGiB: 200 }, null, 'mps')).toBe(
      'binding limit: the MPS client limit, at 48 models (fewer than the 50 asked)',
    );
    // 48 × (1 + 0.5) = 72 of 72.2 usable: memory and the client limit both at 48.
    expect(bindingLimit(request(2, 1, { smPct: 1 }), { ...GPU80, memoryGiB: 76 }, null, 'mps')).toMatch(
      /^binding limit: memory .*, at 48 models$/,
    );
  });

  it('the memory line', () => {
    expect(memoryFit(request(10, 7.55), GPU80, ASSUMED, false).line).toBe(
      'memory: 10 × 7.55 GiB + 1 context × 0.5 GiB assumed overhead (one process) = 76 GiB of 76 GiB usable (80 GiB less 5% headroom): 0 GiB left',
    );
    expect(memoryFit(request(10, 7.55), GPU80, ASSUMED, true).line).toBe(
      'memory: 10 × 7.55 GiB + 10 contexts × 0.5 GiB assumed overhead = 80.5 GiB of 76 GiB usable (80 GiB less 5% headroom): 4.5 GiB short',
    );
  });

  it('green contexts: the groups in words', () => {
    const H100: PlanGpu = { name: 'H100 80GB HBM3', memoryGiB: 80, mig: null, smCount: 132 };
    expect(bindingLimit(request(4, 1, { smPct: 25 }), H100, null, 'green')).toBe(
      'binding limit: SMs of its own for each model (25% of 132 SMs is a group of 40: groups of at least 8 SMs come in steps of 8 at compute capability 9.0 and later, so 3 groups), at 3 models (fewer than the 4 asked)',
    );
    expect(bindingLimit(request(4, 1, { smPct: 30 }), GPU80, null, 'green')).toBe(
      "binding limit: SMs of its own for each model (30% each; this GPU's SM count is not known), at 3 models (fewer than the 4 asked)",
    );
  });
});

describe('green contexts: groups of SMs', () => {
  const H100: PlanGpu = { name: 'H100 80GB HBM3', memoryGiB: 80, mig: null, smCount: 132 };
  const A100: PlanGpu = { name: 'A100-SXM4-80GB', memoryGiB: 80, mig: null, smCount: 108 };
  it.each([
    // 132 SMs × 24% = 31.7 → a group of 32 (steps of 8): 4 groups; × 25% = 33 → 40: 3 groups.
    [H100, 24, 4],
    [H100, 25, 3],
    // At least 8 SMs: 1% of 132 is a group of 8, 16 groups.
    [H100, 1, 16],
    // Steps of 2 from 4 on an A100: 108 × 10% = 10.8 → 12: 9 groups; 1% → 4: 27 groups.
    [A100, 10, 9],
    [A100, 1, 27],
  ] as const)('%s at %i% of the SMs: %i groups', (gpu, smPct, groups) => {
    const green = of(advise(request(1, 1, { smPct }), gpu, null).assessments, 'green');
    expect(green.mostModels).toBe(groups);
    expect(of(advise(request(groups, 1, { smPct }), gpu, null).assessments, 'green').fits).toBe(true);
    expect(of(advise(request(groups + 1, 1, { smPct }), gpu, null).assessments, 'green').fits).toBe(false);
  });

  it.each([
    ['NVIDIA A100-SXM4-80GB', 4],
    ['NVIDIA A40', 4],
    ['NVIDIA A30', 4],
    ['NVIDIA A10', 4],
    ['NVIDIA A10G', 4],
    ['NVIDIA L40', 4],
    ['NVIDIA L40S', 4],
    ['NVIDIA L4', 4],
    ['NVIDIA H100 80GB HBM3', 8],
    ['NVIDIA H200', 8],
    ['NVIDIA A1000', 8], // not a word of the list: taken as recent as Hopper
  ] as const)('the granule of %s: groups of at least %i SMs', (name, minSms) => {
    expect(greenGranule(name)).toEqual(
      minSms === 4
        ? { minSms: 4, stepSms: 2, architecture: 'compute capability 8.x' }
        : { minSms: 8, stepSms: 8, architecture: 'compute capability 9.0 and later' },
    );
  });

  it('without an SM count, 100 ÷ the share asked', () => {
    expect(of(advise(request(1, 1, { smPct: 30 }), GPU80, null).assessments, 'green').mostModels).toBe(3);
  });
});

describe('a measured overhead and the latency target', () => {
  const measured = (rise: number, reserved: number, p99: number | null = null) => ({
    source: 'run r',
    timeslice: {
      workload: 'infer',
      clients: 4,
      slowdown: 1.5,
      aggregate: 2,
      p99Ratio: 1.2,
      contendedP99Ms: p99,
      risePerProcessMiB: rise,
      reservedPerProcessMiB: reserved,
    },
    mps: null,
  });

  it('a rise without a reservation cannot be separated: the assumed overhead', () => {
    const m = measured(1536, 512);
    const noReservation = { ...m, timeslice: { ...m.timeslice, reservedPerProcessMiB: null } };
    expect(contextOverhead(noReservation, 'timeslice')).toMatchObject({ gib: 0.5, measured: false });
    const noRise = { ...m, timeslice: { ...m.timeslice, risePerProcessMiB: null } };
    expect(contextOverhead(noRise, 'timeslice')).toMatchObject({ gib: 0.5, measured: false });
  });

  it("MIG's overhead: another mode's measurement, not the MIG instances'", () => {
    const withMig = { ...measured(1536, 512), mig: { ...measured(5120, 1024).timeslice } };
    expect(contextOverhead(withMig, 'mig')).toMatchObject({ gib: 1, measured: true });
  });

  it("in-process tenants' latency target is named per tenant", () => {
    const m = measured(1536, 512);
    const missed = { ...m, streams: { ...m.timeslice, contendedP99Ms: 5 } };
    expect(bindingLimit(request(2, 1, { sloP99Ms: 4 }), GPU80, missed, 'streams')).toContain(
      'the 4 ms p99 target (measured contended p99: 5.0 ms at 4 tenants)',
    );
    const held = { ...m, streams: { ...m.timeslice, contendedP99Ms: 2 } };
    expect(of(advise(request(2, 1, { sloP99Ms: 4 }), GPU80, held).assessments, 'streams').reasons).toContain(
      'the 4 ms p99 target: held at every count measured, up to 4 tenants (2.0 ms at 4) (measured contended p99: 2.0 ms at 4 tenants)',
    );
  });

  it("a mode's own measured overhead before another mode's", () => {
    const both = {
      ...measured(1536, 512),
      mps: { ...measured(3072, 1024).timeslice, clients: 4 },
    };
    expect(contextOverhead(both, 'timeslice')).toEqual({ gib: 1, measured: true, text: '1 GiB measured overhead' });
    expect(contextOverhead(both, 'mps')).toEqual({ gib: 2, measured: true, text: '2 GiB measured overhead' });
    expect(contextOverhead(both, 'streams')).toMatchObject({ gib: 2 });
  });

  it("an option's reasons: the binding limit, and the target beside it only where the target limits nothing", () => {
    const m = measured(1536, 512);
    const at = (p99: number | null, sloP99Ms: number | null) =>
      limitReasons(
        limitsOf(
          request(2, 1, { sloP99Ms, smPct: 1 }),
          GPU80,
          { ...m, timeslice: { ...m.timeslice, contendedP99Ms: p99 } },
          'timeslice',
        ),
        sloP99Ms,
      );
    const memory =
      'binding limit: memory (1 GiB per model + 1 GiB measured overhead per model, a context each, of 76 GiB usable), at 38 models';
    expect(at(2, 4)).toEqual([
      memory,
      'the 4 ms p99 target: held at every count measured, up to 4 clients (2.0 ms at 4) (measured contended p99: 2.0 ms at 4 clients)',
    ]);
    // Missed, the target is the binding limit itself, named once.
    expect(at(5, 4)).toEqual([
      'binding limit: the 4 ms p99 target (measured contended p99: 5.0 ms at 4 clients), at 0 models (fewer than the 2 asked)',
    ]);
    expect(at(2, null)).toEqual([memory]);
    expect(at(null, 4)).toEqual([memory]);
  });

  it('without a target, a measured p99 misses nothing', () => {
    const a = advise(request(2, 1), GPU80, measured(1536, 512, 100));
    expect(of(a.assessments, 'timeslice').missesSlo).toBe(false);
    expect(bindingLimit(request(2, 1), GPU80, measured(1536, 512, 100), 'timeslice')).not.toContain('p99');
  });

  it('a sweep: the most clients measured within the target', () => {
    // The quoted count (4) with the contended p99 it quotes, as a run gives them.
    const sweep = measured(1536, 512, 4);
    sweep.timeslice = {
      ...sweep.timeslice,
      p99ByClients: [
        { clients: 2, p99Ms: 3 },
        { clients: 4, p99Ms: 4 },
        { clients: 8, p99Ms: 6 },
        { clients: 16, p99Ms: null },
      ],
    } as typeof sweep.timeslice;
    const text = bindingLimit(request(2, 1, { sloP99Ms: 4 }), GPU80, sweep, 'timeslice');
    expect(text).toBe(
      'binding limit: the 4 ms p99 target (measured contended p99: 3.0 ms at 2, 4.0 ms at 4, 6.0 ms at 8 clients), at 4 models',
    );
    const none = {
      ...sweep,
      timeslice: { ...sweep.timeslice, clients: 2, contendedP99Ms: null, p99ByClients: [{ clients: 2, p99Ms: null }] },
    };
    expect(bindingLimit(request(2, 1, { sloP99Ms: 4 }), GPU80, none, 'timeslice')).toContain('binding limit: memory');
    const over = {
      ...sweep,
      timeslice: { ...sweep.timeslice, clients: 2, contendedP99Ms: 5, p99ByClients: [{ clients: 2, p99Ms: 5 }] },
    };
    expect(bindingLimit(request(2, 1, { sloP99Ms: 4 }), GPU80, over, 'timeslice')).toContain(
      'binding limit: the 4 ms p99 target (measured contended p99: 5.0 ms at 2 clients), at 0 models (fewer than the 2 asked)',
    );
  });

  it('the overhead is the rise less the reservation, only when the rise is larger', () => {
    expect(contextOverhead(measured(1536, 512), 'timeslice')).toMatchObject({ gib: 1, measured: true });
    // Another mode's measurement stands in for a mode the run did not measure.
    expect(contextOverhead(measured(1536, 512), 'mps')).toMatchObject({ gib: 1, measured: true });
    expect(contextOverhead(measured(512, 512), 'timeslice')).toMatchObject({ gib: 0.5, measured: false });
    expect(contextOverhead(measured(1536, 512), 'mig')).toMatchObject({ gib: 1, measured: true });
  });

  it.each([
    [3.99, 'held'],
    [4, 'held'],
    [4.01, 'missed'],
  ])('a contended p99 of %d ms against a 4 ms target: %s', (p99, kind) => {
    const a = advise(request(2, 1, { sloP99Ms: 4 }), GPU80, measured(1536, 512, p99));
    const timeslice = of(a.assessments, 'timeslice');
    expect(timeslice.slo?.kind).toBe(kind);
    expect(timeslice.missesSlo).toBe(kind === 'missed');
    // Missed, the target binds at the most models that held it (none here); held, it limits nothing: memory binds.
    const limit = bindingLimit(request(2, 1, { sloP99Ms: 4 }), GPU80, measured(1536, 512, p99), 'timeslice');
    expect(limitAt(limit)).toBe(kind === 'missed' ? 0 : 38);
    expect(timeslice.mostModels).toBe(limitAt(limit));
  });
});

describe('the latency target against a sweep: one answer, its limit and how far it was measured', () => {
  const sweep = (points: Array<[number, number | null]>): MeasuredMode => ({
    workload: 'infer',
    clients: points.at(-1)?.[0] ?? 1,
    slowdown: 2,
    aggregate: 1,
    p99Ratio: 2,
    contendedP99Ms: points.at(-1)?.[1] ?? null,
    p99ByClients: points.map(([clients, p99Ms]) => ({ clients, p99Ms })),
  });
  const held = sweep([
    [2, 0.6],
    [4, 1.1],
    [8, 2.2],
  ]);

  it.each([
    [7, 'held'],
    [8, 'held'],
    [9, 'unmeasured'],
    [40, 'unmeasured'],
  ])('held at 2, 4 and 8 clients, for %i models: %s', (models, kind) => {
    const reach = sloReach(10, held, models, 'tenants');
    expect(reach?.kind).toBe(kind);
    expect(reach?.text).toBe(
      `held at every count measured, up to 8 tenants (2.2 ms at 8)${kind === 'unmeasured' ? `; not measured at ${models}` : ''}`,
    );
  });

  it('missed at a count: the most models that held it below that count, whatever came after', () => {
    const noisy = sweep([
      [2, 1],
      [4, 11],
      [8, 9],
    ]);
    expect(sloReach(10, noisy, 8, 'clients')).toMatchObject({
      kind: 'missed',
      most: 2,
      text: 'held up to 2 clients (1.0 ms), missed at 4 clients (11.0 ms)',
    });
    expect(sloReach(0.5, noisy, 8, 'clients')).toMatchObject({ kind: 'missed', most: 0 });
    expect(sloReach(10, sweep([[2, null]]), 8, 'clients')).toBeNull();
    expect(sloReach(null, noisy, 8, 'clients')).toBeNull();
  });

  it.each([
    [2, false],
    [3, true],
  ])('held up to 2 and missed at 4, %i models miss the target: %s', (models, misses) => {
    const m = sweep([
      [2, 1],
      [4, 11],
    ]);
    const a = advise(request(models, 1, { sloP99Ms: 10 }), GPU80, { source: 'run r', timeslice: m, mps: null });
    expect(of(a.assessments, 'timeslice')).toMatchObject({ missesSlo: misses, mostModels: 2 });
  });

  it('every option: its verdict, its binding limit and its most models agree (the screen and --explain read them)', () => {
    fc.assert(
      fc.property(
        requestArb,
        gpuArb,
        fc.array(fc.tuple(fc.integer({ min: 1, max: 64 }), fc.double({ min: 0.1, max: 20, noNaN: true })), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.double({ min: 0.5, max: 15, noNaN: true }),
        (req, gpu, points, slo) => {
          const unique = [...new Map(points.map(([c, p]) => [c, p])).entries()].sort((a, b) => a[0] - b[0]);
          const m = sweep(unique);
          const measuredModes = { source: 'run r', timeslice: m, mps: m, streams: m, green: m };
          const advice = advise({ ...req, sloP99Ms: slo }, gpu, measuredModes);
          for (const a of advice.assessments.filter((x) => x.mode !== 'mig')) {
            const limit = a.reasons.find((r) => r.startsWith('binding limit: ')) as string;
            expect(limitAt(limit)).toBe(a.mostModels);
            // An option that fits and meets the target is never limited by the target below the models asked.
            if (a.fits && !a.missesSlo)
              expect(limit).not.toMatch(/^binding limit: the [\d.]+ ms p99 target.*fewer than/);
            if (a.missesSlo) expect(a.mostModels).toBeLessThan(req.models);
          }
        },
      ),
    );
  });
});
