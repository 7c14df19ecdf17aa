/**
 * A mix run's decisions at their boundaries (mix/verdicts.ts): when a victim did not keep up, the
 * victim's p99 target, and which cap the protection search names.
 */
import { describe, expect, it } from 'vitest';
import type { Cell } from '../../harness/mix/analysis.js';
import type { MixWindow, VictimWindow } from '../../harness/mix/record.js';
import {
  mostKept,
  overloadOf,
  type Protection,
  protectionAt,
  protectionFor,
  targetOf,
} from '../../harness/mix/verdicts.js';

const victim = (over: Partial<VictimWindow>): VictimWindow =>
  ({
    offeredQps: 1000,
    windowS: 1,
    requests: 1000,
    unreported: 0,
    dropped: 0,
    firstQuarterP50Ms: 1,
    lastQuarterP50Ms: 1,
    ...over,
  }) as VictimWindow;
const window = (v: VictimWindow | null) => ({ victimResult: v }) as MixWindow;

describe('overloadOf: a victim that did not keep up (1,000 offered, 90% must be served, a 2× climb)', () => {
  it.each([
    ['no victim result', null, null],
    ['all served, flat', victim({}), null],
    ['one dropped', victim({ dropped: 1 }), '1 requests never served'],
    ['exactly 90% served, counting the unreported', victim({ requests: 800, unreported: 100 }), null],
    ['one under 90%', victim({ requests: 899 }), 'served 899 of 1000 requests offered'],
    ['under 90%, the unreported counted as served', victim({ requests: 700, unreported: 100 }), 'served 800 of 1000'],
    ['offered is the rate times the window', victim({ windowS: 2, requests: 1799 }), 'served 1799 of 2000'],
    ['nothing offered: no share to miss', victim({ offeredQps: 0, requests: 0 }), null],
    ['exactly twice the first quarter', victim({ lastQuarterP50Ms: 2 }), null],
    ['exactly twice a first quarter of 2 ms', victim({ firstQuarterP50Ms: 2, lastQuarterP50Ms: 4 }), null],
    ['just over twice', victim({ lastQuarterP50Ms: 2.001 }), 'its latency climbed through the window'],
    ['no first-quarter median', victim({ firstQuarterP50Ms: null, lastQuarterP50Ms: 50 }), null],
    ['no last-quarter median', victim({ lastQuarterP50Ms: null }), null],
  ])('%s', (_name, v, why) => {
    const said = overloadOf(window(v));
    if (why === null) expect(said).toBeNull();
    else expect(said).toMatch(new RegExp(`^${why}`));
  });
});

describe("targetOf: the victim's p99 target", () => {
  it.each([
    ['a fixed target', { kind: 'ms', value: 5 }, 2, 5],
    ['a fixed target without an alone measurement', { kind: 'ms', value: 5 }, null, 5],
    ['a multiple of the p99 alone', { kind: 'multiple', value: 1.5 }, 2, 3],
    ['a multiple without an alone measurement', { kind: 'multiple', value: 1.5 }, null, null],
  ] as const)('%s', (_name, protect, alone, want) => {
    expect(targetOf(protect, alone)).toBe(want);
  });
});

