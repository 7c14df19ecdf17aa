/**
 * The experiment layer: ABBA order, the paired-rounds driver (resume, the first failure, an abort) and
 * the rate-search driver (the policy's stop, a failed step, an abort), each on a fake measurement: a
 * pure function of the arm and round, or of the rate.
 */
import { describe, expect, it } from 'vitest';
import {
  nextRate,
  type RatedStep,
  type RateSearch,
  runRateSearch,
  type SearchPolicy,
  type StepOutcome,
} from '../../harness/experiment/rate-search.js';
import {
  abbaOrder,
  type PairedRounds,
  runPairedRounds,
  type WindowOutcome,
  windowsLeft,
} from '../../harness/experiment/rounds.js';

class Stop extends Error {}

describe('ABBA order', () => {
  it.each([
    [['A', 'B'], 0, ['A', 'B']],
    [['A', 'B'], 1, ['B', 'A']],
    [['A', 'B'], 2, ['A', 'B']],
    [['A', 'B', 'C'], 0, ['A', 'B', 'C']],
    [['A', 'B', 'C'], 1, ['C', 'B', 'A']],
    [['A', 'B', 'C'], 2, ['A', 'B', 'C']],
  ])('arms %j in round %i run as %j', (arms, round, order) => {
    expect(abbaOrder(arms, round)).toEqual(order);
  });

  it('leaves the arms it is given as they were', () => {
    const arms = ['A', 'B'];
    abbaOrder(arms, 1);
    expect(arms).toEqual(['A', 'B']);
  });
});

describe('paired rounds', () => {
  /** A driver over arms A and B whose windows are `${arm}${round}`, failing where `fails` says; what it did, in order. */
  function rounds(over: Partial<PairedRounds<string, string>> = {}) {
    const log: string[] = [];
    const plan: PairedRounds<string, string> = {
      arms: ['A', 'B'],
      rounds: 3,
      measure: async (arm, round): Promise<WindowOutcome<string>> => ({ status: 'ok', window: `${arm}${round}` }),
      onRoundStart: (round) => log.push(`start ${round}`),
      onWindow: async (_arm, _round, window) => void log.push(window),
      onRound: async (round, windows) => void log.push(`end ${round}: ${windows.map((w) => w.window).join(' ')}`),
      signal: new AbortController().signal,
      interrupted: () => new Stop('interrupted'),
      ...over,
    };
    return { plan, log };
  }

  it('runs every round in ABBA order, each window and round reported as it ends', async () => {
    const { plan, log } = rounds();
    expect(await runPairedRounds(plan)).toEqual({ status: 'done' });
    expect(log).toEqual([
      'start 0',
      'A0',
      'B0',
      'end 0: A0 B0',
      'start 1',
      'B1',
      'A1',
      'end 1: B1 A1',
      'start 2',
      'A2',
      'B2',
      'end 2: A2 B2',
    ]);
  });

  it('resumed, measures only the windows not kept, and starts no round that is complete', async () => {
    const kept = new Set(['A0', 'B0', 'B1']);
    const { plan, log } = rounds({ kept: (arm, round) => kept.has(`${arm}${round}`) });
    expect(await runPairedRounds(plan)).toEqual({ status: 'done' });
    expect(log).toEqual(['start 1', 'A1', 'end 1: A1', 'start 2', 'A2', 'B2', 'end 2: A2 B2']);
    expect(windowsLeft(['A', 'B'], 3, (arm, round) => kept.has(`${arm}${round}`))).toBe(3);
  });

  it('stops at the first failed window with its reason: no later window, no end of its round', async () => {
    const measured: string[] = [];
    const { plan, log } = rounds({
      measure: async (arm, round) => {
        measured.push(`${arm}${round}`);
        return arm === 'A' && round === 1
          ? { status: 'failed', reason: 'the aggressor exited' }
          : { status: 'ok', window: `${arm}${round}` };
      },
    });
    expect(await runPairedRounds(plan)).toEqual({ status: 'failed', round: 1, reason: 'the aggressor exited' });
    expect(measured).toEqual(['A0', 'B0', 'B1', 'A1']);
    expect(log).toEqual(['start 0', 'A0', 'B0', 'end 0: A0 B0', 'start 1', 'B1']);
  });

  it('runs rounds while its stop policy says so', async () => {
    const asked: number[] = [];
    const { plan, log } = rounds({
      rounds: (round) => {
        asked.push(round);
        return round < 2;
      },
    });
    await runPairedRounds(plan);
    expect(asked).toEqual([0, 1, 2]);
    expect(log.filter((l) => l.startsWith('end'))).toEqual(['end 0: A0 B0', 'end 1: B1 A1']);
  });

  it('throws the interruption before the next window once aborted, measuring nothing more', async () => {
    const abort = new AbortController();
    const measured: string[] = [];
    const { plan } = rounds({
      signal: abort.signal,
      measure: async (arm, round) => {
        measured.push(`${arm}${round}`);
        if (measured.length === 3) abort.abort();
        return { status: 'ok', window: `${arm}${round}` };
      },
    });
    await expect(runPairedRounds(plan)).rejects.toThrow(Stop);
    expect(measured).toEqual(['A0', 'B0', 'B1']);
  });
});

