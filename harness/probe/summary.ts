/** A probe run's console text: each claim's verdict, the claim, and what was measured under it. */
import { termText } from '../core/escape/terminal.js';
import { claimsLedger } from './claims.js';
import type { ProbeRun } from './record.js';

export function probeSummary(run: ProbeRun): string {
  return claimsLedger(run)
    .map((c) => `${c.verdict.padEnd(13)} ${c.claim}\n${' '.repeat(14)}${termText(c.measured)}\n`)
    .join('');
}
