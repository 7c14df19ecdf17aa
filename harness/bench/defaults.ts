/** The bench defaults, defined once: options fill them in and the help text shows them. */

import { READY_TIMEOUT_S } from '../workload/client.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { RELEASE_LEAD_MS } from '../workload/release.js';
import { DEFAULT_MIN_OVERLAP } from '../workload/result-validity.js';
export const DEFAULTS = {
  /** Every mode but green, which runs when asked for (--modes green): the default suite stays as it was. */
  modes: ['streams', 'timeslice', 'mps', 'mig'],
  streamsWorkloads: ['spin', 'pipeline'],
  contentionWorkloads: ['spin', 'gemm', 'infer'],
  clients: 2,
  /** The fewest rounds with a 95% order-statistic interval of the median. */
  rounds: 6,
  maxRounds: 40,
  ciTarget: 0.02,
  gradedCiTarget: 0.01,
  timeBudgetS: 45,
  cpuPin: 'off',
  windowMs: 250,
  streamCounts: [2],
  releaseLeadMs: RELEASE_LEAD_MS,
  minOverlap: DEFAULT_MIN_OVERLAP,
  sampleIntervalMs: 100,
  readyTimeoutS: READY_TIMEOUT_S,
  trialTimeoutS: 60,
  exitTimeoutS: 10,
  python: DEFAULT_PYTHON,
} as const;
