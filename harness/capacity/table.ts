/** The capacity table: one row per mode and client count, from the recorded steps, and how the console and exit code read it. */

import { ExitCode } from '../core/errors.js';
import { termText } from '../core/escape/terminal.js';
import type { StepAnalysis } from '../workload/open-loop.js';
import { analyzeStep, capacityOf } from '../workload/verdicts.js';
import type { CapacityPoint, CapacityRun } from './record.js';

/**
 * What a point gave: `measured` (a capacity, or that even the lowest rate tried failed); `invalid` (no
 * rate passed, and the lowest tried was no valid measurement); `interrupted` (a signal ended its search);
 * `skipped` or `failed` as recorded (its MPS daemon or a client could not run).
 */
export type RowStatus = 'measured' | 'invalid' | CapacityPoint['status'];

export interface CapacityRow {
  mode: string;
  clients: number;
  status: RowStatus;
  /** Why the row is not `measured`; null when it is. */
  reason: string | null;
  /** Highest total rate that passed, req/s; null when none did. */
  capacityQps: number | null;
  /** The lowest rate above it that failed, req/s: the capacity lies in [capacityQps, failedAtQps). */
  failedAtQps: number | null;
  /**
   * What bounds the capacity from above: a rate that `failed`; only rates that were `invalid`; or
   * nothing tried above it (`untried`: --max-steps ran out, or a signal came). Null without a capacity.
   */
  above: 'failed' | 'invalid' | 'untried' | null;
  at: StepAnalysis | null;
  steps: StepAnalysis[];
}

export function capacityTable(run: CapacityRun): CapacityRow[] {
  return run.points.map((p) => {
    const steps = p.steps.map((s) => analyzeStep(s, run.settings.sloP99Ms));
    const found = capacityOf(steps);
    const cap = found.capacityQps;
    const above =
      cap === null
        ? null
        : found.failedAtQps !== null
          ? 'failed'
          : steps.some((s) => s.totalQps > cap)
            ? 'invalid'
            : 'untried';
    const row = { mode: p.mode, clients: p.clients, ...found, above, steps } as const;
    if (p.status !== 'measured') return { ...row, status: p.status, reason: p.reason };
    return { ...row, ...measuredStatus(steps, cap, run.status) };
  });
}

/** A measured point's status: `invalid` when no rate passed and the lowest tried was not a valid measurement. */
function measuredStatus(
  steps: readonly StepAnalysis[],
  capacityQps: number | null,
  runStatus: CapacityRun['status'],
): Pick<CapacityRow, 'status' | 'reason'> {
  if (capacityQps !== null) return { status: 'measured', reason: null };
  const lowest = steps.reduce<StepAnalysis | null>((a, b) => (a === null || b.totalQps < a.totalQps ? b : a), null);
  // Runs recorded before points were marked interrupted: a point with no step was stopped by the signal.
  if (lowest === null)
    return runStatus === 'interrupted'
      ? { status: 'interrupted', reason: 'the run was interrupted before its first step' }
      : { status: 'invalid', reason: 'no step was measured' };
  if (lowest.verdict === 'fail') return { status: 'measured', reason: null };
  const why = steps.every((s) => s.verdict === 'invalid')
    ? `no valid step in ${steps.length}: ${lowest.reason}`
    : `no rate passed, and the lowest tried (${lowest.totalQps.toFixed(0)} req/s) was invalid: ${lowest.reason}`;
  return { status: 'invalid', reason: why };
}

/** The capacity a row claims, in words: `unit` follows each rate (the report's table names it in its header instead). */
export function capacityText(r: CapacityRow, unit = ' req/s'): string {
  const q = (qps: number) => `${qps.toFixed(0)}${unit}`;
  if (r.capacityQps === null) {
    if (r.status !== 'measured') return `${r.status}: ${r.reason ?? ''}`;
    // Measured without a capacity: the lowest rate tried failed, so it is the row's failedAtQps.
    return `none: the lowest rate tried, ${q(r.failedAtQps as number)}, failed`;
  }
  if (r.status !== 'measured' && r.status !== 'interrupted') return `${r.status}: ${r.reason ?? ''}`;
  if (r.above === 'failed') return `${q(r.capacityQps)} (fails at ${(r.failedAtQps as number).toFixed(0)})`;
  if (r.above === 'invalid') return `≥ ${q(r.capacityQps)} (the rates tried above it were invalid)`;
  if (r.status === 'interrupted') return `≥ ${q(r.capacityQps)} (interrupted before a rate failed)`;
  return `≥ ${q(r.capacityQps)} (no rate failed within --max-steps ${r.steps.length})`;
}

/** The console's capacity table: a header, then a line per mode and client count (a reason quoting a workload's stderr shown escaped). */
export function capacitySummary(rows: readonly CapacityRow[]): string {
  const header = rows.length > 0 ? `${'mode'.padEnd(10)} clients  capacity (total req/s); p99 at it\n` : '';
  return (
    header +
    rows
      .map((r) => {
        const at = r.at ? `; p99 ${r.at.p99Ms.toFixed(2)} ms over ${r.at.requests} requests` : '';
        return `${r.mode.padEnd(10)} ${String(r.clients).padStart(3)} clients  ${termText(capacityText(r))}${at}\n`;
      })
      .join('')
  );
}

/** As bench: 3 when a point measured nothing valid (invalid, or a client failed); 0 otherwise (a skipped mode included). */
export function capacityExitCode(rows: readonly CapacityRow[]): number {
  return rows.some((r) => r.status === 'invalid' || r.status === 'failed') ? ExitCode.inconclusive : ExitCode.ok;
}
