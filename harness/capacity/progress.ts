/** capacity's progress on stderr: a line per step, with the rate, its p99 against the target, its verdict and the time left at most. */

import { clockText } from '../core/clock-text.js';
import { termText } from '../core/escape/terminal.js';
import type { StepAnalysis } from '../workload/open-loop.js';

/** Where a step stands in its run: which point and step, and what the run may still take. */
export interface StepProgress {
  mode: string;
  clients: number;
  /** This step's number in its point's search, from 1. */
  step: number;
  maxSteps: number;
  targetMs: number;
  /** Steps left at most, this point's and those of the points still to come. */
  stepsLeft: number;
  /** The mean wall time of a step so far, ms. */
  stepMs: number;
}

/** e.g. `timeslice × 2, step 3 of at most 12: 800 req/s, p99 1.23 ms (target 2 ms): pass; at most 1:40 left`. */
export function stepLine(at: StepProgress, step: StepAnalysis): string {
  const p99 = Number.isFinite(step.p99Ms) && step.requests > 0 ? `${step.p99Ms.toFixed(2)} ms` : '—';
  const verdict = step.verdict === 'pass' ? 'pass' : `${step.verdict}: ${termText(step.reason)}`;
  const left = at.stepsLeft > 0 ? `at most ${clockText(at.stepsLeft * at.stepMs)} left` : 'done';
  return `  ${at.mode} × ${at.clients}, step ${at.step} of at most ${at.maxSteps}: ${step.totalQps.toFixed(0)} req/s, p99 ${p99} (target ${at.targetMs} ms): ${verdict}; ${left}\n`;
}
