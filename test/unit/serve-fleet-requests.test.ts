/**
 * --dry-run's requests per fleet server (#49): every window sends the same seeded schedule, so each
 * server's requests in a mode are known before anything runs; under 381, none missed, a server can only
 * be unclear or missed (the Wilson rule at 99%), and the dry run names the --window-s that gives every
 * server enough.
 */
import { describe, expect, it } from 'vitest';
import type { Fleet } from '../../harness/serve/fleet/fleet-file.js';
import { parseFleet } from '../../harness/serve/fleet/fleet-file.js';
import { fleetSchedule } from '../../harness/serve/fleet/fleet-load.js';
import { requestsLines, requestsPerServer, windowSFor } from '../../harness/serve/fleet/fleet-requests.js';
import { REQUESTS_TO_SHOW_WITHIN, verdictOf } from '../../harness/serve/fleet/verdicts.js';

const SIM = 'node simulator/openai-server.cjs --port {port}';
const fleetOf = (servers: string, traffic: string): Fleet => {
  const given = parseFleet(`seed: 5\ntraffic:\n${traffic}servers:\n${servers}`, '/f.yaml');
  if (given.traffic.source !== 'generated') throw new Error('generated traffic expected');
  return {
    ...given,
    traffic: {
      ...given.traffic,
      inputTokens: { kind: 'fixed', tokens: 8 },
      outputTokens: { kind: 'fixed', tokens: 8 },
    },
  };
};
const server = (name: string, rate: number, count = 1) =>
  `  - {name: ${name}, model: m, command: '${SIM}', mem_fraction: 0.01, count: ${count}, rate_per_s: ${rate}}\n`;
const constant = '  arrivals: {law: constant}\n';

describe('the requests a server needs to be shown within', () => {
  it('is 381 at 99%: 380 with none missed is still unclear', () => {
    expect(REQUESTS_TO_SHOW_WITHIN).toBe(381);
    expect(verdictOf(381, 381).verdict).toBe('within');
    expect(verdictOf(380, 380).verdict).toBe('unclear');
  });
});

describe('requests per server in a mode', () => {
  it("counts each server's arrivals in one window, times the rounds", () => {
    const fleet = fleetOf(server('hot', 10) + server('cold', 1), constant);
    const per = requestsPerServer(fleet, 5000, 2);
    expect(per.map((s) => s.label)).toEqual(['hot', 'cold']);
    // Constant arrivals, a random phase: 50 or 49 a window at 10 req/s, 5 or 4 at 1 req/s.
    expect(per[0]?.requests).toBeGreaterThanOrEqual(98);
    expect(per[0]?.requests).toBeLessThanOrEqual(100);
    expect(per[1]?.requests).toBeGreaterThanOrEqual(8);
    expect(per[1]?.requests).toBeLessThanOrEqual(10);
    expect((per[0]?.requests ?? 0) % 2).toBe(0);
  });

  it('finds the shortest --window-s that gives every server 381, and one second less does not', () => {
    const fleet = fleetOf(server('hot', 10) + server('cold', 1), constant);
    const w = windowSFor(fleet, 2) as number;
    // 1 req/s over 2 windows: about 381 ÷ 2 s.
    expect(w).toBeGreaterThanOrEqual(190);
    expect(w).toBeLessThanOrEqual(192);
    const fewest = (s: number) => Math.min(...requestsPerServer(fleet, s * 1000, 2).map((x) => x.requests));
    expect(fewest(w)).toBeGreaterThanOrEqual(381);
    expect(fewest(w - 1)).toBeLessThan(381);
    // More rounds, shorter windows.
    expect(windowSFor(fleet, 4) as number).toBeLessThan(w);
  });

  it("rests on a longer window's schedule extending a shorter one's, arrival for arrival (bursty arrivals too)", () => {
    const fleet = fleetOf(server('a', 7) + server('b', 2), '  arrivals: {law: gamma, cv: 2}\n');
    const long = fleetSchedule(fleet, 20_000).filter((x) => x.offsetMs < 10_000);
    expect(long).toEqual(fleetSchedule(fleet, 10_000));
  });

  it('gives up past an hour of windows, and on a trace', () => {
    expect(windowSFor(fleetOf(server('cold', 0.01), constant), 2)).toBeNull();
    const fleet = fleetOf(server('a', 1), constant);
    expect(windowSFor({ ...fleet, traffic: { source: 'trace', file: 't.jsonl', arrivals: [] } }, 2)).toBeNull();
  });
});

describe('what --dry-run says', () => {
  const per = [
    { label: 'hot-1', requests: 900, ratePerS: 90 },
    { label: 'cold-1', requests: 20, ratePerS: 2 },
  ];
  it('names the range, and nothing more when every server gets 381', () => {
    const lines = requestsLines([{ label: 'a', requests: 381, ratePerS: 1 }], 5000, 2, null);
    expect(lines).toEqual([
      "requests per server in a mode's 2 windows of 5 s: 381 (a) to 381 (a); 381, none missed, show a server within 99% (Wilson 95%)",
    ]);
  });
  it('counts the servers short of 381 and names the --window-s, or why there is none', () => {
    expect(requestsLines(per, 5000, 2, 96)[1]).toBe(
      '  1 of 2 servers get fewer: their verdict can only be unclear or missed; --window-s 96 gives each of them enough (or more --rounds)',
    );
    expect(requestsLines(per, 5000, 2, null)[1]).toContain('no --window-s up to 3600 s gives each enough');
    const trace = per.map((s) => ({ ...s, ratePerS: null }));
    expect(requestsLines(trace, 5000, 2, null)[1]).toContain('the trace holds too few of theirs');
    expect(requestsLines([], 5000, 2, null)).toEqual([]);
  });
});
