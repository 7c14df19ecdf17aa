/**
 * Flag values as typed, given meaning: lists, numbers, choices. Each refusal is one line that names
 * the flag, the bad value (quoted and escaped as argv is) and what is allowed.
 */

import { UserError } from './errors.js';
import { argText } from './escape/terminal.js';

export function list(raw: string | undefined, flag: string, fallback: readonly string[]): string[] {
  if (raw === undefined) return [...fallback];
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) throw new UserError(`${flag} "${raw}": give at least one value, comma-separated`);
  return unique(items);
}

export function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

export function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string, what: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UserError(`unknown ${what} "${value}" in ${flag}: choose from ${allowed.join(', ')}`);
}

/** Plain decimal only: Number() alone would also take 0x10, 1e1, " 5", "+5", ".5" or "5.". */
const DECIMAL = /^-?\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;

export function number(raw: string | undefined, flag: string, fallback: number, lo: number, hi: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!DECIMAL.test(raw) || value < lo || value > hi) {
    throw new UserError(`${flag} ${argText(raw)}: needs a number from ${lo} to ${hi}`); // argText: " 5" shows its space, a newline stays on the one line
  }
  return value;
}

export function integer(raw: string | undefined, flag: string, fallback: number, lo: number, hi: number): number {
  const whole = () => new UserError(`${flag} ${argText(raw ?? '')}: needs a whole number from ${lo} to ${hi}`);
  // Not decimal at all (0x10, 1e1): a whole number is what it needs; out of range: number()'s message.
  if (raw !== undefined && !DECIMAL.test(raw)) throw whole();
  const value = number(raw, flag, fallback, lo, hi);
  if (raw !== undefined && !WHOLE.test(raw)) throw whole();
  return value;
}

/**
 * A list of whole numbers (--clients 2,4,8), sorted and each once. Each item is taken as typed, not
 * trimmed: " 4" or "4\n" is refused like any other malformed number.
 */
export function integerList(
  raw: string | undefined,
  flag: string,
  fallback: readonly number[],
  lo: number,
  hi: number,
): number[] {
  if (raw === undefined) return [...fallback];
  return unique(raw.split(',').map((item) => integer(item, flag, 0, lo, hi))).sort((a, b) => a - b);
}

/** A GPU list flag (--gpus): all, or GPU indices. */
export function gpuList(text: string | undefined): number[] | 'all' {
  if (text === undefined || text === 'all') return 'all';
  return unique(list(text, '--gpus', []).map((g) => integer(g, '--gpus', 0, 0, 1023)));
}
