/** The suite's deadlines scale with the machine's load: a busy 2-core machine gets the time it needs. */
import { describe, expect, it } from 'vitest';
import { loadFactor, until } from '../helpers.js';

describe('loadFactor', () => {
  it.each([
    [0, 2, 1],
    [2, 2, 1],
    [3, 2, 1.5],
    [8, 2, 4],
    [100, 2, 4],
    [6, 16, 1],
  ])('load %d on %d cores: deadlines × %d', (load, cores, factor) => {
    expect(loadFactor(load, cores)).toBe(factor);
  });
});

describe('until', () => {
  it('returns once the condition holds', async () => {
    let n = 0;
    await until(() => ++n >= 3, 5_000, 'three polls');
    expect(n).toBe(3);
  });

  it('fails naming what it waited for once the deadline passes', async () => {
    await expect(until(() => false, 100, 'a condition that never holds')).rejects.toThrow(
      /timed out after \d+ ms \(100 ms × load\) waiting for a condition that never holds/,
    );
  });
});
