/**
 * The plan's verdicts at their edges, table by table: the MPS client limit and green contexts' SM
 * groups as fits, MIG's smallest slice, the ranking of the options that fit, the fewest GPUs when none
 * fits one, and whether a run's GPU is the model planned for. Each row sits on or just past an edge.
 */
import { describe, expect, it } from 'vitest';
import type { Measured, MeasuredMode } from '../../harness/bench/analysis/which-mode.js';
import { MAX_MPS_REPLICAS } from '../../harness/deploy/k8s.js';
import { builtinMigGpu, type MigGpu } from '../../harness/deploy/mig-profiles.js';
import {
  CONTEXT_OVERHEAD_GIB,
  type ModeAssessment,
  type PlanGpu,
  type PlanRequest,
  type ShareMode,
} from '../../harness/deploy/plan-types.js';
import {
  fewestGpus,
  greenFits,
  limitsOf,
  migFit,
  mpsFits,
  type Overhead,
  rankOptions,
  sameGpuModel,
  slowdownOf,
} from '../../harness/deploy/verdicts.js';

const ASSUMED: Overhead = { gib: CONTEXT_OVERHEAD_GIB, measured: false, text: '0.5 GiB assumed overhead' };
const request = (models: number, memGiB: number, smPct = 1): PlanRequest => ({ models, memGiB, smPct, sloP99Ms: null });
const BIG: PlanGpu = { name: 'BIG', memoryGiB: 10_000, mig: null };
const A100_80 = builtinMigGpu('A100-80GB') as MigGpu;

describe('the MPS client limit as a fit', () => {
  it.each([
    [MAX_MPS_REPLICAS - 1, true],
    [MAX_MPS_REPLICAS, true],
    [MAX_MPS_REPLICAS + 1, false],
  ])('%i clients, memory to spare: fits %s', (models, fits) => {
    const req = request(models, 1);
    expect(mpsFits(limitsOf(req, BIG, null, 'mps'), models)).toBe(fits);
  });

  it('memory that does not fit is no fit, below the client limit too', () => {
    const req = request(2, 100);
    expect(mpsFits(limitsOf(req, { ...BIG, memoryGiB: 80 }, null, 'mps'), 2)).toBe(false);
  });
});

describe("green contexts' SM groups as a fit", () => {
  // 132 SMs at 9.0: groups of at least 8 in steps of 8; 10% is 13.2 SMs, a group of 16: 8 groups.
  const H100: PlanGpu = { name: 'H100', memoryGiB: 10_000, mig: null, smCount: 132 };
  it.each([
    [7, true],
    [8, true],
    [9, false],
  ])('%i models of 10%% on 132 SMs (8 groups of 16): fits %s', (models, fits) => {
    const req = request(models, 1, 10);
    expect(greenFits(limitsOf(req, H100, null, 'green'), models)).toBe(fits);
  });

  it('limits without SM groups (an option other than green contexts) fit no model as green contexts', () => {
    expect(limitsOf(request(1, 1), BIG, null, 'streams').green).toBeNull();
    expect(greenFits(limitsOf(request(1, 1), BIG, null, 'streams'), 1)).toBe(false);
  });

  it('without an SM count, 100 ÷ the share: 4 groups of 25%, not 5', () => {
    expect(greenFits(limitsOf(request(4, 1, 25), BIG, null, 'green'), 4)).toBe(true);
    expect(greenFits(limitsOf(request(5, 1, 25), BIG, null, 'green'), 5)).toBe(false);
  });
});

