/**
 * capacity --serve --fleet's pure parts (#49 Build 3): a fleet of n servers of the file's kinds (counts by
 * largest remainder, every kind once n reaches the kinds, rates scaled by n ÷ the file's size, a rate the
 * file gives per server kept), the top of a mode's search (memory, MPS's 48 clients, --max-servers), the
 * search on fake step verdicts (bracketing, an unclear step again, boundary replicates, the interval), and
 * the early stop of a step whose latency climbs without end.
 */
import { describe, expect, it } from 'vitest';
import { cutShort } from '../../harness/serve/fleet/fleet-capacity.js';
import type { Fleet } from '../../harness/serve/fleet/fleet-file.js';
import { parseFleet } from '../../harness/serve/fleet/fleet-file.js';
import {
  CLIMB_MIN_WINDOWS,
  type ClimbPoint,
  climbPoints,
  climbsWithoutEnd,
  largestOf,
  nextSize,
  type SizedStep,
  type SizePolicy,
  type StepVerdict,
  stepAttainments,
  stepVerdictOf,
} from '../../harness/serve/fleet/fleet-search.js';
import { kindCounts, sizedFleet, sizeTop } from '../../harness/serve/fleet/fleet-size.js';

const SIM = 'node simulator/openai-server.cjs --port {port}';
const kind = (name: string, mem: number, count: number, extra = '') =>
  `  - {name: ${name}, model: m-${name}, command: '${SIM}', mem_fraction: ${mem}, count: ${count}${extra}}\n`;
