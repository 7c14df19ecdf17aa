/** The fleet analysis: the outlier rule, groups of like runs, and each node's checks, on copies of a committed run. */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyze } from '../../harness/bench/analysis/analyze.js';
import { fingerprintMismatches, settingMismatches } from '../../harness/bench/gate/gate.js';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { analyzeFleet, type FleetMember, type FleetRules } from '../../harness/fleet/report/analyze.js';
import { FLEET_FLOOR, FLEET_K, outlierSide, robustBand } from '../../harness/fleet/report/verdicts.js';
import { degrade, H100_RUN } from '../helpers.js';

const rules: FleetRules = {
  machineDifferences: (now, before) =>
    fingerprintMismatches(
      { fingerprint: now.fingerprint, gpuIndex: now.config.gpuIndex },
      { fingerprint: before.fingerprint, gpuIndex: before.config.gpuIndex },
    ),
  settingDifferences: settingMismatches,
};

/** A node's CI around its value: value × (1 ± h). */
const around = (value: number, h: number): [number, number] => [value * (1 - h), value * (1 + h)];

/** The rule applied to points as the fleet analysis applies it: band from the values, each CI tested. */
function flagged(points: Array<{ value: number; ci: [number, number] }>): Array<'above' | 'below' | null> {
  const band = robustBand(points.map((p) => p.value));
  return points.map((p) => outlierSide(p.ci, band));
}

describe('the outlier rule', () => {
  it.each([
    {
      name: 'identical nodes: MAD 0, the floor sets the band',
      values: [2, 2, 2, 2],
      lo: 2 * (1 - FLEET_FLOOR),
      hi: 2 * (1 + FLEET_FLOOR),
      floored: true,
    },
    {
      name: 'nodes 0.1% apart: still the floor',
      values: [1.993, 1.994, 1.992, 1.995],
      lo: 1.9935 * 0.95,
      hi: 1.9935 * 1.05,
      floored: true,
    },
    {
      name: 'a wide spread: k × 1.4826 × MAD',
      values: [1, 2, 3, 4, 100],
      lo: 3 - FLEET_K * 1.4826,
      hi: 3 + FLEET_K * 1.4826,
      floored: false,
    },
  ])('$name', ({ values, lo, hi, floored }) => {
    const band = robustBand(values);
    expect(band.lo).toBeCloseTo(lo, 6);
    expect(band.hi).toBeCloseTo(hi, 6);
    expect(band.floored).toBe(floored);
  });

  it.each([
    { ci: [2.2, 2.3] as [number, number], side: 'above' },
    { ci: [1.7, 1.8] as [number, number], side: 'below' },
    { ci: [2.05, 2.2] as [number, number], side: null },
    { ci: [1.5, 2.5] as [number, number], side: null },
  ])('a CI $ci against the band [1.9, 2.1]: $side (only a CI wholly outside counts)', ({ ci, side }) => {
    expect(outlierSide(ci, { lo: 1.9, hi: 2.1 })).toBe(side);
  });

  it('a ratio without a CI is never an outlier', () => {
    expect(outlierSide(null, { lo: 1.9, hi: 2.1 })).toBeNull();
  });

  const identical = fc.record({
    base: fc.double({ min: 0.5, max: 60, noNaN: true }),
    nodes: fc.array(
      fc.record({
        jitter: fc.double({ min: -0.02, max: 0.02, noNaN: true }),
        h: fc.double({ min: 0.0005, max: 0.03, noNaN: true }),
      }),
      { minLength: 3, maxLength: 16 },
    ),
  });

  it('nodes that agree within ±2% are never flagged, however tight their CIs (property)', () => {
    fc.assert(
      fc.property(identical, ({ base, nodes }) => {
        const points = nodes.map(({ jitter, h }) => ({
          value: base * (1 + jitter),
          ci: around(base * (1 + jitter), h),
        }));
        expect(flagged(points).every((s) => s === null)).toBe(true);
      }),
    );
  });

  it('among such nodes, one 30% off with a CI up to ±3% is flagged, on the side it lies, and no other (property)', () => {
    fc.assert(
      fc.property(
        identical,
        fc.constantFrom(1.3, 1 / 1.3),
        fc.double({ min: 0.001, max: 0.03, noNaN: true }),
        ({ base, nodes }, factor, h) => {
          const points = nodes.map(({ jitter, h: hh }) => ({
            value: base * (1 + jitter),
            ci: around(base * (1 + jitter), hh),
          }));
          points.push({ value: base * factor, ci: around(base * factor, h) });
          const sides = flagged(points);
          expect(sides.slice(0, -1).every((s) => s === null)).toBe(true);
          expect(sides.at(-1)).toBe(factor > 1 ? 'above' : 'below');
        },
      ),
    );
  });
});

