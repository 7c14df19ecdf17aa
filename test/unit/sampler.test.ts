import { describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { startSmiSampler, tagSamples } from '../../harness/system/nvidia/sampler.js';
import type { Sample } from '../../harness/system/nvidia/schema.js';
import { createRunner } from '../../harness/system/proc/runner.js';
import { fakePath } from '../helpers.js';

/** Samples until `done` holds (a condition, not a guess at how long a loaded machine takes), within a deadline. */
async function sampleUntil(
  scenario: string,
  done: (sampler: ReturnType<typeof startSmiSampler>) => boolean,
  deadlineMs = 20_000,
) {
  // The fake nvidia-smi plays `scenario`: given to this runner's children, not set in process.env.
  const runner = createRunner({ ...process.env, PATH: fakePath(), FAKE_SMI: scenario });
  const sampler = startSmiSampler(runner, systemClock, { gpuIndex: 0, intervalMs: 20 });
  const deadline = Date.now() + deadlineMs;
  while (!done(sampler) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await sampler.stop();
  return sampler;
}

describe('nvidia-smi sampler (fake nvidia-smi -lms)', () => {
  it('turns the recorded rows into typed samples in arrival order', async () => {
    const sampler = await sampleUntil('h200', (x) => x.samples.length > 3);
    expect(sampler.samples.length).toBeGreaterThan(3);
    expect(sampler.status()).toEqual({ status: 'ok', error: null });
    expect(sampler.samples[0]).toMatchObject({ gpuIndex: 0, memClockMHz: 3201, pstate: 'P0', trialId: null });
    const times = sampler.samples.map((s) => s.tUs);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('keeps [N/A] fields as null', async () => {
    const sampler = await sampleUntil('na', (x) => x.samples.length > 0);
    expect(sampler.samples[0]).toMatchObject({ powerW: null, smClockMHz: null, clocksEventReasons: null });
  });

  it('skips garbled lines and says so', async () => {
    const sampler = await sampleUntil('garbled', (x) => x.samples.length > 0 && x.status().error !== null);
    expect(sampler.samples.length).toBeGreaterThan(0);
    expect(sampler.status().error).toMatch(
      /^nvidia-smi sampler printed an unreadable line \(expected 11 fields, got 2/,
    );
  });

  it('tags the samples inside a trial window', () => {
    const at = (tUs: number): Sample => ({ tUs, trialId: null }) as Sample;
    const samples = [at(1), at(5), at(10), at(11)];
    tagSamples(samples, 't', 5, 10);
    expect(samples.map((s) => s.trialId)).toEqual([null, 't', 't', null]);
  });
});
