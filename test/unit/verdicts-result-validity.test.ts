/**
 * The checks that make a trial or a step invalid, each at, just inside and just outside its edge: a
 * window's start against the release time (1 ms early, 1 s late), its end against the answer's arrival,
 * a timed window's length (½× to 2× + 1 s), the iteration rate (10⁸/s) and the GPU time (1.5× + 50 ms);
 * and the overlap of contended windows against the share required.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MIN_OVERLAP,
  implausibleResult,
  overlap,
  overlapShortfall,
  type WindowClaim,
} from '../../harness/workload/result-validity.js';
import type { Work } from '../../harness/workload/spec.js';

const RELEASE = 10_000_000;
const fixedWork: Work = { kind: 'fixed-work', iterations: 100 };
/** A 100 ms window released at RELEASE, answered at its end, with `over` fields. */
const claim = (over: Partial<WindowClaim> = {}): WindowClaim => ({
  client: 0,
  windowStartUs: RELEASE,
  windowEndUs: RELEASE + 100_000,
  iterations: 10,
  gpuMs: 10,
  ...over,
});
const check = (over: Partial<WindowClaim>, work: Work = fixedWork, receivedUs = RELEASE + 200_000) =>
  implausibleResult(claim(over), RELEASE, receivedUs, work);

describe('implausibleResult', () => {
  it('a plausible window passes', () => {
    expect(check({})).toBeNull();
  });

  it.each([
    // Start: at most 1,000 µs before the release time.
    [{ windowStartUs: RELEASE - 1_000 }, null],
    [{ windowStartUs: RELEASE - 999 }, null],
    [{ windowStartUs: RELEASE - 1_001 }, 'starting at'],
    // Start: at most 1 s after the release time.
    [{ windowStartUs: RELEASE + 1_000_000, windowEndUs: RELEASE + 1_100_000 }, null],
    [{ windowStartUs: RELEASE + 999_999, windowEndUs: RELEASE + 1_100_000 }, null],
    [{ windowStartUs: RELEASE + 1_000_001, windowEndUs: RELEASE + 1_100_000 }, 'starting at'],
  ] as const)('start %j → %s', (over, reason) => {
    const r = implausibleResult(claim(over), RELEASE, RELEASE + 2_000_000, fixedWork);
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it.each([
    // End: at most 1,000 µs after the answer arrived.
    [RELEASE + 100_000 - 1_000, null],
    [RELEASE + 100_000 - 1_001, 'after its result arrived'],
    [RELEASE + 100_000 - 999, null],
  ] as const)('received at %i → %s', (receivedUs, reason) => {
    const r = check({}, fixedWork, receivedUs);
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it.each([
    // A 100 ms trial: the window from 50 ms to 2 × 100 + 1,000 = 1,200 ms.
    [50_000, null],
    [49_999, 'window for a 100 ms trial'],
    [50_001, null],
    [1_200_000, null],
    [1_200_001, 'window for a 100 ms trial'],
    [1_199_999, null],
  ] as const)('a fixed-duration window of %i µs → %s', (lengthUs, reason) => {
    const r = implausibleResult(
      claim({ windowEndUs: RELEASE + lengthUs, gpuMs: 1, iterations: 1 }),
      RELEASE,
      RELEASE + 2_000_000,
      { kind: 'fixed-duration', durationMs: 100 },
    );
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it('a fixed-work window of any length', () => {
    expect(check({ windowEndUs: RELEASE + 10 })).toBeNull();
  });

  it.each([
    // 10⁸ iterations a second: 10⁷ in a 100 ms window.
    [10_000_000, null],
    [10_000_001, 'iterations in'],
    [9_999_999, null],
  ])('%i iterations in 100 ms → %s', (iterations, reason) => {
    const r = check({ iterations });
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it.each([
    // The rate is counted over at least 1 ms: a 0.1 ms window may claim 10⁵ iterations.
    [100_000, null],
    [100_001, 'iterations in'],
  ])('%i iterations in a 0.1 ms window → %s', (iterations, reason) => {
    const r = check({ windowEndUs: RELEASE + 100, iterations, gpuMs: 0 });
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it.each([
    // 1.5 × 100 ms + 50 ms = 200 ms of GPU time in a 100 ms window.
    [200, null],
    [200.001, 'ms of GPU time'],
    [199.999, null],
  ])('%d ms of GPU time in 100 ms → %s', (gpuMs, reason) => {
    const r = check({ gpuMs });
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it('each reason word for word, naming the client and the figures', () => {
    expect(check({ client: 3, windowStartUs: RELEASE - 2_000 })).toBe(
      'client 3 reported a window starting at 9998000 µs, -2000 µs from the release time 10000000 µs (CLOCK_MONOTONIC µs expected)',
    );
    expect(check({ client: 3 }, fixedWork, RELEASE + 50_000)).toBe(
      'client 3 reported a window ending at 10100000 µs, after its result arrived (10050000 µs)',
    );
    expect(check({ client: 3 }, { kind: 'fixed-duration', durationMs: 300 })).toBe(
      'client 3 reported a 100.0 ms window for a 300 ms trial',
    );
    expect(check({ client: 3, iterations: 2e7 })).toBe('client 3 reported 20000000 iterations in 100.0 ms');
    expect(check({ client: 3, gpuMs: 250 })).toBe('client 3 reported 250.0 ms of GPU time in a 100.0 ms window');
  });
});

describe('overlap of contended windows', () => {
  const w = (start: number, end: number) => ({ windowStartUs: start, windowEndUs: end });

  it('one client overlaps itself wholly; disjoint windows not at all', () => {
    expect(overlap([w(0, 10)])).toEqual({ perClient: [1], min: 1 });
    expect(overlap([w(5, 5)])).toEqual({ perClient: [1], min: 1 });
    expect(overlap([])).toEqual({ perClient: [], min: 1 });
    expect(overlap([w(0, 10), w(20, 30)])).toEqual({ perClient: [0, 0], min: 0 });
  });

  it('the shared span (latest start to earliest end) over each own window', () => {
    expect(overlap([w(0, 100), w(10, 100)])).toEqual({ perClient: [0.9, 1], min: 0.9 });
    expect(overlap([w(0, 100), w(0, 50), w(25, 200)]).perClient).toEqual([0.25, 0.5, 25 / 175]);
    expect(overlap([w(0, 100), w(5, 5)])).toEqual({ perClient: [0, 0], min: 0 });
  });

  it.each([
    [0.9, null],
    [0.9 - 1e-9, 'below the 90% required'],
    [0.9 + 1e-9, null],
  ])('a minimum overlap of %d against 90% → %s', (min, reason) => {
    const r = overlapShortfall({ perClient: [min], min }, DEFAULT_MIN_OVERLAP);
    if (reason === null) expect(r).toBeNull();
    else expect(r).toContain(reason);
  });

  it("bench's default is 90%", () => {
    expect(DEFAULT_MIN_OVERLAP).toBe(0.9);
    expect(overlapShortfall(overlap([w(0, 100), w(10, 100)]), DEFAULT_MIN_OVERLAP)).toBeNull();
    expect(overlapShortfall(overlap([w(0, 100), w(11, 100)]), DEFAULT_MIN_OVERLAP)).toBe(
      "the contended windows overlapped 89.0% of a client's window, below the 90% required",
    );
  });
});