describe('the rate search', () => {
  const policy: SearchPolicy = { startQps: 100, tolerance: 0.1, maxSteps: 12, minQps: 100 / 16 };
  /** A server that passes up to `limit` req/s: the step is the rate and its verdict. */
  const passesUpTo =
    (limit: number) =>
    async (rate: number): Promise<StepOutcome<RatedStep>> => ({
      status: 'measured',
      step: { totalQps: rate, verdict: rate <= limit ? 'pass' : 'fail' },
    });

  function search(over: Partial<RateSearch<RatedStep, RatedStep>> = {}) {
    const kept: Array<{ verdict: RatedStep; count: number; next: number | null }> = [];
    const plan: RateSearch<RatedStep, RatedStep> = {
      policy,
      steps: [],
      step: passesUpTo(300),
      verdicts: (steps) => steps,
      onStep: async ({ verdict, verdicts, next }) => void kept.push({ verdict, count: verdicts.length, next }),
      signal: new AbortController().signal,
      ...over,
    };
    return { plan, kept };
  }

  it('measures each rate nextRate asks for, keeps every step, and stops when it says null', async () => {
    const { plan, kept } = search();
    expect(await runRateSearch(plan)).toEqual({ status: 'done' });
    const rates = plan.steps.map((s) => s.totalQps);
    expect(rates.slice(0, 4)).toEqual([100, 200, 400, 300]);
    expect(kept.at(-1)?.next).toBeNull();
    // Each step told with every verdict so far and the rate tried next: the one nextRate gives.
    expect(kept.map((k) => k.count)).toEqual(rates.map((_, i) => i + 1));
    expect(kept.slice(0, -1).map((k) => k.next)).toEqual(rates.slice(1));
    expect(nextRate(plan.steps, policy)).toBeNull();
  });

  it('goes on from the steps kept, measuring at the index that follows them', async () => {
    const indices: number[] = [];
    const step = passesUpTo(300);
    const { plan } = search({
      steps: [{ totalQps: 100, verdict: 'pass' }],
      step: (rate, index) => {
        indices.push(index);
        return step(rate);
      },
    });
    await runRateSearch(plan);
    expect(plan.steps[1]?.totalQps).toBe(200);
    expect(indices[0]).toBe(1);
  });

  it('measures nothing when the steps kept already end it', async () => {
    const measured: number[] = [];
    const { plan } = search({
      policy: { ...policy, maxSteps: 1 },
      steps: [{ totalQps: 100, verdict: 'pass' }],
      step: async (rate) => {
        measured.push(rate);
        return { status: 'failed', reason: 'never' };
      },
    });
    expect(await runRateSearch(plan)).toEqual({ status: 'done' });
    expect(measured).toEqual([]);
  });

  it('ends at a failed step with its reason, keeping only the steps before it', async () => {
    const step = passesUpTo(300);
    const { plan, kept } = search({
      step: (rate) =>
        rate === 400 ? Promise.resolve({ status: 'failed', reason: 'client 1 at 400 req/s: exited' }) : step(rate),
    });
    expect(await runRateSearch(plan)).toEqual({ status: 'failed', reason: 'client 1 at 400 req/s: exited' });
    expect(plan.steps.map((s) => s.totalQps)).toEqual([100, 200]);
    expect(kept).toHaveLength(2);
  });

  it('aborted mid-search, ends interrupted before its next step, or throws the interruption it is given', async () => {
    const run = async (interrupted?: () => Error) => {
      const abort = new AbortController();
      const step = passesUpTo(300);
      const { plan } = search({
        signal: abort.signal,
        step: (rate) => {
          if (rate === 200) abort.abort();
          return step(rate);
        },
        ...(interrupted ? { interrupted } : {}),
      });
      const searched = await runRateSearch(plan).catch((error: unknown) => error);
      return { plan, searched };
    };
    const quiet = await run();
    expect(quiet.searched).toEqual({ status: 'interrupted' });
    expect(quiet.plan.steps.map((s) => s.totalQps)).toEqual([100, 200]);
    const thrown = await run(() => new Stop('SIGINT'));
    expect(thrown.searched).toBeInstanceOf(Stop);
    expect(thrown.plan.steps.map((s) => s.totalQps)).toEqual([100, 200]);
  });
});
