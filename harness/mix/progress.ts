/** mix's progress on stderr: a line per step of the victim's capacity search, and one per window of a mode's rounds. */
import { clockText } from '../core/clock-text.js';
import { termText } from '../core/escape/terminal.js';
import type { StepAnalysis } from '../workload/open-loop.js';
import type { Arm } from './arms.js';
import { type MixMode, PAIR } from './record.js';
import type { Measured } from './window.js';

/** e.g. `  victim alone, step 3: 800 req/s, p99 1.23 ms (target 2 ms): pass`. */
export function capacityStepLine(stepNumber: number, step: StepAnalysis, targetMs: number): string {
  return `  victim alone, step ${stepNumber}: ${step.totalQps.toFixed(0)} req/s, p99 ${step.p99Ms.toFixed(2)} ms (target ${targetMs} ms): ${step.verdict}\n`;
}

/** Where a window stands in its run: its mode and round, and what the run may still take. */
export interface WindowProgress {
  mode: MixMode;
  round: number;
  rounds: number;
  /** Windows of the run not measured yet. */
  windowsLeft: number;
  /** This window's wall time, ms. */
  windowMs: number;
}

/** e.g. `  mps round 2/5, victim at 50% beside compute; victim 812 requests; aggressor 95 it/s; about 1:40 left`. */
export function windowLine(at: WindowProgress, arm: Arm, w: Measured): string {
  const victim = w.victim ? `; victim ${w.victim.requests} requests` : '';
  const aggressor = w.aggressor
    ? `; aggressor ${(w.aggressor.iterations / Math.max(1e-9, w.aggressor.windowS)).toFixed(0)} it/s`
    : '';
  const invalid = w.invalid ? `; invalid: ${termText(w.invalid)}` : '';
  return `  ${at.mode} round ${at.round + 1}/${at.rounds}, ${armText(arm)}${victim}${aggressor}${invalid}; about ${clockText(at.windowsLeft * at.windowMs)} left\n`;
}

/** Who runs in an arm, in words. */
function armText(arm: Arm): string {
  if (arm.arm === 'victim-alone') return `victim alone at ${(arm.load as number) * 100}%`;
  if (arm.arm === 'aggressor-alone') return `${arm.aggressor} alone`;
  if (arm.arm === 'pair') return `${PAIR.join(' and ')} together`;
  return `victim at ${(arm.load as number) * 100}% beside ${arm.aggressor}${arm.threadPct === null ? '' : ` (${arm.threadPct}% threads)`}`;
}
