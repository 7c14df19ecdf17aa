/** Progress: the bar a terminal gets, and the plain lines everything else gets. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BarState, barLine, makeProgress, type ProgressEvent } from '../../harness/bench/progress.js';
import type { Trial } from '../../harness/bench/record/schema.js';

const trial = (round: number, arm: string, status: 'ok' | 'skipped' = 'ok'): Trial =>
  ({
    id: `timeslice/gemm#r${round}/${arm}`,
    comparisonId: 'timeslice/gemm',
    arm,
    round,
    startedAt: '',
    finishedAt: '',
    status,
    ...(status === 'skipped' ? { reason: 'the MPS daemon did not start' } : { clients: [], overlap: null }),
  }) as unknown as Trial;

/** A terminal whose clock moves 1 s per trial: what the bar prints is then fixed. */
function terminal(columns = 120) {
  let now = 0;
  const written: string[] = [];
  const progress = makeProgress(
    'human',
    { out: () => undefined, err: (s) => written.push(s) },
    { isTty: true, columns, nowMs: () => now },
  );
  return {
    written,
    emit: (e: ProgressEvent, advanceMs = 0) => {
      now += advanceMs;
      progress.emit(e);
    },
  };
}

describe('the progress bar', () => {
  it('fits the lines it scrolls above the bar to the terminal, as the bar itself', () => {
    const bar = terminal(80);
    bar.emit({
      type: 'run-start',
      runId: 'r',
      dir: 'results/2026-11-27-simulated-h200-abcdef',
      device: "NVIDIA H200 (SIMULATED: gpushare's simulator)",
      comparisons: 8,
      trials: 132,
    });
    bar.emit({ type: 'warning', message: `${'a long warning '.repeat(12)}end` });
    const lines = bar.written
      .join('')
      .replace(/\r\x1b\[K/g, '')
      .split('\n');
    expect(lines.filter((l) => [...l].length > 80)).toEqual([]);
    expect(lines.join(' ')).toContain('end');
  });

  it('shows done/total, elapsed time, the ETA, where the run is and the running ratio', () => {
    const state: BarState = {
      done: 45,
      total: 138,
      added: 6,
      elapsedMs: 31_000,
      etaMs: 64_000,
      at: 'timeslice/gemm r7 contended',
      running: { name: 'slowdown', value: '2.071×' },
    };
    expect(barLine(state, 200)).toBe(
      '[###.......] 45/138 (+6) 0:31 ETA 1:04 timeslice/gemm r7 contended slowdown 2.071×',
    );
    // The longest place of the default suite, with its ratio, fits 80 columns whole.
    // At 80 columns the longest place of the default suite keeps its ratio's value, if not its name.
    expect(
      barLine(
        { ...state, at: 'streams/pipeline r15 pinned-s2', running: { name: 'pinned-speedup-k2', value: '1.923×' } },
        80,
      ),
    ).toBe('[###.......] 45/138 (+6) 0:31 ETA 1:04 streams/pipeline r15 pinned-s2 1.923×');
  });

  it('never reaches the last column, at any width and state', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 300 }),
        fc.nat(500),
        fc.nat(500),
        fc.string({ maxLength: 120 }),
        (columns, done, extra, at) => {
          const line = barLine(
            {
              done,
              total: done + extra,
              added: extra,
              elapsedMs: done * 1000,
              etaMs: null,
              at,
              running: { name: 'slowdown', value: '1.000×' },
            },
            columns,
          );
          expect(line.length).toBeLessThanOrEqual(Math.max(20, columns - 1));
        },
      ),
    );
  });

  it('redraws in place for each trial, prints other events above it, and shows rounds added to the total', () => {
    const t = terminal();
    t.emit({ type: 'run-start', runId: 'r', dir: 'results/r', device: 'H100', comparisons: 1, trials: 3 });
    t.emit({ type: 'trial', trial: trial(0, 'solo-c0'), done: 1, total: 3, running: null }, 1000);
    t.emit({ type: 'trial', trial: trial(0, 'solo-c1'), done: 2, total: 3, running: null }, 1000);
    // A round beyond the minimum: the total grows by its 3 trials, and the bar says so.
    t.emit({ type: 'trial', trial: trial(1, 'contended'), done: 3, total: 6, running: null }, 1000);
    t.emit({ type: 'trial', trial: trial(1, 'solo-c1', 'skipped'), done: 4, total: 6, running: null }, 1000);
    t.emit({ type: 'run-end', status: 'complete' });
    expect(t.written).toEqual([
      '\r\x1b[Kgpushare bench: 1 comparisons, 3 trials on H100 → results/r\n',
      '\r\x1b[K[###.......] 1/3 0:01 ETA 0:02 timeslice/gemm r0 solo-c0',
      '\r\x1b[K[#######...] 2/3 0:02 ETA 0:01 timeslice/gemm r0 solo-c1',
      '\r\x1b[K[#####.....] 3/6 (+3) 0:03 ETA 0:03 timeslice/gemm r1 contended',
      // A trial that did not measure gets its own line, and the bar is drawn again under it.
      `\r\x1b[K${'[4/6] timeslice/gemm r1 solo-c1'.padEnd(40)} skipped — the MPS daemon did not start\n`,
      '\r\x1b[K[#######...] 4/6 (+3) 0:04 ETA 0:02 timeslice/gemm r1 solo-c1',
      '\n',
    ]);
  });

  it('is plain lines, one per trial, when stderr is not a terminal', () => {
    const written: string[] = [];
    const progress = makeProgress(
      'human',
      { out: () => undefined, err: (s) => written.push(s) },
      { isTty: false, columns: 80, nowMs: () => 0 },
    );
    progress.emit({ type: 'trial', trial: trial(0, 'solo-c0'), done: 1, total: 3, running: null });
    progress.emit({ type: 'run-end', status: 'complete' });
    expect(written).toEqual([`${'[1/3] timeslice/gemm r0 solo-c0'.padEnd(40)} ok\n`]);
  });
});