describe('protectionAt: the cap the search names (target 10 ms, p99 counts per cap)', () => {
  const cell = (threadPct: number | null, status: Cell['status'], kept = 0.5, requests = 1000) =>
    ({
      threadPct,
      status,
      kept: { value: kept, ci: [kept - 0.01, kept + 0.01], rounds: 3 },
      together: { requests, p99: { ms: 9, ci: [null, null] } },
    }) as unknown as Cell;
  const at = { aggressor: 'compute', load: 0.5, targetMs: 10, threadPcts: [50, 25] };
  // Over the target per cap: 299 requests with none over hold; 2 over of 300 do not.
  const counts =
    (over: Record<string, number>, requests = 299) =>
    (c: Cell) => ({ requests, over: over[String(c.threadPct)] ?? 0 });

  it('no target: the victim alone was not measured', () => {
    expect(protectionAt({ ...at, targetMs: null }, [cell(50, 'measured')], counts({}))).toMatchObject({
      threadPct: null,
      reason: 'the victim alone was not measured under MPS',
    });
  });
  it.each([
    ['the most kept of those that hold', [cell(null, 'measured', 0.9), cell(50, 'measured', 0.5)], {}, 100],
    ['uncapped fails: the cap that holds', [cell(null, 'measured', 0.9), cell(50, 'measured', 0.5)], { null: 2 }, 50],
    ['an overloaded cell is never named', [cell(null, 'overloaded', 0.9), cell(25, 'measured', 0.2)], {}, 25],
    ['none holds', [cell(null, 'measured'), cell(50, 'measured')], { null: 2, 50: 2 }, null],
  ] as const)('%s', (_name, cells, over, want) => {
    expect(protectionAt(at, cells, counts(over as Record<string, number>)).threadPct).toBe(want);
  });
  it('298 requests with none over is too few to hold; 299 hold', () => {
    expect(protectionAt(at, [cell(50, 'measured')], counts({}, 298)).threadPct).toBeNull();
    expect(protectionAt(at, [cell(50, 'measured')], counts({}, 299)).threadPct).toBe(50);
  });
  it('says why none holds: none measured, or the lowest cap to try next', () => {
    expect(protectionAt(at, [cell(50, 'failed')], counts({})).reason).toBe('no setting was measured');
    expect(protectionAt(at, [cell(50, 'overloaded')], counts({})).reason).toBe(
      "none of the 1 settings measured keeps the victim's p99 within 10.00 ms: cap lower than 25%, or isolate (MIG)",
    );
    const tried = [cell(null, 'measured'), cell(50, 'measured'), cell(25, 'failed')];
    expect(protectionAt(at, tried, counts({ null: 2, 50: 2 })).reason).toBe(
      "none of the 2 settings measured keeps the victim's p99 within 10.00 ms: cap lower than 25%, or isolate (MIG)",
    );
  });
  it('names the p99, the kept throughput and the requests of the setting it chose, and any tie', () => {
    const tied = [cell(50, 'measured', 0.5), cell(25, 'measured', 0.505)];
    expect(protectionAt(at, tied, counts({}))).toEqual({
      aggressor: 'compute',
      load: 0.5,
      targetMs: 10,
      threadPct: 50,
      p99Ms: 9,
      kept: { value: 0.5, ci: [0.49, 0.51], rounds: 3 },
      reason:
        "p99 ≤ 10.00 ms holds at 95% over 1000 requests; 50%, 25% measured the same here (the aggressor's throughput kept: the intervals overlap), and each holds the target: the least restrictive is taken, since a cap also limits the aggressor when it runs alone",
    });
    expect(protectionAt(at, [cell(50, 'measured')], counts({})).reason).toBe(
      'p99 ≤ 10.00 ms holds at 95% over 1000 requests',
    );
  });
});

describe('mostKept: the setting named among those that hold', () => {
  const at = (threadPct: number | null, value: number, ci: [number, number] | null) =>
    ({ threadPct, kept: { value, ci, rounds: 3 } }) as unknown as Cell;
  const noKept = (threadPct: number) => ({ threadPct, kept: null }) as unknown as Cell;
  const pick = (cells: Cell[]) => {
    const { best, same } = mostKept(cells);
    return { best: best.threadPct, same: same.map((c) => c.threadPct) };
  };
  it.each([
    [
      'listed lowest cap first: still the least restrictive first',
      [at(25, 0.97, [0.95, 1]), at(50, 0.7, [0.5, 0.95])],
      { best: 50, same: [50, 25] },
    ],
    // Equal medians: the first listed is the top; 10%'s interval overlaps 50%'s, not 25%'s.
    [
      'equal medians: the first is the top',
      [at(50, 0.5, [0.4, 0.6]), at(25, 0.5, [0.5, 0.7]), at(10, 0.45, [0.3, 0.45])],
      { best: 50, same: [50, 25, 10] },
    ],
    [
      'no kept throughput counts as 0, and cannot be told apart',
      [at(25, 0.5, [0.4, 0.6]), noKept(50)],
      { best: 50, same: [50, 25] },
    ],
    ['none with a kept throughput: all the same', [noKept(25), noKept(50)], { best: 50, same: [50, 25] }],
    [
      'the top without an interval: every setting measured the same',
      [at(10, 0.2, [0.1, 0.3]), at(50, 0.9, null)],
      { best: 50, same: [50, 10] },
    ],
  ] as const)('%s', (_name, cells, want) => {
    expect(pick([...cells])).toEqual(want);
  });
});

describe("protectionFor: one aggressor's cap carried into deployment files", () => {
  const p = (aggressor: string, load: number, threadPct: number | null) =>
    ({ aggressor, load, threadPct }) as Protection;
  it.each([
    [
      'held at every load: the lowest cap, up to the highest load',
      [p('a', 0.5, 25), p('a', 0.25, 50)],
      [25, 0.5, null],
    ],
    ['another aggressor is not counted', [p('a', 0.25, 50), p('b', 0.5, null), p('b', 0.25, 10)], [50, 0.25, null]],
    ['none held at the first load', [p('a', 0.5, 50), p('a', 0.25, null)], [null, null, 0.25]],
    [
      'held, then not: up to the last load held',
      [p('a', 0.75, 10), p('a', 0.5, null), p('a', 0.25, 50)],
      [50, 0.25, 0.5],
    ],
    ['nothing found for it', [p('b', 0.25, 50)], [null, null, null]],
  ] as const)('%s', (_name, found, [threadPct, upToLoad, failedAtLoad]) => {
    expect(protectionFor([...found], 'a')).toEqual({ threadPct, upToLoad, failedAtLoad });
  });
});
