/**
 * A group's p99 pooled over its rounds (serve/pooled.ts): the values it rests on, its order-statistic
 * interval, and the rounds too thin for their own p99 (fewer than 299 values in either arm's window).
 */
import { describe, expect, it } from 'vitest';
import { groupPercentiles, pooled, pooledLines, pooledText } from '../../harness/serve/pooled.js';
import type { ServeRound, WindowStats } from '../../harness/serve/record.js';
import { latency } from '../../harness/serve/window.js';

/** n values 1 … n ms (the slowest n ms). */
const ramp = (n: number, offsetMs = 0) => latency(Array.from({ length: n }, (_, i) => offsetMs + i + 1));

const window = (n: number): WindowStats =>
  ({ ttft: ramp(n), itl: ramp(10 * n), e2e: ramp(n, 100) }) as unknown as WindowStats;

describe('pooled', () => {
  it('merges every window: 6 windows of 100 requests are one p99 of 600', () => {
    const p = pooled(Array.from({ length: 6 }, () => ramp(100)));
    expect(p).toMatchObject({ values: 600, windows: 6 });
    // 6 copies of 1 … 100: the 594th of 600 is 99 ms.
    expect(p.p99Ms).toBeCloseTo(99, 0);
    expect(p.ci[0]).not.toBeNull();
  });

  it('a p99 of too few values has no upper bound; none at all: no p99', () => {
    expect(pooled([ramp(100)]).ci[1]).toBeNull();
    expect(pooled([latency([])])).toEqual({ values: 0, windows: 1, p50Ms: null, p99Ms: null, ci: [null, null] });
  });

  it('says the values and rounds a p99 rests on', () => {
    const p = pooled(Array.from({ length: 6 }, () => ramp(384)));
    expect(pooledText('ttft', p)).toMatch(
      /^TTFT p99 \d+\.\d ms \[\d+\.\d, \d+\.\d\] \(pooled, 2,304 requests, 6 rounds\)$/,
    );
    expect(pooledText('itl', p)).toContain('2,304 token gaps');
  });
});

describe('groupPercentiles: rounds too thin for their own p99', () => {
  const round = (shared: number, dedicated: number): ServeRound => ({
    shared: window(shared),
    dedicated: window(dedicated),
  });

  it.each([
    ['every window 299', [round(299, 299), round(299, 299)], 0],
    ['one shared window 298', [round(298, 299), round(299, 299)], 1],
    ['one dedicated window 298', [round(299, 299), round(299, 298)], 1],
    ['both rounds thin', [round(100, 500), round(500, 100)], 2],
  ])('%s: %d thin rounds of TTFT', (_, rounds, thin) => {
    const p = groupPercentiles({ rounds });
    expect(p?.thinRounds.ttft).toBe(thin);
    // ITL holds ten gaps a request here: never thin from 30 requests up.
    expect(p?.thinRounds.itl).toBe(0);
    expect(p?.shared.ttft.values).toBe(rounds.reduce((sum, r) => sum + r.shared.ttft.count, 0));
  });

  it('none for a rate search; the report lines name each group and arm', () => {
    expect(groupPercentiles({ rounds: [] })).toBeNull();
    const percentiles = groupPercentiles({ rounds: [round(300, 300)] });
    const lines = pooledLines([{ mode: 'mps', copies: 2, percentiles }]);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^- mps ×2, shared: TTFT p99 .* \(pooled, 300 requests, 1 rounds\); ITL p99 .*; e2e p99 /);
    expect(lines[1]).toMatch(/^- mps ×2, dedicated: /);
  });
});
