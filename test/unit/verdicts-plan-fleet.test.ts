/**
 * plan's arithmetic for a fleet run (harness/deploy/fleet/verdicts.ts): the mode rule over the modes that
 * kept every server within the SLO (its ties to the simpler mode), the rule over capacity's largest fleets,
 * each server's memory and MPS limits, the servers per kind, and the refusals at the MPS client limit and
 * at memory shares over the GPU.
 */
import { describe, expect, it } from 'vitest';
import {
  checkDeployable,
  chooseCapacityMode,
  chooseMeasuredMode,
  countsPerKind,
  type LargestFleet,
  type MeasuredMode,
  SIMPLER_FIRST,
  serverMemory,
  serverThreadPct,
} from '../../harness/deploy/fleet/verdicts.js';
import { MPS_CAP_CONTEXT_MIB } from '../../harness/system/cuda-context.js';
import { MPS_CLIENT_LIMIT } from '../../harness/system/mps/client-limit.js';
import { userErrorOf } from '../helpers.js';

const expectUserError = (fn: () => unknown, re: RegExp) => expect(userErrorOf(fn)).toMatch(re);

const mode = (m: MeasuredMode['mode'], good: number, requests: number, within = true): MeasuredMode => ({
  mode: m,
  everyServerWithin: within,
  good,
  requests,
  // Every mode sends the same schedule: 100 s of windows.
  goodPerS: good / 100,
});

describe('chooseMeasuredMode', () => {
  it('takes only modes where every server kept within the SLO; none: no mode', () => {
    expect(chooseMeasuredMode([mode('mps', 9000, 10_000, false), mode('timeslice', 9990, 10_000, false)])).toBeNull();
    expect(chooseMeasuredMode([])).toBeNull();
    expect(chooseMeasuredMode([mode('mps', 5000, 10_000, false), mode('mps-threads', 9990, 10_000)])).toEqual({
      mode: 'mps-threads',
      tiedWith: [],
    });
  });

  it('the highest goodput where its interval separates from every other', () => {
    // 10000 of 10000 against 9900 of 10000: Wilson intervals [0.99962, 1] and [0.9879, 0.9918] do not overlap.
    expect(chooseMeasuredMode([mode('timeslice', 9900, 10_000), mode('mps-threads', 10_000, 10_000)])).toEqual({
      mode: 'mps-threads',
      tiedWith: [],
    });
    // The simpler mode best: the more complex one separated below it is not named.
    expect(chooseMeasuredMode([mode('mps', 9900, 10_000), mode('timeslice', 10_000, 10_000)])).toEqual({
      mode: 'timeslice',
      tiedWith: [],
    });
    // Equal goodput: the simpler is weighed first, and a mode whose attainment separates below it is not tied.
    expect(chooseMeasuredMode([mode('mps', 1000, 1100), mode('timeslice', 1000, 1000)])).toEqual({
      mode: 'timeslice',
      tiedWith: [],
    });
  });

  it('a mode without requests has no interval: it separates from none', () => {
    expect(chooseMeasuredMode([mode('timeslice', 0, 0), mode('mps', 500, 500)])).toEqual({
      mode: 'timeslice',
      tiedWith: ['mps'],
    });
    // The best (first at equal goodput) without an interval.
    expect(chooseMeasuredMode([mode('timeslice', 0, 0), mode('mps', 0, 500)])).toEqual({
      mode: 'timeslice',
      tiedWith: ['mps'],
    });
  });

  it('ties (intervals overlap) go to the simpler mode, timeslice < mps < mps-threads, and are named', () => {
    expect(SIMPLER_FIRST).toEqual(['timeslice', 'mps', 'mps-threads']);
    // 1000 vs 998 of 1000: intervals overlap.
    expect(
      chooseMeasuredMode([mode('mps-threads', 1000, 1000), mode('mps', 998, 1000), mode('timeslice', 999, 1000)]),
    ).toEqual({ mode: 'timeslice', tiedWith: ['mps', 'mps-threads'] });
    // Equal goodput: the simpler, whatever the order given.
    expect(chooseMeasuredMode([mode('mps-threads', 500, 500), mode('mps', 500, 500)])).toEqual({
      mode: 'mps',
      tiedWith: ['mps-threads'],
    });
  });

  it('a simpler mode separated below the best is not taken, one not separated is', () => {
    const best = mode('mps-threads', 10_000, 10_000);
    const below = mode('timeslice', 9900, 10_000);
    const close = mode('mps', 9999, 10_000);
    expect(chooseMeasuredMode([best, below, close])).toEqual({ mode: 'mps', tiedWith: ['mps-threads'] });
  });
});