describe("MIG's smallest slice for one model and its context (A100-80GB)", () => {
  it.each([
    // [model GiB, SM %, profile, most placed]
    [9.5, 1, '1g.10gb', 7], // 9.5 + 0.5 = 10 GiB: exactly the 1g.10gb's memory
    [9.51, 1, '1g.20gb', 4], // just over: the next memory, the +me profile never chosen
    [9.5, (1 / 7) * 100, '1g.10gb', 7], // exactly one compute slice of seven, as the share is computed
    [9.5, 14.28, '1g.10gb', 7],
    [9.5, 14.29, '2g.20gb', 3], // just over: two slices
    [39.5, 1, '3g.40gb', 2], // 40 GiB: the 3g before the 4g of the same memory
    [79.5, 1, '7g.80gb', 1],
  ])('%f GiB at %f%% of the SMs: %s, %i of them', (memGiB, smPct, profile, most) => {
    const fit = migFit(request(1, memGiB, smPct), A100_80, ASSUMED);
    expect(fit.profile?.name).toBe(profile);
    expect(fit.most).toBe(most);
    expect(fit.needGiB).toBeCloseTo(memGiB + 0.5, 12);
  });

  it.each([
    [9.5, '1g.10gb'], // of 1g.10gb and 1g.20gb, one compute slice each: the less memory
    [19.5, '1g.20gb'], // of 1g.20gb and 2g.20gb, 20 GiB each: the fewer compute slices
    [39.5, '3g.40gb'],
  ])('%f GiB with the profiles listed largest first: still the smallest, %s', (memGiB, profile) => {
    const reversed = { ...A100_80, profiles: [...A100_80.profiles].reverse() };
    expect(migFit(request(1, memGiB), reversed, ASSUMED).profile?.name).toBe(profile);
  });

  it("the most is what the solver places, not the profile's maximum", () => {
    // A table that allows 7 of 1g.10gb but offers them 3 places.
    const three = {
      ...A100_80,
      profiles: A100_80.profiles.map((p) => (p.name === '1g.10gb' ? { ...p, starts: [0, 1, 2] } : p)),
    };
    expect(migFit(request(1, 9.5), three, ASSUMED)).toMatchObject({
      profile: { name: '1g.10gb', maxInstances: 7 },
      most: 3,
    });
  });

  it('a +me profile is never chosen, even listed before its twin', () => {
    const meFirst = { ...A100_80, profiles: [...A100_80.profiles].sort((a) => (a.name.endsWith('+me') ? -1 : 0)) };
    expect(meFirst.profiles[0]?.name).toBe('1g.10gb+me');
    expect(migFit(request(1, 9.5), meFirst, ASSUMED).profile?.name).toBe('1g.10gb');
  });

  it('no slice holds more than the whole GPU: no profile, none placed', () => {
    expect(migFit(request(1, 79.51), A100_80, ASSUMED)).toMatchObject({ profile: null, most: 0 });
  });
});

const option = (mode: ShareMode, fits = true, missesSlo = false, mostModels = 4): ModeAssessment => ({
  mode,
  fits,
  mostModels,
  reasons: [],
  breaks: [],
  geometry: null,
  missesSlo,
});
const ALL: ShareMode[] = ['streams', 'green', 'timeslice', 'mps', 'mig'];
const measuredMode = (slowdown: number): MeasuredMode => ({
  workload: 'infer',
  clients: 2,
  slowdown,
  aggregate: 2 / slowdown,
  p99Ratio: 1,
  contendedP99Ms: 1,
});

describe('the ranking of the options that fit', () => {
  it.each([
    // [which fit (and meet the target), the order]
    [ALL, ['mig', 'mps', 'timeslice', 'green', 'streams']],
    [
      ['streams', 'green', 'timeslice', 'mps'],
      ['mps', 'timeslice', 'green', 'streams'],
    ],
    [
      ['streams', 'green'],
      ['green', 'streams'],
    ],
    [['streams'], ['streams']],
    [[], []],
  ] as Array<[ShareMode[], ShareMode[]]>)('nothing measured, %j fit: by isolation, %j', (fitting, order) => {
    const assessments = ALL.map((m) => option(m, fitting.includes(m)));
    expect(rankOptions(assessments, null).ok.map((a) => a.mode)).toEqual(order);
  });

  it('an option that fits but misses the latency target is not ranked', () => {
    const assessments = ALL.map((m) => option(m, true, m === 'mig' || m === 'mps'));
    expect(rankOptions(assessments, null).ok.map((a) => a.mode)).toEqual(['timeslice', 'green', 'streams']);
  });

  it('one option measured: ranked by its slowdown before the unmeasured, MIG still first', () => {
    const measured: Measured = { source: 'run r', timeslice: measuredMode(1.5), mps: null };
    const ranking = rankOptions(
      ALL.map((m) => option(m)),
      measured,
    );
    expect(ranking.decision).toBeNull();
    expect(ranking.ok.map((a) => a.mode)).toEqual(['mig', 'timeslice', 'mps', 'green', 'streams']);
  });

  it("MIG's measured slowdown is no slowdown of a shared mode: one shared mode measured decides nothing", () => {
    const measured: Measured = { source: 'run r', timeslice: measuredMode(1.5), mps: null, mig: measuredMode(1.1) };
    expect(slowdownOf(measured, option('mig'))).toBeNull();
    expect(slowdownOf(measured, option('timeslice'))).toBe(1.5);
    const ranking = rankOptions(
      ALL.map((m) => option(m)),
      measured,
    );
    expect(ranking.decision).toBeNull();
    expect(ranking.ok.map((a) => a.mode)).toEqual(['mig', 'timeslice', 'mps', 'green', 'streams']);
  });

  /** A mode measured at 2 infer clients with a 95% interval of the slowdown. */
  const withCi = (slowdown: number, ci: [number, number] | null): MeasuredMode => ({
    ...measuredMode(slowdown),
    slowdownCi: ci,
  });

  it('one option cheaper: it first, then the costlier by median (not by isolation), then the unmeasured', () => {
    const measured: Measured = {
      source: 'run r',
      streams: withCi(1.1, [1.05, 1.15]),
      timeslice: withCi(1.5, [1.45, 1.55]),
      mps: withCi(2, [1.9, 2.1]),
    };
    const ranking = rankOptions(
      ALL.map((m) => option(m)),
      measured,
    );
    expect(ranking.decision).toMatchObject({ kind: 'cheaper', mode: 'streams', costlier: ['timeslice', 'mps'] });
    expect(ranking.ok.map((a) => a.mode)).toEqual(['mig', 'streams', 'timeslice', 'mps', 'green']);
  });

  it('measured but without intervals: nothing decided, by isolation, not by the bare medians', () => {
    const measured: Measured = {
      source: 'run r',
      streams: withCi(1.1, null),
      timeslice: withCi(1.5, null),
      mps: withCi(2, null),
    };
    const ranking = rankOptions(
      ALL.filter((m) => m !== 'mig').map((m) => option(m)),
      measured,
    );
    expect(ranking.decision?.kind).toBe('none');
    expect(ranking.ok.map((a) => a.mode)).toEqual(['mps', 'timeslice', 'green', 'streams']);
  });
});

