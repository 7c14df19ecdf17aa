/**
 * The arithmetic of a fleet run that users read: which servers are hot (the top fifth by rate, at least one,
 * ties by index), each server's MPS thread cap under capped MPS (the file's, else its share as a whole
 * percent, 1 to 100), and each mode's windows against the generator's ceiling by the rate they sent.
 */
import { describe, expect, it } from 'vitest';
import type { Ceiling } from '../../harness/serve/analysis.js';
import { generatorCheck, HOT_SHARE, hotServers } from '../../harness/serve/fleet/fleet-analysis.js';
import type { StepTotals } from '../../harness/serve/fleet/fleet-capacity-record.js';
import { generatorText } from '../../harness/serve/fleet/fleet-markdown.js';
import { threadCap } from '../../harness/serve/fleet/fleet-measure.js';
import type { FleetRecord } from '../../harness/serve/fleet/fleet-record.js';

const servers = (rates: number[]): FleetRecord['servers'] =>
  rates.map(
    (ratePerS, i) =>
      ({
        index: i + 1,
        label: `s-${i + 1}`,
        kind: 's',
        model: 'm',
        memFraction: 0.05,
        threadPct: 10,
        threadPctFrom: 'share',
        share: ratePerS / 100,
        ratePerS,
      }) satisfies FleetRecord['servers'][number],
  );

describe('hotServers', () => {
  it('is the top fifth by rate, rounded up, highest first', () => {
    expect(HOT_SHARE).toBe(0.2);
    // 10 servers: 2 hot; 11: 3 (ceil of 2.2); 1: that one.
    expect(hotServers(servers([5, 9, 1, 1, 1, 1, 1, 1, 1, 8]))).toEqual([2, 10]);
    expect(hotServers(servers([5, 9, 1, 1, 1, 1, 1, 1, 1, 8, 1]))).toEqual([2, 10, 1]);
    expect(hotServers(servers([3]))).toEqual([1]);
  });
  it('breaks ties by index, so the same fleet always names the same servers', () => {
    expect(hotServers(servers([4, 4, 4, 4, 4]))).toEqual([1]);
    expect(hotServers(servers([1, 4, 4, 1, 1, 1, 1, 1, 1, 1]))).toEqual([2, 3]);
  });
});

describe('threadCap', () => {
  it("takes the file's cap as given", () => {
    expect(threadCap({ threadPct: 30, share: 0.5 })).toEqual({ threadPct: 30, threadPctFrom: 'file' });
  });
  it('else the share as a whole percent, at least 1 and at most 100', () => {
    expect(threadCap({ threadPct: null, share: 0.234 })).toEqual({ threadPct: 23, threadPctFrom: 'share' });
    expect(threadCap({ threadPct: null, share: 0.235 })).toMatchObject({ threadPct: 24 });
    expect(threadCap({ threadPct: null, share: 0.001 })).toMatchObject({ threadPct: 1 });
    expect(threadCap({ threadPct: null, share: 1 })).toMatchObject({ threadPct: 100 });
  });
});

describe("generatorCheck: a mode's windows against the generator's ceiling, by the whole fleet's sent rate", () => {
  const ceiling = (ratePerS: number | null, atLeast = false): Ceiling => ({
    allowedMs: 1,
    ratePerS,
    tokensPerS: ratePerS === null ? null : ratePerS * 100,
    fromPerS: 100,
    atLeast,
    ttftAddedMs: null,
    ttftShare: null,
    steps: [],
  });
  const sent = (sentPerS: number, outputTokensPerS = 1000): StepTotals => ({
    sentPerS,
    completedPerS: sentPerS / 2,
    outputTokensPerS,
    e2eP50Ms: 100,
    ttftP50Ms: 10,
    lagP99Ms: 0.5,
  });
  it('a window sending exactly the ceiling is within it; one a hair over is over', () => {
    expect(generatorCheck([sent(3190), sent(3190.01)], ceiling(3190))).toEqual({
      windows: 2,
      sentPerS: 3190.01,
      over: 1,
      unverified: 0,
    });
  });
  it('the rate sent decides, not the rate completed', () => {
    // Completions (half of what was sent) are under the ceiling; what was sent is over it.
    expect(generatorCheck([sent(400)], ceiling(300)).over).toBe(1);
  });
  it('output tokens over the ceiling are over it too', () => {
    expect(generatorCheck([sent(10, 30_001)], ceiling(300)).over).toBe(1);
  });
  it('with no ceiling found every window is unverified; at a sweep that never fell behind, within', () => {
    expect(generatorCheck([sent(10), sent(20)], ceiling(null))).toMatchObject({ over: 0, unverified: 2 });
    expect(generatorCheck([sent(1e6)], ceiling(200, true))).toMatchObject({ over: 0, unverified: 0 });
  });
  it('says so in one sentence; nothing for a run that kept no totals', () => {
    expect(generatorText({ windows: 2, sentPerS: 324.4, over: 0, unverified: 0 }, 3190)).toBe(
      'Load: the generator sent up to 324.4 req/s in its 2 windows, every one within its ceiling of 3190 req/s.',
    );
    expect(generatorText({ windows: 2, sentPerS: 400, over: 1, unverified: 0 }, 300)).toBe(
      "Load: the generator sent up to 400.0 req/s in its 2 windows, 1 of them over the generator's ceiling by sent rate: they measured the generator as much as the servers.",
    );
    expect(generatorText({ windows: 2, sentPerS: 10, over: 0, unverified: 2 }, null)).toBe(
      'Load: the generator sent up to 10.0 req/s in its 2 windows, not checked: the run found no generator ceiling.',
    );
    expect(generatorText(null, 3190)).toBeNull();
  });
});
