/**
 * "Can these models share one GPU, and how?" Fit is arithmetic on memory, client limits and MIG
 * shapes; cost comes from the run's measured ratios when a run is given. Nothing is extrapolated
 * beyond what was measured: the plan quotes the ratios at the client count they were measured at.
 * The facts in (request, GPU, measured costs), each option assessed (assessments.ts, over the
 * arithmetic of verdicts.ts), one recommendation (recommend.ts); the text is advice-text.ts's.
 */

import type { Measured } from '../bench/analysis/which-mode.js';
import {
  greenAssessment,
  migAssessment,
  mpsAssessment,
  streamsAssessment,
  timesliceAssessment,
} from './assessments.js';
import { costAssumption } from './cost-text.js';
import { pluginMpsLimits } from './k8s.js';
import {
  CONTEXT_OVERHEAD_GIB,
  DEFAULT_HEADROOM_PCT,
  gib,
  type PlanAdvice,
  type PlanGpu,
  type PlanRequest,
} from './plan-types.js';
import { recommend } from './recommend.js';
import { contextOverhead } from './verdicts.js';

export function advise(request: PlanRequest, gpu: PlanGpu, measured: Measured | null): PlanAdvice {
  const facts = { request, gpu, measured };
  const assessments = [
    streamsAssessment(facts),
    greenAssessment(facts),
    timesliceAssessment(facts),
    mpsAssessment(facts),
    migAssessment(facts),
  ];
  const { recommendation, why, runnerUp } = recommend(assessments, measured, request, gpu);
  const over = contextOverhead(measured, 'mps');
  const limits = pluginMpsLimits(Math.max(1, request.models), gpu.memoryGiB * 1024);
  return {
    request,
    gpu,
    recommendation,
    why,
    runnerUp,
    assessments,
    assumptions: [
      over.measured
        ? `${gib(over.gib)} per CUDA context besides the model: measured by the run, nvidia-smi's rise per process less what the workload's own allocator held`
        : `${gib(CONTEXT_OVERHEAD_GIB)} per CUDA context besides the model, for the context and its libraries (assumed: the run reported no reservation to separate it from its workload's memory)`,
      `each fit keeps ${request.headroomPct ?? DEFAULT_HEADROOM_PCT}% of the GPU's memory free (--headroom-pct)`,
      costAssumption(measured, request.models),
    ],
    mpsThreadPct: Math.max(1, limits.threadPct),
    mpsMemLimit: `${limits.memLimitMiB}M`,
  };
}