describe('chooseCapacityMode', () => {
  const fleet = (m: LargestFleet['mode'], servers: number, interval: [number, number]): LargestFleet => ({
    mode: m,
    servers,
    interval,
    perKindCounts: {},
  });
  it('the most servers where its interval separates; else the simplest it does not separate from', () => {
    expect(chooseCapacityMode([fleet('timeslice', 8, [6, 9]), fleet('mps', 24, [22, 26])])).toEqual({
      mode: 'mps',
      tiedWith: [],
    });
    expect(chooseCapacityMode([fleet('mps', 8, [8, 9]), fleet('timeslice', 24, [24, 26])])).toEqual({
      mode: 'timeslice',
      tiedWith: [],
    });
    expect(chooseCapacityMode([fleet('mps-threads', 24, [20, 28]), fleet('mps', 22, [18, 25])])).toEqual({
      mode: 'mps',
      tiedWith: ['mps-threads'],
    });
    // Touching intervals are not separated.
    expect(chooseCapacityMode([fleet('mps', 24, [22, 26]), fleet('timeslice', 20, [18, 22])])).toEqual({
      mode: 'timeslice',
      tiedWith: ['mps'],
    });
  });
  it('a mode whose smallest fleet failed is not a candidate; none held: no mode', () => {
    expect(chooseCapacityMode([fleet('timeslice', 0, [0, 1]), fleet('mps', 0, [0, 1])])).toBeNull();
    expect(chooseCapacityMode([fleet('timeslice', 0, [0, 1]), fleet('mps', 2, [1, 3])])?.mode).toBe('mps');
  });
});

describe("a server's memory and limits", () => {
  it("its share of the GPU's memory, rounded down to a MiB; the MPS limit adds 1 GiB for its context", () => {
    expect(MPS_CAP_CONTEXT_MIB).toBe(1024);
    // 0.3 of an H200's 143771 MiB: 43131.3 → 43131 MiB.
    expect(serverMemory(0.3, 143_771)).toEqual({ memGiB: 43_131 / 1024, limitMiB: 44_155 });
    // Rounded down, never up: 0.035 × 81559 = 2854.565.
    expect(serverMemory(0.035, 81_559)).toEqual({ memGiB: 2854 / 1024, limitMiB: 3878 });
    expect(serverMemory(1, 81_920)).toEqual({ memGiB: 80, limitMiB: 82_944 });
  });
  it('a thread cap under mps-threads only', () => {
    expect(serverThreadPct('mps-threads', 40)).toBe(40);
    expect(serverThreadPct('mps', 40)).toBeNull();
    expect(serverThreadPct('timeslice', 40)).toBeNull();
  });
  it('counts servers per kind in the order kinds first appear', () => {
    expect(countsPerKind([{ kind: 'large' }, { kind: 'small' }, { kind: 'large' }, { kind: 'medium' }])).toEqual([
      ['large', 2],
      ['small', 1],
      ['medium', 1],
    ]);
  });
});

describe('checkDeployable', () => {
  const servers = (n: number, memFraction = 0.01) => Array.from({ length: n }, () => ({ memFraction }));
  it(`accepts ${MPS_CLIENT_LIMIT} servers under MPS and refuses ${MPS_CLIENT_LIMIT + 1} in one line`, () => {
    expect(MPS_CLIENT_LIMIT).toBe(48);
    expect(() => checkDeployable('mps', servers(48, 0.02))).not.toThrow();
    expectUserError(() => checkDeployable('mps', servers(49, 0.02)), /^49 servers under mps: .* at most 48 clients/);
    expectUserError(() => checkDeployable('mps-threads', servers(49, 0.02)), /49 servers under mps-threads/);
    // Time-slicing has no client limit, and no mode (nothing advised) deploys nothing.
    expect(() => checkDeployable('timeslice', servers(49, 0.02))).not.toThrow();
    expect(() => checkDeployable(null, servers(49, 0.02))).not.toThrow();
  });
  it('accepts memory shares that sum to 1 and refuses more', () => {
    expect(() => checkDeployable('mps', servers(4, 0.25))).not.toThrow();
    expect(() =>
      checkDeployable('timeslice', [{ memFraction: 0.7 }, { memFraction: 0.2 }, { memFraction: 0.1 }]),
    ).not.toThrow();
    expectUserError(
      () => checkDeployable('timeslice', [{ memFraction: 0.5 }, { memFraction: 0.5001 }]),
      /sum to 1\.0001 of the GPU, over 1/,
    );
    expectUserError(() => checkDeployable(null, servers(3, 0.4)), /sum to 1\.2/);
    // Past 1 by rounding, up to 1e-9 inclusive: accepted.
    expect(() => checkDeployable(null, [{ memFraction: 1 + 1e-9 }])).not.toThrow();
    expectUserError(() => checkDeployable(null, [{ memFraction: 1 + 2e-9 }]), /sum to 1\.000000002 of the GPU, over 1/);
  });
});
