/**
 * Prompt and answer lengths, in tokens, drawn per request from a named law: fixed, uniform (whole
 * numbers min..max, both included), lognormal (a median and the sigma of its log, rounded, clamped to
 * 1..max: the long right tail of real prompts and answers), or empirical (each draw one of the lengths
 * of a file, uniformly).
 */

import { normalDraw } from './draws.js';

export type LengthLaw =
  | { kind: 'fixed'; tokens: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'lognormal'; median: number; sigma: number; max: number }
  | { kind: 'empirical'; values: readonly number[] };

/** One length, a whole number ≥ 1. */
export function drawLength(law: LengthLaw, random: () => number): number {
  switch (law.kind) {
    case 'fixed':
      return law.tokens;
    case 'uniform':
      return law.min + Math.floor(random() * (law.max - law.min + 1));
    case 'lognormal':
      return Math.min(law.max, Math.max(1, Math.round(law.median * Math.exp(law.sigma * normalDraw(random)))));
    case 'empirical':
      return law.values[Math.floor(random() * law.values.length)] as number;
  }
}

/**
 * The lengths of a lengths file: one whole number ≥ 1 per line; blank lines and lines starting with #
 * are skipped. One line naming the first bad line, or the lengths.
 */
export function parseLengths(text: string, file: string): { values: number[] } | { problem: string } {
  const values: number[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const value = Number(line);
    if (!(Number.isInteger(value) && value >= 1))
      return { problem: `${file} line ${i + 1}: ${JSON.stringify(line)} is not a whole number of tokens ≥ 1` };
    values.push(value);
  }
  if (values.length === 0) return { problem: `${file} holds no lengths: give one whole number ≥ 1 per line` };
  return { values };
}