describe('analyzeFleet on copies of a committed run', () => {
  let base: Run;
  beforeAll(async () => {
    base = await loadRun(H100_RUN);
  });

  /** A copy of the run on GPU `uuid` of host `host`, edited, and analysed afresh. */
  function node(host: string, uuid: string, edit: (run: Run) => void = () => undefined): FleetMember {
    const run = structuredClone(base);
    const gpu = run.fingerprint.gpus.find((g) => g.index === run.config.gpuIndex);
    if (gpu) gpu.uuid = uuid;
    edit(run);
    return { path: `${host}/gpu0`, host, run, analysis: analyze(run) };
  }
  const fleetOf = (members: FleetMember[]) => analyzeFleet(members, [], rules);

  it('identical nodes: one group, every ratio tested, nothing flagged, pass', () => {
    const fleet = fleetOf(['a', 'b', 'c', 'd'].map((h) => node(h, `GPU-${h}`)));
    expect(fleet.groups).toHaveLength(1);
    expect(fleet.groups[0]?.untested).toBeNull();
    expect(fleet.groups[0]?.ratios.map((r) => r.band !== null)).toEqual(fleet.groups[0]?.ratios.map(() => true));
    expect(fleet.outlierNodes).toEqual([]);
    expect(fleet.failingNodes).toEqual([]);
    expect(fleet.pass).toBe(true);
  });

  it('a node 30% slower on every headline ratio is the one outlier, worse on each of them', () => {
    const fleet = fleetOf([
      node('a', 'GPU-a'),
      node('b', 'GPU-b'),
      node('slow', 'GPU-slow', (r) => degrade(r, 1.3)),
      node('c', 'GPU-c'),
    ]);
    expect(fleet.outlierNodes).toEqual(['slow/gpu0']);
    const slow = fleet.nodes.find((n) => n.name === 'slow/gpu0');
    expect(slow?.outliers.sort()).toEqual(
      analyze(base)
        .verdicts.map((v) => v.metric.id)
        .sort(),
    );
    expect(slow?.ratios.every((r) => r.direction === 'worse')).toBe(true);
    expect(slow?.flags).toEqual([]);
    expect(fleet.pass).toBe(false);
  });

  it('a node 2% slower is not an outlier: the floor', () => {
    const fleet = fleetOf([node('a', 'GPU-a'), node('b', 'GPU-b'), node('c', 'GPU-c', (r) => degrade(r, 1.02))]);
    expect(fleet.outlierNodes).toEqual([]);
  });

  it.each([1, 2])('a group of %i runs has no outliers and says why', (n) => {
    const members = [node('slow', 'GPU-slow', (r) => degrade(r, 1.3)), node('a', 'GPU-a')].slice(0, n);
    const fleet = fleetOf(members);
    expect(fleet.outlierNodes).toEqual([]);
    expect(fleet.groups[0]?.untested).toMatch(
      n === 1 ? /a group of 1 run cannot have outliers/ : /a group of 2 runs cannot have outliers/,
    );
    expect(fleet.groups[0]?.ratios.every((r) => r.band === null)).toBe(true);
  });

  it('flags a contaminated node, a throttled one and one with another driver, and only them', () => {
    const fleet = fleetOf([
      node('a', 'GPU-a'),
      node('b', 'GPU-b'),
      node('busy', 'GPU-busy', (r) => {
        r.contamination = ['pid 4242 python3 held 1024 MiB'];
      }),
      node('hot', 'GPU-hot', (r) => {
        for (const s of r.samples) if (s.trialId !== null) s.clocksEventReasons = '0x0000000000000044';
      }),
      node('old', 'GPU-old', (r) => {
        r.fingerprint.driverVersion = '570.86.15';
      }),
    ]);
    const kinds = Object.fromEntries(fleet.nodes.map((n) => [n.name, [...new Set(n.flags.map((f) => f.kind))].sort()]));
    expect(kinds).toEqual({
      'a/gpu0': [],
      'b/gpu0': [],
      'busy/gpu0': ['contaminated', 'invalid'],
      'hot/gpu0': ['throttled'],
      'old/gpu0': ['fingerprint'],
    });
    expect(fleet.nodes.find((n) => n.name === 'hot/gpu0')?.flags[0]?.text).toMatch(
      /^hw_thermal_slowdown in \d+ of \d+ samples taken during trials$/,
    );
    expect(fleet.nodes.find((n) => n.name === 'old/gpu0')?.flags[0]?.text).toContain(
      'driver: 570.86.15 here, 580.159.04 in',
    );
    expect(fleet.groups[0]?.software.driver).toBe('580.159.04');
    expect(fleet.failingNodes.sort()).toEqual(['busy/gpu0', 'hot/gpu0', 'old/gpu0']);
  });

  it('the power cap alone is not throttling', () => {
    const fleet = fleetOf([
      node('a', 'GPU-a', (r) => {
        for (const s of r.samples) if (s.trialId !== null) s.clocksEventReasons = '0x0000000000000004';
      }),
    ]);
    expect(fleet.nodes[0]?.flags).toEqual([]);
  });

  it('an interrupted run is incomplete', () => {
    const fleet = fleetOf([node('a', 'GPU-a', (r) => void (r.status = 'interrupted'))]);
    expect(fleet.nodes[0]?.flags).toEqual([{ kind: 'incomplete', text: 'the run is interrupted, not complete' }]);
  });

  it('an unfinished run replaced by a later complete run of the same GPU is not compared, and does not fail the fleet', () => {
    const evicted = { ...node('a', 'GPU-a', (r) => void (r.status = 'interrupted')), path: 'a/gpu0' };
    const retry = {
      ...node('a', 'GPU-a', (r) => void (r.createdAt = '2026-11-23T09:00:00.000Z')),
      path: 'a/gpu0-retry-20261123T090000Z',
    };
    const fleet = fleetOf([evicted, retry, node('b', 'GPU-b')]);
    expect(fleet.nodes.map((n) => n.name)).toEqual(['a/gpu0-retry-20261123T090000Z', 'b/gpu0']);
    expect(fleet.notCompared).toEqual([
      {
        path: 'a/gpu0',
        reason:
          'superseded: interrupted, and a/gpu0-retry-20261123T090000Z is a complete run of the same GPU (GPU-a) made after it',
        fails: false,
      },
    ]);
    expect(fleet.pass).toBe(true);
  });

  it('runs with other settings are set aside, naming how they differ; flagged only where most GPUs share one setting', () => {
    const other = (h: string) => node(h, `GPU-${h}`, (r) => void (r.config.windowMs = 500));
    const fleet = fleetOf([node('a', 'GPU-a'), node('b', 'GPU-b'), node('c', 'GPU-c'), other('odd')]);
    const odd = fleet.groups.find((g) => g.nodes.includes('odd/gpu0'));
    expect(odd?.setAside).toBe(
      'no other NVIDIA H100 80GB HBM3 run has its settings; the nearest, a/gpu0, differs: window: 500 ms here, 250 ms in it',
    );
    expect(fleet.nodes.find((n) => n.name === 'odd/gpu0')?.flags.map((f) => f.kind)).toEqual(['settings']);
    // One GPU against one: two experiments, no majority setting, so no flag; both are set aside.
    const split = fleetOf([node('a', 'GPU-a'), other('odd')]);
    expect(split.groups.map((g) => g.setAside !== null)).toEqual([true, true]);
    expect(split.failingNodes).toEqual([]);
  });

  it('repeat runs of one GPU do not outvote another GPU', () => {
    const twice = [node('a', 'GPU-a'), { ...node('a', 'GPU-a'), path: 'a/again' }];
    const fleet = fleetOf([...twice, node('b', 'GPU-b', (r) => void (r.fingerprint.driverVersion = '570.86.15'))]);
    // 2 GPUs, one per driver: no majority, so every node of the group is flagged as software that disagrees.
    expect(fleet.nodes.map((n) => n.flags.map((f) => f.kind))).toEqual([
      ['fingerprint'],
      ['fingerprint'],
      ['fingerprint'],
    ]);
    expect(fleet.nodes[0]?.flags[0]?.text).toMatch(
      /^the group's GPUs ran different software and none has a majority: driver: 580\.159\.04 here, 570\.86\.15 in b\/gpu0$/,
    );
    expect(fleet.gpus).toBe(2);
  });
});
