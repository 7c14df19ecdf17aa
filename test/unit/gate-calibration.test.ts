/**
 * The calibration's pure pieces (harness/cli/gate-calibration.ts, calibration-report.ts): which runs each
 * scenario gates against which, and the largest spread under which the goal can be met at all. The whole
 * script is checked against docs/gate-calibration.md in test/e2e/gate-calibration.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { largestSpreadForGoal } from '../../harness/cli/calibration-report.js';
import { pairCases, setCases } from '../../harness/cli/gate-calibration.js';
import { mulberry32 } from '../../harness/stats/bootstrap.js';

describe('the scenarios’ cases', () => {
  it('one baseline: every pair once, the earlier run the baseline, no history (the floors)', () => {
    expect(pairCases(3)).toEqual([
      { candidate: 1, baselines: [0], history: [] },
      { candidate: 2, baselines: [0], history: [] },
      { candidate: 2, baselines: [1], history: [] },
    ]);
    expect(pairCases(35)).toHaveLength((35 * 34) / 2);
  });

  it('a directory of k: k other runs, the candidate never among them, the band learned from the same k', () => {
    const cases = setCases(12, 10, 20, mulberry32(36));
    expect(cases).toHaveLength(12 * 20);
    for (const c of cases) {
      expect(new Set(c.baselines).size).toBe(10);
      expect(c.baselines).not.toContain(c.candidate);
      expect(c.history).toEqual(c.baselines);
    }
  });
});

describe('the goal: the largest spread under which any band meets it', () => {
  // A 5% slowdown moves a ratio by −log(0.95) = 0.0513 on the log scale; at most 1% A/A (two-sided) and
  // 95% caught need that to reach z(0.995) + z(0.95) = 4.2207 standard deviations of the change.
  it.each([
    [10, 0.05129329 / 4.22068 / Math.sqrt(1.1)],
    [20, 0.05129329 / 4.22068 / Math.sqrt(1.05)],
    [1e9, 0.05129329 / 4.22068],
  ])('against %i baselines: %d', (baselines, sd) => {
    expect(largestSpreadForGoal(baselines)).toBeCloseTo(sd, 6);
  });
});
