/** The shape of a run's analysis: what `analyze` computes and every output reads. */

import type { MetricStats } from '../../stats/statistics.js';
import type { LoopOverhead } from '../../workload/protocol.js';
import type { Bounds, Thresholds } from '../gate/thresholds.js';
import type { Comparison, Stop } from '../record/schema.js';
import type { Metric } from './metrics.js';
import type { Round } from './rounds.js';
import type { Validity } from './validity.js';

/**
 * pass: the whole CI lies within the bounds (inclusive); fail: the whole CI lies outside them;
 * inconclusive: the CI straddles a bound, or too few rounds for a CI; invalid: a validity check
 * failed; none: no threshold applies.
 */
export type Verdict = 'pass' | 'fail' | 'inconclusive' | 'invalid' | 'none';

/** Half-width above which any ratio of the full table gets a diagnosis in the report. */
export const REPORT_HALF_WIDTH = 0.05;

/** One metric, analysed. */
export interface MetricAnalysis {
  metric: Metric;
  stats: MetricStats;
  threshold: { pattern: string; bounds: Bounds; text: string } | null;
  verdict: Verdict;
  /** Why the verdict is not pass (validity reasons, a CI that straddles a bound…). */
  reasons: string[];
  warnings: string[];
  /** The CI half-width the round policy aims this ratio at (graded, headline), or null. */
  target: number | null;
  /** Why its CI is wider than its target (or than REPORT_HALF_WIDTH): measured causes, not guesses. */
  diagnosis: string[];
}

/** One comparison, analysed. */
export interface ComparisonAnalysis {
  comparison: Comparison;
  rounds: Round[];
  /** Rounds in which every arm measured: the ones the ratios use. */
  completeRounds: number;
  validity: Validity;
  stop: Stop | null;
  metrics: MetricAnalysis[];
  /** GPU memory each client held (context and workload), MiB; null where the samples cannot say. */
  memoryPerClientMiB: number | null;
  /** Memory by cause (nvidia-smi's rise, the workload's own reservation, the overhead); null where the samples cannot say. */
  memory: MemoryAccount | null;
  /** Host time per request (the GIL's share with tenants on threads); null parts where not reported. */
  stepHost: StepHostTime;
  /** The first failed trial's reason: why a comparison with no complete round measured nothing. */
  failure: string | null;
  /** What the protocol's own loop cost each process checked, beyond a bare loop of its step. */
  loopCheck: LoopCheck;
}

/** The checks of the protocol's loop in a comparison: each process, in the first arm where it ran alone. */
export interface LoopCheck {
  checks: Array<{ client: number; arm: string; overhead: LoopOverhead }>;
  /** The largest overhead, % of a request; null where no process was checked (a run before 2026-11-27, a resumed round 0). */
  worstPct: number | null;
  /** A check whose interval lies over LOOP_OVERHEAD_LIMIT_PCT (see overLimit): the harness's loop may bias this comparison's ratios. */
  flagged: boolean;
}

/** A comparison's GPU memory by cause, MiB. */
export interface MemoryAccount {
  /** Workload processes: one per client, or one for in-process tenancy. */
  processes: number;
  tenantsPerProcess: number;
  /** nvidia-smi's memory.used rise while the trials ran, per process and per tenant (client), MiB. */
  risePerProcessMiB: number;
  risePerTenantMiB: number;
  /** What each process's allocator held once ready (PyTorch: memory_reserved), MiB; null where not reported. */
  reservedPerProcessMiB: number | null;
  /** The part of it in CUDA-graph pools, MiB; null where not reported. */
  graphPoolPerProcessMiB: number | null;
  /** Rise − reservation: the context and runtime overhead of one process, MiB; null where the reservation is unknown. */
  overheadPerProcessMiB: number | null;
  /** The comparison whose processes these were, switched to this workload (the rise then includes what earlier workloads left outside the allocator); null: started for it. */
  switchedFrom: string | null;
}

/** Host time of one request's step() call, median of the windows' means, µs: alone (solo-c0) and contended. */
export interface StepHostTime {
  soloUs: number | null;
  contendedUs: number | null;
}

export interface Analysis {
  comparisons: ComparisonAnalysis[];
  /** Every metric of the run, cross-mode ones included, in plan order. */
  metrics: MetricAnalysis[];
  /** Headline metrics and every metric a threshold grades: what verdict tables and the gate show. */
  verdicts: MetricAnalysis[];
  thresholds: Thresholds;
}
