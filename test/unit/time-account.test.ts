/** The time account (session/time-account.ts) on recorded timestamps: where a run's wall time went. */
import { describe, expect, it } from 'vitest';
import type { Run } from '../../harness/bench/record/schema.js';
import { benchTimeAccount } from '../../harness/bench/record/time.js';
import { TimeAccountSchema, timeAccount, timeAccountText } from '../../harness/session/time-account.js';

const S = 1_000_000; // µs per second

describe('timeAccount', () => {
  it('splits a part into windows, start-up and the harness between trials, and the wall time around the parts', () => {
    const account = timeAccount(
      [{ startUs: 0, endUs: 100 * S }],
      [
        {
          id: 'a',
          startedUs: 10 * S,
          readyUs: 18 * S,
          endUs: 40 * S,
          windows: [
            { startUs: 20 * S, endUs: 25 * S },
            { startUs: 26 * S, endUs: 31 * S },
          ],
        },
        { id: 'b', startedUs: 50 * S, readyUs: 55 * S, endUs: 90 * S, windows: [{ startUs: 56 * S, endUs: 86 * S }] },
      ],
    );
    expect(account).toEqual({
      wallS: 100,
      windowsS: 40,
      startupS: 13,
      harnessS: 17, // a: 30 − 10 − 8; b: 40 − 30 − 5
      outsideS: 30,
      parts: [
        { id: 'a', spanS: 30, windowsS: 10, startupS: 8, harnessS: 12 },
        { id: 'b', spanS: 40, windowsS: 30, startupS: 5, harnessS: 5 },
      ],
    });
    expect(timeAccountText(account)).toBe(
      'measuring: 40 s of 100 s (40%); client start-up and warm-up 13 s, harness between trials 17 s, outside comparisons 30 s',
    );
  });

  it('sums the spans of a resumed run, and a span that never ended (a harness killed) counts as far as its parts reach', () => {
    const part = {
      id: 'a',
      startedUs: 1 * S,
      readyUs: 2 * S,
      endUs: null,
      windows: [{ startUs: 2 * S, endUs: 4 * S }],
    };
    const account = timeAccount(
      [
        { startUs: 0, endUs: null },
        { startUs: 500 * S, endUs: 503 * S },
      ],
      [part],
    );
    expect(account).toMatchObject({ wallS: 3, windowsS: 2, startupS: 1, harnessS: 0, outsideS: 0 });
  });
});

it('never records a negative time: rounding of a span made of windows and start-up is clamped (the schema takes none)', () => {
  // 0.7 + 0.1 − 0.7 − 0.1 is −2.8e-17 in doubles; a run.json with it failed its schema on save.
  const part = {
    id: 'a',
    startedUs: 0,
    readyUs: 0.1 * S,
    endUs: null,
    windows: [{ startUs: 0.1 * S, endUs: 0.8 * S }],
  };
  const account = timeAccount([{ startUs: 0, endUs: null }], [part]);
  expect(account.harnessS).toBe(0);
  expect(() => TimeAccountSchema.parse(account)).not.toThrow();
});

describe('benchTimeAccount', () => {
  const trial = (comparisonId: string, startUs: number, endUs: number) => ({
    id: `${comparisonId}/${startUs}`,
    comparisonId,
    arm: 'contended',
    round: 0,
    startedAt: '',
    finishedAt: '',
    status: 'ok' as const,
    overlap: null,
    clients: [0, 1].map((client) => ({
      client,
      pid: null,
      variant: { streams: 1 },
      windowStartUs: startUs + client * S, // the second client released 1 s later: the window is their union
      windowEndUs: endUs + client * S,
      iterations: 1,
      gpuMs: 1,
      latency: null,
      chunkIterations: 1,
    })),
  });

  it('a window belongs to the clients that measured it: a comparison resumed has one start per session', () => {
    const run: Pick<Run, 'trials' | 'clientStarts' | 'wallSpans'> = {
      wallSpans: [
        { startUs: 0, endUs: 20 * S },
        { startUs: 1000 * S, endUs: 1020 * S },
      ],
      clientStarts: [
        { comparisonId: 'c', startedUs: 1 * S, readyUs: 2 * S, endUs: 10 * S },
        { comparisonId: 'c', startedUs: 1001 * S, readyUs: 1004 * S, endUs: 1010 * S },
      ],
      trials: [trial('c', 3 * S, 5 * S), trial('c', 1005 * S, 1006 * S)],
    };
    expect(benchTimeAccount(run)?.parts).toEqual([
      { id: 'c', spanS: 9, windowsS: 3, startupS: 1, harnessS: 5 },
      { id: 'c', spanS: 9, windowsS: 2, startupS: 3, harnessS: 4 },
    ]);
  });

  it('is null for a run made before wall spans were recorded (its report stays as it was)', () => {
    expect(benchTimeAccount({ trials: [], clientStarts: [] })).toBeNull();
  });
});
