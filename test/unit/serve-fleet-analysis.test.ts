/**
 * The arithmetic of a fleet run that users read: which servers are hot (the top fifth by rate, at least one,
 * ties by index) and each server's MPS thread cap under capped MPS (the file's, else its share as a whole
 * percent, 1 to 100).
 */
import { describe, expect, it } from 'vitest';
import { HOT_SHARE, hotServers } from '../../harness/serve/fleet/fleet-analysis.js';
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
