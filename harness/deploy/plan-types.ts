/**
 * What `gpushare plan` reasons about: the request, the GPU, the five ways to share it, and the shape of
 * its answer (each option's assessment and the recommendation). Types and the constants the arithmetic
 * and the text both name; no logic.
 */

import type { Measured } from '../bench/analysis/which-mode.js';
import type { MigGpu } from './mig-profiles.js';
import type { Geometry } from './mig-solver.js';
import type { SloReach } from './slo-reach.js';

/** Memory each CUDA context and its libraries take besides the model, GiB: assumed where no run measured it (printed with every plan). */
export const CONTEXT_OVERHEAD_GIB = 0.5;
/** Memory a fit leaves free by default, % of the GPU's (allocator fragmentation, a spike, the driver's own). */
export const DEFAULT_HEADROOM_PCT = 5;

export interface PlanRequest {
  models: number;
  /** Memory each model needs, GiB. */
  memGiB: number;
  /** Share of the GPU's SMs each model needs when busy, %. */
  smPct: number;
  /** p99 latency target, ms; null: none. */
  sloP99Ms: number | null;
  /** Memory a fit must leave free, % of the GPU's; default DEFAULT_HEADROOM_PCT. */
  headroomPct?: number;
}

export interface PlanGpu {
  name: string;
  memoryGiB: number;
  mig: MigGpu | null;
  /** SMs of the GPU (green contexts split them); null or absent where not known. */
  smCount?: number | null;
}

/** What each option is assessed from: the request, the GPU, and the bench run's costs where one is given. */
export interface SharingFacts {
  request: PlanRequest;
  gpu: PlanGpu;
  measured: Measured | null;
}

/** The five ways to put many models on one GPU that the plan weighs. */
export type ShareMode = 'streams' | 'green' | 'timeslice' | 'mps' | 'mig';
/** Each option's name in the plan's text. */
export const MODE_TEXT: Record<ShareMode, string> = {
  streams: 'in-process streams',
  green: 'green contexts',
  timeslice: 'time-slicing',
  mps: 'MPS',
  mig: 'MIG',
};
/** Where no measurement decides: the order of isolation (separate processes first; MIG is taken first whenever it fits). */
export const ISOLATION_ORDER: readonly ShareMode[] = ['mig', 'mps', 'timeslice', 'green', 'streams'];

export interface ModeAssessment {
  mode: ShareMode;
  fits: boolean;
  /** The most models this option puts on one such GPU (its binding limit); 0 where none. */
  mostModels: number;
  /** Why it fits or not: the arithmetic. */
  reasons: string[];
  /** What this mode costs or risks, from measurements where there are any. */
  breaks: string[];
  /** MIG: the geometry that would be made. */
  geometry: Geometry | null;
  missesSlo: boolean;
  /** The latency target against the measured p99 (null: no target, or nothing measured); MIG has none. */
  slo?: SloReach | null;
}

export interface PlanAdvice {
  request: PlanRequest;
  gpu: PlanGpu;
  recommendation: ShareMode | null;
  why: string;
  /** The next option that fits, and why it comes second; null where no other fits. */
  runnerUp: { mode: ShareMode; why: string } | null;
  assessments: ModeAssessment[];
  assumptions: string[];
  /**
   * Per-client MPS limits: those the device plugin's MPS gives one of `models` replicas, so that its
   * config and the host scripts agree (the plugin splits SMs and memory evenly by replicas).
   */
  mpsThreadPct: number;
  mpsMemLimit: string;
}

/** A quantity of memory as the plan writes it: "1.5 GiB". */
export const gib = (x: number) => `${Number(x.toFixed(2))} GiB`;