const fleetOf = (servers: string, traffic = 'traffic:\n  rate_per_s: 36\n  popularity: {law: zipf, s: 1}\n'): Fleet => {
  const given = parseFleet(`seed: 3\n${traffic}servers:\n${servers}`, '/f.yaml');
  if (given.traffic.source !== 'generated') throw new Error('generated traffic expected');
  const t = given.traffic;
  return {
    ...given,
    traffic: { ...t, inputTokens: { kind: 'fixed', tokens: 8 }, outputTokens: { kind: 'fixed', tokens: 8 } },
  };
};
/** Three sizes as the example: 2 large (0.2), 6 medium (0.05), 10 small (0.03): memory exactly 1 at 18. */
const THREE = kind('large', 0.2, 2) + kind('medium', 0.05, 6) + kind('small', 0.03, 10);
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe('a fleet of n servers of the file kinds', () => {
  it('keeps the file proportions by largest remainder, ties to the earlier kind', () => {
    expect(kindCounts([2, 6, 10], 18)).toEqual([2, 6, 10]);
    expect(kindCounts([2, 6, 10], 36)).toEqual([4, 12, 20]);
    expect(kindCounts([2, 6, 10], 9)).toEqual([1, 3, 5]);
    // Quotas 0.44, 1.33, 2.22: the one left goes to the largest remainder, the first kind's.
    expect(kindCounts([2, 6, 10], 4)).toEqual([1, 1, 2]);
    expect(kindCounts([1, 1], 3)).toEqual([2, 1]);
  });

  it('hands out every server left after the floors, however many (the sizes always add up to n)', () => {
    // Quotas 3.5, 8.75, 15.75: floors 26, so 2 are left, to the two remainders of .75.
    expect(kindCounts([2, 5, 9], 28)).toEqual([3, 9, 16]);
    // Quotas 1.5, 3.75, 6.75: floors 10, 2 left.
    expect(kindCounts([2, 5, 9], 12)).toEqual([1, 4, 7]);
    for (let n = 1; n <= 48; n++) expect(kindCounts([2, 5, 9], n).reduce((a, b) => a + b, 0)).toBe(n);
  });

  it('gives every kind one once n reaches the number of kinds, and not below it', () => {
    // Largest remainder alone gives 0, 1, 2 at 3: the empty kind takes one from the most over its quota.
    expect(kindCounts([2, 6, 10], 3)).toEqual([1, 1, 1]);
    expect(kindCounts([2, 6, 10], 2)).toEqual([0, 1, 1]);
    expect(kindCounts([1, 30], 2)).toEqual([1, 1]);
    expect(kindCounts([1, 30], 1)).toEqual([0, 1]);
  });

  it('scales the whole rate by n ÷ the file size, so the mean load per server stays the file', () => {
    const fleet = fleetOf(THREE);
    for (const n of [1, 3, 9, 18, 36]) {
      const sized = sizedFleet(fleet, n);
      expect(sized.servers).toHaveLength(n);
      expect(sum(sized.servers.map((s) => s.ratePerS as number))).toBeCloseTo((36 * n) / 18, 9);
      expect(sum(sized.servers.map((s) => s.share))).toBeCloseTo(1, 9);
      expect(sized.servers.map((s) => s.index)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    }
    const nine = sizedFleet(fleet, 9);
    expect(nine.servers.map((s) => s.label)).toEqual([
      'large',
      'medium-1',
      'medium-2',
      'medium-3',
      'small-1',
      'small-2',
      'small-3',
      'small-4',
      'small-5',
    ]);
    // Zipf over the 9: server 1 the hottest, twice server 2's at s = 1.
    expect((nine.servers[0]?.ratePerS as number) / (nine.servers[1]?.ratePerS as number)).toBeCloseTo(2, 9);
  });

  it('keeps a server its own rate_per_s, and shares of the scaled total', () => {
    const rates = fleetOf(
      kind('a', 0.1, 1, ', rate_per_s: 5') + kind('b', 0.1, 2, ', rate_per_s: 1'),
      'traffic:\n  arrivals: {law: poisson}\n',
    );
    expect(sizedFleet(rates, 6).servers.map((s) => s.ratePerS)).toEqual([5, 5, 1, 1, 1, 1]);
    const shares = fleetOf(
      kind('a', 0.1, 1, ', share: 0.5') + kind('b', 0.1, 2, ', share: 0.25'),
      'traffic:\n  rate_per_s: 12\n',
    );
    // At 6 servers (2 a, 4 b): 24 req/s, a's servers twice b's.
    expect(sizedFleet(shares, 6).servers.map((s) => s.ratePerS as number)).toEqual([6, 6, 3, 3, 3, 3]);
  });
});

describe('the top of a mode search', () => {
  it('stops at the last size whose memory shares add up to at most 1', () => {
    // 18 servers fill the GPU exactly; 19 adds a small one: 1.03.
    expect(sizeTop(fleetOf(THREE), 'timeslice', null)).toMatchObject({ servers: 18, limitedBy: 'memory' });
    expect(sizeTop(fleetOf(THREE), 'timeslice', null).text).toContain('19 servers');
    expect(sizeTop(fleetOf(kind('a', 0.25, 1)), 'timeslice', null)).toMatchObject({ servers: 4, limitedBy: 'memory' });
  });

  it("counts a CUDA context per server where the GPU's memory is known, as the pre-check does", () => {
    const tenth = fleetOf(kind('a', 0.1, 1));
    // 10,000 MiB: a server needs 1,000 + 768 MiB; 5 need 8,840, 6 need 10,608.
    expect(sizeTop(tenth, 'timeslice', null, 10_000)).toMatchObject({ servers: 5, limitedBy: 'memory' });
    expect(sizeTop(tenth, 'timeslice', null, 10_000).text).toContain('6 servers need 10608 MiB');
    // 7,680 MiB: 5 servers need exactly all of it (0.5 × 7,680 + 5 × 768), and fit; one MiB less, 4.
    expect(sizeTop(tenth, 'timeslice', null, 7680)).toMatchObject({ servers: 5, limitedBy: 'memory' });
    expect(sizeTop(tenth, 'timeslice', null, 7679)).toMatchObject({ servers: 4, limitedBy: 'memory' });
    // Not known: the shares alone, and the text says the contexts are not counted.
    expect(sizeTop(tenth, 'timeslice', null)).toMatchObject({ servers: 10, limitedBy: 'memory' });
    expect(sizeTop(tenth, 'timeslice', null).text).toContain('not counted');
  });

  it('holds MPS modes to 48 clients and every mode to --max-servers', () => {
    const small = fleetOf(kind('a', 0.01, 2));
    expect(sizeTop(small, 'timeslice', null)).toMatchObject({ servers: 100, limitedBy: 'memory' });
    expect(sizeTop(small, 'mps', null)).toMatchObject({ servers: 48, limitedBy: 'mps clients' });
    expect(sizeTop(small, 'mps-threads', null)).toMatchObject({ servers: 48, limitedBy: 'mps clients' });
    expect(sizeTop(small, 'mps', 47)).toMatchObject({ servers: 47, limitedBy: 'max servers' });
    expect(sizeTop(small, 'timeslice', 49)).toMatchObject({ servers: 49, limitedBy: 'max servers' });
    expect(sizeTop(small, 'timeslice', 101)).toMatchObject({ servers: 100, limitedBy: 'memory' });
  });
});

/** Runs the search against `verdict` (size, its measurements so far at that size) until it stops. */
function search(policy: SizePolicy, verdict: (n: number, seen: number) => StepVerdict): SizedStep[] {
  const steps: SizedStep[] = [];
  for (let next = nextSize(steps, policy); next !== null; next = nextSize(steps, policy)) {
    const seen = steps.filter((s) => s.servers === next?.servers).length;
    steps.push({
      servers: next.servers,
      verdict: verdict(next.servers, seen),
      again: next.why === 'again' ? steps.length - 1 : null,
    });
    if (steps.length > 100) throw new Error('the search did not stop');
  }
  return steps;
}
const POLICY: SizePolicy = { start: 18, top: 48, replicates: 2, maxSizes: 12, maxSteps: 24 };
const TOP = { servers: 48, limitedBy: 'mps clients' as const };

describe('the search for the largest fleet', () => {
  it('doubles, bisects to neighbours, then measures the boundary twice more each', () => {
    const steps = search(POLICY, (n) => (n <= 27 ? 'within' : 'over'));
    expect(steps.map((s) => s.servers)).toEqual([18, 36, 27, 31, 29, 28, 27, 27, 28, 28]);
    expect(largestOf(steps, TOP)).toEqual({ servers: 27, interval: [27, 27], limitedBy: 'slo' });
  });

  it('halves while the fleet fails, down to one server; none passing is no answer', () => {
    const steps = search(POLICY, () => 'over');
    expect(steps.map((s) => s.servers)).toEqual([18, 9, 4, 2, 1, 1, 1]);
    expect(largestOf(steps, TOP)).toEqual({ servers: null, interval: null, limitedBy: 'slo' });
  });

  it('stops at the top when every size passes, limited by what set the top', () => {
    const steps = search({ ...POLICY, top: 20 }, () => 'within');
    expect(steps.map((s) => s.servers)).toEqual([18, 20, 20, 20]);
    expect(largestOf(steps, { servers: 20, limitedBy: 'memory' })).toEqual({
      servers: 20,
      interval: [20, 20],
      limitedBy: 'memory',
    });
  });

  it('measures an unclear step once more; unclear again counts as not passing', () => {
    const steps = search({ ...POLICY, replicates: 0 }, (n, seen) =>
      n <= 20 ? 'within' : n === 22 && seen === 0 ? 'unclear' : n === 22 ? 'within' : n <= 23 ? 'unclear' : 'over',
    );
    // 22 unclear then within (counted: within); 23 unclear twice: not passing, and never within.
    expect(steps.map((s) => `${s.servers}${s.again === null ? '' : '*'}`)).toEqual([
      '18',
      '36',
      '27',
      '22',
      '22*',
      '24',
      '23',
      '23*',
    ]);
    expect(largestOf(steps, TOP)).toEqual({ servers: 22, interval: [22, 22], limitedBy: 'slo' });
  });

  it('a boundary size that fails a replicate is no answer: the search goes below it and the interval covers it', () => {
    // 27 passes its first measurement and fails its second: 26 is bisected and replicated; 28 fails always.
    const steps = search(POLICY, (n, seen) => (n <= 26 || (n === 27 && seen === 0) ? 'within' : 'over'));
    expect(steps.map((s) => s.servers)).toEqual([18, 36, 27, 31, 29, 28, 27, 22, 24, 25, 26, 26, 26, 27]);
    expect(largestOf(steps, TOP)).toEqual({ servers: 26, interval: [26, 27], limitedBy: 'slo' });
    // Only a mixed size above the answer (no size failing every time): the SLO set it, not the step limit.
    const mixed: SizedStep[] = [
      { servers: 4, verdict: 'within', again: null },
      { servers: 5, verdict: 'within', again: null },
      { servers: 5, verdict: 'over', again: null },
    ];
    expect(largestOf(mixed, TOP)).toEqual({ servers: 4, interval: [4, 5], limitedBy: 'slo' });
  });

  it('a step verdict: over where a server missed, within where every server is within, else unclear', () => {
    const servers = [{ index: 1 }, { index: 2 }];
    const all = (good1: number, n1: number, good2: number, n2: number) => [
      [
        { server: 1, requests: n1, good: good1 },
        { server: 2, requests: n2, good: good2 },
      ],
    ];
    // 381 of 381 is the least whose Wilson lower end reaches 99%.
    expect(stepVerdictOf(servers, all(381, 381, 381, 381))).toBe('within');
    expect(stepVerdictOf(servers, all(380, 380, 381, 381))).toBe('unclear');
    expect(stepVerdictOf(servers, all(381, 381, 50, 100))).toBe('over');
    expect(stepVerdictOf(servers, all(381, 381, 0, 0))).toBe('unclear');
  });

  it("each server's attainment is its own requests, pooled over the step's windows, in the servers' order", () => {
    const windows = [
      [
        { server: 1, requests: 200, good: 200 },
        { server: 2, requests: 60, good: 30 },
      ],
      [
        { server: 2, requests: 40, good: 20 },
        { server: 1, requests: 181, good: 181 },
      ],
    ];
    expect(stepAttainments([{ index: 1 }, { index: 2 }], windows).map((a) => [a.attainment, a.verdict])).toEqual([
      [1, 'within'],
      [0.5, 'missed'],
    ]);
  });
});

/** Steps written as sizes and verdicts: `27+` within, `28-` over, `22?` unclear; `*` measures the step before again. */
const given = (text: string): SizedStep[] =>
  text
    .split(' ')
    .filter((t) => t !== '')
    .map((t, i) => ({
      servers: Number.parseInt(t, 10),
      verdict: ({ '+': 'within', '-': 'over', '?': 'unclear' } as const)[t.at(-1) as '+' | '-' | '?'],
      again: t.includes('*') ? i - 1 : null,
    }));

describe('the search on given steps', () => {
  it.each([
    ['', {}, { servers: 18, why: 'search' }],
    ['18+ 36- 22?', {}, { servers: 22, why: 'again' }],
    // 22 again within: it passes, and the search bisects above it.
    ['18+ 36- 22? 22*+', {}, { servers: 29, why: 'search' }],
    ['18+ 36- 27+ 28-', {}, { servers: 27, why: 'replicate' }],
    ['18+ 36- 27+ 28- 27+ 27+', {}, { servers: 28, why: 'replicate' }],
    ['18+ 36- 27+ 28- 27+ 27+ 28- 28-', {}, null],
    // The boundary is the largest passing size, whichever was measured first.
    ['27+ 18+ 28-', {}, { servers: 27, why: 'replicate' }],
    // ... and the smallest failing size above it, not a smaller one that failed.
    ['27+ 27+ 27+ 28- 20-', {}, { servers: 28, why: 'replicate' }],
    // The top passed: nothing above it, its replicates next.
    ['18+ 20+', { top: 20 }, { servers: 20, why: 'replicate' }],
    // The step limit counts every step: at it, the search stops mid-bracket.
    ['18+ 36- 27+ 31-', { maxSteps: 5 }, { servers: 29, why: 'search' }],
    ['18+ 36- 27+ 31-', { maxSteps: 4 }, null],
  ] as const)('after %j (policy %j): %j', (steps, policy, next) => {
    expect(nextSize(given(steps), { ...POLICY, ...policy })).toEqual(next);
  });

  it.each([
    // Cut short by the step limit: up to one below the smallest larger size that failed.
    ['18+ 36- 27+ 31-', { servers: 27, interval: [27, 30], limitedBy: 'slo' }],
    // No larger size measured: the step limit stopped it; a smaller size that failed bounds nothing.
    ['18+', { servers: 18, interval: [18, 18], limitedBy: 'steps' }],
    ['18- 27+', { servers: 27, interval: [27, 27], limitedBy: 'steps' }],
    // Larger sizes that passed some measurements: the interval reaches the largest of them.
    ['18+ 24+ 24- 26- 26+', { servers: 18, interval: [18, 26], limitedBy: 'slo' }],
    // ... or one below a larger size that failed every time (29 not measured: it may hold).
    ['18+ 24+ 24- 26- 26+ 30-', { servers: 18, interval: [18, 29], limitedBy: 'slo' }],
    ['18+ 36- 22? 22*+', { servers: 22, interval: [22, 35], limitedBy: 'slo' }],
  ] as const)('from %j: %j', (steps, answer) => {
    expect(largestOf(given(steps), TOP)).toEqual(answer);
  });
});

describe('the early stop', () => {
  const points = (p50s: Array<number | null>, completedShare: number): ClimbPoint[] =>
    p50s.map((p) => ({ ttftP50Ms: p, sentPerS: 10, completedPerS: 10 * completedShare }));
  const rising = [10, 20, 30, 40, 50];

  it('ends a step whose TTFT p50 rises while completions fall behind the requests sent', () => {
    expect(climbsWithoutEnd([{ label: 'a', points: points(rising, 0.5) }])).toMatch(
      /^a's TTFT p50 rose over 5 slices of a window \(Mann–Kendall p 0\.017\) while it completed 50% of the requests sent/,
    );
  });

  it('does not end one whose latency rises while it keeps up, nor a flat one behind, nor too few windows', () => {
    expect(climbsWithoutEnd([{ label: 'a', points: points(rising, 0.9) }])).toBeNull();
    expect(climbsWithoutEnd([{ label: 'a', points: points(rising, 0.89) }])).not.toBeNull();
    expect(climbsWithoutEnd([{ label: 'a', points: points([30, 10, 50, 20, 40], 0.5) }])).toBeNull();
    expect(climbsWithoutEnd([{ label: 'a', points: points([50, 40, 30, 20, 10], 0.5) }])).toBeNull();
    expect(CLIMB_MIN_WINDOWS).toBe(5);
    expect(climbsWithoutEnd([{ label: 'a', points: points(rising.slice(0, 4), 0.1) }])).toBeNull();
  });

  it('reads the trend over the slices that had requests only', () => {
    // Six slices, five with a p50: the trend of those five (p 0.017), not of six.
    expect(climbsWithoutEnd([{ label: 'a', points: points([null, ...rising], 0.5) }])).toMatch(
      /^a's TTFT p50 rose over 6 slices of a window \(Mann–Kendall p 0\.017\)/,
    );
  });

  it('reads a window in five slices by when each request was due, each slice its TTFT p50', () => {
    const records = [
      { scheduledMs: 100, ttftMs: 5 },
      { scheduledMs: 150, ttftMs: 7 },
      { scheduledMs: 199.9, ttftMs: 6 },
      { scheduledMs: 300, ttftMs: 20 },
      { scheduledMs: 700, ttftMs: null },
      { scheduledMs: 799, ttftMs: null },
      { scheduledMs: 700, ttftMs: 40 },
      { scheduledMs: 1099, ttftMs: 90 },
      // Due at the window's end: the last slice.
      { scheduledMs: 1100, ttftMs: 95 },
      { scheduledMs: 1100, ttftMs: 97 },
    ];
    const rates = { sentPerS: 8, completedPerS: 4 };
    expect(climbPoints({ startMs: 100, durationMs: 1000, records }, rates).map((p) => p.ttftP50Ms)).toEqual([
      6,
      20,
      null,
      Number.MAX_VALUE,
      95,
    ]);
    expect(climbPoints({ startMs: 100, durationMs: 1000, records }, rates)[0]).toEqual({ ttftP50Ms: 6, ...rates });
    // The step passes a server's whole window, which carries the window's own TTFT p50: each slice keeps its
    // own (taking the window's made every slice equal, so no climb could ever be found).
    const window = { ...rates, server: 1, requests: 10, ttftP50Ms: 50, ttftP99Ms: 97 };
    expect(climbPoints({ startMs: 100, durationMs: 1000, records }, window)).toEqual(
      [6, 20, null, Number.MAX_VALUE, 95].map((ttftP50Ms) => ({ ttftP50Ms, ...rates })),
    );
    // A window of no length has no slices to read: every p50 null.
    expect(climbPoints({ startMs: 100, durationMs: 0, records }, rates).map((p) => p.ttftP50Ms)).toEqual(
      Array.from({ length: 5 }, () => null),
    );
  });
});

describe("--resume's requests of a step cut short", () => {
  const line = (mode: string | null, arm: 'dedicated' | 'shared' | null, index: number) =>
    ({ mode, arm, index }) as Parameters<ReturnType<typeof cutShort>>[0];

  it('drops the lines of the mode from its first unsaved step on, and no others', () => {
    const drop = cutShort('mps', 3);
    expect(drop(line('mps', null, 3))).toBe(true);
    expect(drop(line('mps', null, 7))).toBe(true);
    // The saved steps, another mode's, the baseline's and the ceiling's stay.
    expect(drop(line('mps', null, 2))).toBe(false);
    expect(drop(line('timeslice', null, 3))).toBe(false);
    expect(drop(line('dedicated', 'dedicated', 3))).toBe(false);
    expect(drop(line(null, null, 3))).toBe(false);
    expect(drop(line('mps', 'shared', 3))).toBe(false);
  });
});
