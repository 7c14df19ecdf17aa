/**
 * The fleet's decisions at their boundaries (fleet/report/verdicts.ts): who sets the band's half-width
 * when spread and floor tie, when a group is too small to have outliers, and each check that flags a
 * node, with the text the report prints for it.
 */
import { describe, expect, it } from 'vitest';
import type { FleetMember } from '../../harness/fleet/report/analyze.js';
import { nodeFlags, robustBand, untestedReason } from '../../harness/fleet/report/verdicts.js';

describe('robustBand: the floor or the spread', () => {
  it('MAD 0 and no floor: both are 0, and the floor is said to set it (a tie goes to the floor)', () => {
    expect(robustBand([2, 2, 2], 3, 0)).toMatchObject({ median: 2, halfWidth: 0, lo: 2, hi: 2, floored: true });
  });
  it('a spread just over the floor sets it', () => {
    // MAD 1 → scale 1.4826; k = 1 against a floor of 1.4825 / 2 of the median 2.
    expect(robustBand([1, 2, 3], 1, 1.4825 / 2)).toMatchObject({ halfWidth: 1.4826, floored: false });
  });
});

describe('untestedReason: groups too small to have outliers', () => {
  it.each([
    [1, 1, 'a group of 1 run cannot have outliers: there is no other run to differ from'],
    [2, 2, 'a group of 2 runs cannot have outliers: with two, neither is the odd one'],
    [3, 2, 'a group of 3 runs on 2 GPUs cannot have outliers: with two GPUs, neither is the odd one'],
    [3, 1, 'a group of 3 runs on 1 GPUs cannot have outliers: with two GPUs, neither is the odd one'],
    [3, 3, null],
    [4, 3, null],
  ])('%i runs on %i GPUs: %s', (runs, gpus, reason) => {
    expect(untestedReason(runs, gpus)).toBe(reason);
  });
});

type Verdict = { verdict: string; metric: { id: string }; reasons: string[] };
type Comparison = {
  comparison: { id: string; mode: string };
  completeRounds: number;
  failure?: string;
  stop?: { reason: string };
};

/** A member with only what nodeFlags reads: a complete, clean run unless `run` or `analysis` say otherwise. */
function member(
  run: Partial<{
    contamination: string[];
    samples: Array<{ trialId: string | null; clocksEventReasons: string | null }>;
    status: string;
    modes: Array<{ mode: string; status: string; reason?: string | null }>;
  }> = {},
  analysis: Partial<{ verdicts: Verdict[]; comparisons: Comparison[] }> = {},
): FleetMember {
  return {
    path: 'a/gpu0',
    host: 'a',
    run: { contamination: [], samples: [], status: 'complete', modes: [], ...run },
    analysis: { verdicts: [], comparisons: [], ...analysis },
  } as unknown as FleetMember;
}
const texts = (m: FleetMember) => nodeFlags(m).map((f) => `${f.kind}: ${f.text}`);

describe('nodeFlags: the checks that flag a node, and what they say', () => {
  it('a clean run: no flag', () => {
    expect(nodeFlags(member())).toEqual([]);
  });

  it('contamination names every process found', () => {
    expect(texts(member({ contamination: ['pid 1 a held 1 MiB', 'pid 2 b held 2 MiB'] }))).toEqual([
      'contaminated: the GPU was busy when the run started: pid 1 a held 1 MiB; pid 2 b held 2 MiB',
    ]);
  });

  it('throttling counts only the samples taken during trials, each reason but the power cap', () => {
    const during = (mask: string) => ({ trialId: 't1', clocksEventReasons: mask });
    const samples = [
      during('0x48'), // hw_slowdown + hw_thermal_slowdown
      during('0x44'), // sw_power_cap + hw_thermal_slowdown
      during('0x4'),
      { trialId: null, clocksEventReasons: '0x8' }, // between trials: not counted
    ];
    expect(texts(member({ samples }))).toEqual([
      'throttled: hw_slowdown in 1, hw_thermal_slowdown in 2 of 3 samples taken during trials',
    ]);
    expect(texts(member({ samples: [{ trialId: null, clocksEventReasons: '0x40' }] }))).toEqual([]);
  });

  it('a failed mode names its reason, or says none was recorded; a skipped one is no flag', () => {
    const modes = [
      { mode: 'mps', status: 'failed', reason: 'daemon did not start' },
      { mode: 'mig', status: 'failed', reason: null },
      { mode: 'streams', status: 'skipped', reason: 'not here' },
      { mode: 'timeslice', status: 'ran' },
    ];
    expect(texts(member({ modes }))).toEqual([
      'incomplete: mps failed: daemon did not start',
      'incomplete: mig failed: no reason recorded',
    ]);
  });

  it('a comparison with no complete round is incomplete, unless its mode was skipped or it cannot run here', () => {
    const c = (id: string, mode: string, completeRounds: number, more: Partial<Comparison> = {}): Comparison => ({
      comparison: { id, mode },
      completeRounds,
      ...more,
    });
    const modes = [
      { mode: 'mps', status: 'ran' },
      { mode: 'mig', status: 'skipped', reason: 'no MIG' },
    ];
    const comparisons = [
      c('mps-2', 'mps', 0, { failure: 'every round timed out' }),
      c('mps-4', 'mps', 0),
      c('mps-8', 'mps', 1),
      c('mig-2', 'mig', 0),
      c('mps-16', 'mps', 0, { stop: { reason: 'unsupported' } }),
      c('streams-2', 'streams', 0), // a mode the run has no record of: it did not skip it
    ];
    expect(texts(member({ modes }, { comparisons }))).toEqual([
      'incomplete: mps-2 has no complete round: every round timed out',
      'incomplete: mps-4 has no complete round',
      'incomplete: streams-2 has no complete round',
    ]);
  });

  it('an unfinished run says its status', () => {
    expect(texts(member({ status: 'interrupted' }))).toEqual(['incomplete: the run is interrupted, not complete']);
  });

  it('invalid verdicts are one flag naming each metric and the first reason; failed ones a flag each', () => {
    const v = (id: string, verdict: string, reasons: string[] = []): Verdict => ({ verdict, metric: { id }, reasons });
    const verdicts = [
      v('r1', 'invalid', ['the arms throttled differently', 'second reason']),
      v('r2', 'invalid', ['another']),
      v('r3', 'pass', ['fine']),
      v('r4', 'fail', ['2.1× over the 1.5× threshold', 'more']),
      v('r5', 'fail'),
    ];
    expect(texts(member({}, { verdicts }))).toEqual([
      'invalid: r1, r2: the arms throttled differently',
      'fail: r4: 2.1× over the 1.5× threshold',
      'fail: r5: fails its threshold',
    ]);
    expect(texts(member({}, { verdicts: [v('r1', 'invalid')] }))).toEqual(['invalid: r1: a validity check failed']);
  });
});
