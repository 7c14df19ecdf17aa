/**
 * The load time --dry-run states (#48, #49): an arm's warm-up as warmupStop ends it, after whole windows, and a
 * fleet run's load line, which had none: bench's arms at least, capacity's steps at most.
 */
import { describe, expect, it } from 'vitest';
import { ceilingS, warmupBoundsS } from '../../harness/serve/dry-run.js';
import { SEARCH_MAX_STEPS } from '../../harness/serve/fleet/fleet-capacity.js';
import { fleetLoadLine } from '../../harness/serve/fleet/fleet-dry-run.js';
import { WARMUP_TREND_WINDOWS } from '../../harness/serve/verdicts.js';

describe('warmupBoundsS', () => {
  it('is one window with --warmup-s 0, whatever the maximum', () => {
    expect(warmupBoundsS(17_000, { warmupMs: 0, warmupMaxMs: 60_000 })).toEqual({ leastS: 17, mostS: 17 });
  });

  it('by default (10 s, at most 60 s) of 2 s windows: the trend test’s 5 windows, up to 60 s', () => {
    expect(WARMUP_TREND_WINDOWS).toBe(5);
    expect(warmupBoundsS(2000, {})).toEqual({ leastS: 10, mostS: 60 });
  });

  it('waits out a minimum longer than the trend test’s windows, in whole windows', () => {
    // 20 s of 3 s windows: 7 windows (21 s), more than the test's 5.
    expect(warmupBoundsS(3000, { warmupMs: 20_000, warmupMaxMs: 60_000 })).toEqual({ leastS: 21, mostS: 60 });
  });

  it('ends at the first window past the maximum, even before the trend test has its windows', () => {
    // 17 s windows, at most 60 s: the fourth window ends at 68 s, before a fifth could.
    expect(warmupBoundsS(17_000, { warmupMs: 10_000, warmupMaxMs: 60_000 })).toEqual({ leastS: 68, mostS: 68 });
    // A maximum on a window's end stops there: 6 s of 2 s windows is 3 windows.
    expect(warmupBoundsS(2000, { warmupMs: 4000, warmupMaxMs: 6000 })).toEqual({ leastS: 6, mostS: 6 });
    // One past it takes the next window.
    expect(warmupBoundsS(2000, { warmupMs: 4000, warmupMaxMs: 6001 })).toEqual({ leastS: 8, mostS: 8 });
  });
});

describe('fleetLoadLine', () => {
  const timing = { windowMs: 17_000, rounds: 2, warmupMs: 0, ceilingStepMs: 2000 };

  it('bench: the ceiling, then each kind’s baseline, each mode and the in-process arm, at least', () => {
    expect(ceilingS(2000)).toBe(22);
    // 22 + 7 × (17 + 2 × 17) = 379.
    expect(fleetLoadLine('bench', { kinds: 3, modes: 3, inProcess: true }, timing)).toBe(
      "load: at least 379 s: the generator's ceiling (22 s), then 7 arms (3 baselines, 3 modes, the in-process arm), each a warm-up (17–17 s) and 2 windows of 17 s; plus each server's start-up",
    );
    expect(fleetLoadLine('bench', { kinds: 1, modes: 1, inProcess: false }, { ...timing, rounds: 1 })).toBe(
      "load: at least 90 s: the generator's ceiling (22 s), then 2 arms (1 baseline, 1 mode), each a warm-up (17–17 s) and 1 window of 17 s; plus each server's start-up",
    );
  });

  it('capacity: the ceiling, then per mode its most steps, each at its longest warm-up', () => {
    expect(SEARCH_MAX_STEPS).toBe(24);
    const line = fleetLoadLine('capacity', { kinds: 3, modes: 2, inProcess: false }, { ...timing, warmupMs: 10_000 });
    // 22 + 2 modes × 24 × (68 + 34) = 4918.
    expect(line).toBe(
      "load: at most 4918 s: the generator's ceiling (22 s), then per mode at most 24 steps, each a warm-up (68–68 s) and 2 windows of 17 s; plus each server's start-up",
    );
  });
});
