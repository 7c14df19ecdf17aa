/** The bench defaults, defined once: options fill them in and the help text shows them. */
import { MODE_NAMES } from './run/schema.js';

export const DEFAULTS = {
  modes: MODE_NAMES,
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
  releaseLeadMs: 30,
  minOverlap: 0.9,
  sampleIntervalMs: 100,
  readyTimeoutS: 180,
  trialTimeoutS: 60,
  exitTimeoutS: 10,
  python: 'python3',
} as const;
