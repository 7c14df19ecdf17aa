/** Validity checks on the committed real run, mutated in memory one way at a time. */
import { beforeEach, describe, expect, it } from 'vitest';
import { groupRounds } from '../../harness/bench/analysis/rounds.js';
import { comparisonValidity as validityOf } from '../../harness/bench/analysis/validity.js';
import type { Run } from '../../harness/bench/record/schema.js';
import { loadRun } from '../../harness/bench/record/store.js';
import { H200_RUN } from '../helpers.js';

let run: Run;
let original: Run;
beforeEach(async () => {
  original = await loadRun(H200_RUN);
  run = structuredClone(original);
});

const comparisonValidity = (r: Run, c: Run['plan'][number]) => validityOf(r, c, groupRounds(c, r.trials));

const comparison = (id: string) => {
  const c = run.plan.find((x) => x.id === id);
  if (!c) throw new Error(id);
  return c;
};

/** Rewrites the samples of one arm group of a comparison. */
function editSamples(comparisonId: string, contended: boolean, edit: (s: Run['samples'][number]) => void) {
  const arms = new Map(run.trials.map((t) => [t.id, t]));
  for (const sample of run.samples) {
    const trial = sample.trialId ? arms.get(sample.trialId) : undefined;
    if (trial?.comparisonId === comparisonId && (trial.arm === 'contended') === contended) edit(sample);
  }
}

describe('validity checks', () => {
  it('the real spin time-slicing comparison is valid as measured', () => {
    expect(comparisonValidity(run, comparison('timeslice/spin'))).toEqual({ invalid: [], warnings: [] });
  });

  it('a failed trial invalidates its comparison, quoting the reason', () => {
    const index = run.trials.findIndex((t) => t.comparisonId === 'timeslice/spin');
    const trial = run.trials[index] as Run['trials'][number];
    run.trials[index] = {
      ...trial,
      status: 'failed',
      reason: 'workload "spin" (client 1) exited with code 3',
      client: 1,
      exitCode: 3,
      stderrTail: '',
    } as Run['trials'][number];
    expect(comparisonValidity(run, comparison('timeslice/spin')).invalid).toEqual([
      '1 trial(s) failed or timed out: workload "spin" (client 1) exited with code 3',
    ]);
  });

  it('throttling in one arm only, where it lowered that arm’s SM clock by more than 1%', () => {
    editSamples('timeslice/spin', true, (s) => {
      s.clocksEventReasons = '0x0000000000000020';
      s.smClockMHz = 1950;
    });
    expect(comparisonValidity(run, comparison('timeslice/spin'))).toEqual({
      invalid: ['throttling in one arm: sw_thermal_slowdown in contended but not in solo'],
      warnings: [],
    });
  });

  it('a short throttle event in one arm: the clock of its own samples counts, not its arm’s mean', () => {
    // 1 of the contended samples at 1700 MHz with hw_thermal_slowdown: the arm's mean barely moves.
    let first = true;
    editSamples('timeslice/spin', true, (s) => {
      if (!first) return;
      first = false;
      s.clocksEventReasons = '0x0000000000000040';
      s.smClockMHz = 1700;
    });
    expect(comparisonValidity(run, comparison('timeslice/spin')).invalid).toEqual([
      'throttling in one arm: hw_thermal_slowdown in contended but not in solo',
    ]);
  });

  it('a throttle reason in one arm that lowered its clock by 1% or less is a warning; more, invalid', () => {
    for (const [mhz, invalid] of [
      [1961, false],
      [1960, true],
    ] as const) {
      run = structuredClone(original);
      editSamples('timeslice/spin', true, (s) => {
        s.clocksEventReasons = '0x0000000000000004';
        s.smClockMHz = mhz;
      });
      expect(comparisonValidity(run, comparison('timeslice/spin')).invalid.length > 0).toBe(invalid);
    }
  });

  it('a throttle reason in one arm that did not lower its SM clock is a warning', () => {
    // As on the H100 (5a84eb, mps/infer): sw_power_cap in solo samples at 1965–1980 MHz, contended at 1980.
    editSamples('timeslice/spin', false, (s) => {
      s.clocksEventReasons = '0x0000000000000004';
      s.smClockMHz = 1965;
    });
    expect(comparisonValidity(run, comparison('timeslice/spin'))).toEqual({
      invalid: [],
      warnings: [
        'throttling in one arm: sw_power_cap in solo but not in contended, where it did not lower the SM clock (1965 MHz, against 1980)',
      ],
    });
  });

  it('an SM-clock gap over 5% between arms', () => {
    editSamples('timeslice/spin', true, (s) => {
      s.smClockMHz = 1700;
    });
    expect(comparisonValidity(run, comparison('timeslice/spin')).invalid).toEqual([
      'SM clock differed 14.1% between arms (contended 1700 MHz, solo 1980 MHz)',
    ]);
  });

  it('a gap while every arm is power-capped alike is a warning, not a reason to distrust', () => {
    editSamples('timeslice/spin', true, (s) => {
      s.smClockMHz = 1700;
      s.clocksEventReasons = '0x0000000000000004';
    });
    editSamples('timeslice/spin', false, (s) => {
      s.clocksEventReasons = '0x0000000000000004';
    });
    expect(comparisonValidity(run, comparison('timeslice/spin'))).toEqual({
      invalid: [],
      warnings: [
        'SM clock differed 14.1% between arms (contended 1700 MHz, solo 1980 MHz); every arm was capped by sw_power_cap',
      ],
    });
  });

  it('a contaminated run invalidates every comparison', () => {
    run.contamination = ['utilization 97%'];
    expect(comparisonValidity(run, comparison('streams/spin')).invalid).toEqual([
      'the GPU was busy when the run started (utilization 97%)',
    ]);
  });
});