describe('none fits one GPU: the fewest GPUs', () => {
  it.each([
    // [models, MPS's most per GPU, time-slicing's, GPUs, option]
    [8, 4, 2, 2, 'mps'], // 8 / 4: exactly 2
    [9, 4, 2, 3, 'mps'], // one more: 3
    [8, 4, 4, 2, 'mps'], // a tie: the better isolated
    [8, 2, 4, 2, 'timeslice'],
  ] as Array<[number, number, number, number, ShareMode]>)(
    '%i models, MPS %i and time-slicing %i a GPU: %i GPUs with %s',
    (models, mps, timeslice, gpus, mode) => {
      const assessments = [option('mps', false, false, mps), option('timeslice', false, false, timeslice)];
      // Either order of the assessments: a tie goes by isolation, not by the order given.
      for (const given of [assessments, [...assessments].reverse()]) {
        const spread = fewestGpus(given, models);
        expect(spread?.gpus).toBe(gpus);
        expect(spread?.a.mode).toBe(mode);
      }
    },
  );

  it('no option holds even one model: none', () => {
    expect(fewestGpus([option('mps', false, false, 0), option('mig', false, false, 0)], 2)).toBeUndefined();
  });
});

describe('the same GPU model: the family as a word, the memory within 10% of the planned', () => {
  it.each([
    // [planned, its GiB, measured, its GiB, same]
    ['H100-80GB', 80, 'NVIDIA H100 80GB HBM3', 79.6, true],
    ['H100-80GB', 80, 'NVIDIA H100 80GB HBM3', 72, true], // 10% below: the edge
    ['H100-80GB', 80, 'NVIDIA H100 80GB HBM3', 71.99, false],
    ['H100-80GB', 80, 'NVIDIA H100 NVL', 88, true], // 10% above: the edge
    ['H100-80GB', 80, 'NVIDIA H100 NVL', 88.01, false],
    ['A100-40GB', 40, 'NVIDIA H100 80GB HBM3', 40, false], // another family
    ['A100-80GB', 80, 'NVIDIA A1000', 80, false], // A100 is no word of A1000
    ['A100-80GB', 80, 'NVIDIA XA100', 80, false], // nor of XA100
    ['A100-80GB', 80, 'NVIDIA A100-SXM4-80GB', 80, true],
    ['a100-80gb', 80, 'NVIDIA A100-SXM4-80GB', 80, true], // any case
    ['NVIDIA H100 80GB HBM3', 80, 'NVIDIA H100 PCIe 80GB', 80, true], // a run's name: its family word
    ['T4', 16, 'Tesla T4', 15, true], // no family token: the name up to its first "-"
    ['H200-141GB', null, 'NVIDIA H200', null, true], // memory unknown: the name alone
    ['H100-80GB', 80, 'NVIDIA H100', null, true], // either memory unknown: the name alone
    ['H100-80GB', null, 'NVIDIA H100', 40, true],
    ['H100-80GB', null, 'NVIDIA H200', null, false],
    ['L4-24GB', 24, 'NVIDIA L4', 22.5, true], // no family token in "L4": the name up to its first "-"
    ['GPU+', 16, 'NVIDIA GPU+', 16, true], // the name is taken literally, not as a pattern
    ['GPU+', 16, 'NVIDIA GPU', 16, false],
  ] as Array<[string, number | null, string, number | null, boolean]>)(
    '%s (%s GiB) and %s (%s GiB): same %s',
    (planned, plannedGiB, other, otherGiB, same) => {
      expect(sameGpuModel({ name: planned, memoryGiB: plannedGiB }, { name: other, memoryGiB: otherGiB })).toBe(same);
    },
  );
});
