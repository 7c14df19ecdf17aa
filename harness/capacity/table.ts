/** The capacity table: one row per mode and client count, from the recorded steps. */
import type { CapacityRun } from './record.js';
import { analyzeStep, capacityOf, type StepAnalysis } from './search.js';

export interface CapacityRow {
  mode: string;
  clients: number;
  status: string;
  reason: string | null;
  /** Highest total rate that passed, req/s; null when none did. */
  capacityQps: number | null;
  /** The lowest rate above it that did not pass: the capacity lies in [capacityQps, failedAtQps). */
  failedAtQps: number | null;
  at: StepAnalysis | null;
  steps: StepAnalysis[];
}

export function capacityTable(run: CapacityRun): CapacityRow[] {
  return run.points.map((p) => {
    const steps = p.steps.map((s) => analyzeStep(s, run.settings.sloP99Ms));
    const found = capacityOf(steps);
    return {
      mode: p.mode,
      clients: p.clients,
      status: p.status,
      reason: p.status === 'measured' ? null : p.reason,
      ...found,
      steps,
    };
  });
}
