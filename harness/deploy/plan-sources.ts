/**
 * What `gpushare plan` is given, as facts: a server run (its own answer), or a request with the GPU
 * (a model or the one a run measured) and the bench run's measured costs. One adapter per source;
 * every refusal of a bad combination is made here, before anything is printed.
 */

import { analyze } from '../bench/analysis/analyze.js';
import { measuredFromAnalysis } from '../bench/analysis/which-mode.js';
import type { Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { UserError } from '../core/errors.js';
import { openRun } from '../record/evidence.js';
import { analyzeServe, type ServeAnalysis, type ServeAnswer, serveAnswer } from '../serve/analysis.js';
import { loadServeRun, type ServeRun } from '../serve/record.js';
import { isSimulated } from '../system/nvidia/schema.js';
import { type FleetFacts, fleetFromBench, fleetFromCapacity } from './fleet/facts.js';
import { capacityFleets } from './fleet/from-capacity.js';
import { otherGpuWarning, planGpu, runGpu } from './gpu-model.js';
import type { PlanOptions } from './options.js';
import type { PlanRequest, SharingFacts } from './plan-types.js';

/** A server run: how many copies of that server per GPU, in which mode (serve/analysis.ts's serveAnswer). */
export interface ServerFacts {
  kind: 'server';
  run: ServeRun;
  analysis: ServeAnalysis;
  answer: ServeAnswer;
}

/** Models to share a GPU: the request, the GPU, and the bench run's costs where one is given. */
export interface ModelFacts extends SharingFacts {
  kind: 'models';
  run: Run | null;
  /** The run was made on gpushare's simulator. */
  simulated: boolean;
  /** Why the run's costs may not be the planned GPU's (otherGpuWarning), or null. */
  otherGpu: string | null;
}

export type PlanFacts = ServerFacts | ModelFacts | FleetFacts;

/** The server run adapter: its analysis and answer; its plan writes no files. */
function serverFacts(run: ServeRun, options: PlanOptions): ServerFacts {
  if (options.out)
    throw new UserError(
      `--out writes launchers for models measured by gpushare bench; ${options.run} is a server run: drop --out (its answer is the mode and copies to start your server with)`,
    );
  const analysis = analyzeServe(run);
  return { kind: 'server', run, analysis, answer: serveAnswer(run, analysis) };
}

/** The request as the decision takes it, from the options. */
function planRequest(options: PlanOptions): PlanRequest {
  return {
    models: options.models,
    memGiB: options.memGiB,
    smPct: options.smPct,
    sloP99Ms: options.sloP99Ms,
    headroomPct: options.headroomPct,
  };
}

/** The GPU model adapter and the bench run adapter: the GPU planned for, and the run's costs on it. */
function modelFacts(run: Run | null, options: PlanOptions): ModelFacts {
  if (!run && !options.gpu) throw new UserError('plan needs --gpu-model <model> (e.g. A100-80GB) or --run <run-dir>');
  const simulated = run !== null && isSimulated(run.fingerprint);
  if (simulated && options.gpu)
    throw new UserError(
      `cannot plan for a real ${options.gpu} from run ${run.id}: it was made on gpushare's simulator, so its costs say nothing about any GPU; give --run a run measured on a real GPU, or plan from --gpu-model alone`,
    );
  const gpu = options.gpu ? planGpu(options.gpu, options.gpuMemGiB) : runGpu(run as Run, (run as Run).config.gpuIndex);
  return {
    kind: 'models',
    request: planRequest(options),
    gpu,
    run,
    measured: run ? measuredFromAnalysis(run, analyze(run), options.models) : null,
    simulated,
    otherGpu: run && options.gpu ? otherGpuWarning(run, gpu) : null,
  };
}

/** plan's sources as facts: --run names a fleet run, a server run or a bench run; without it, --gpu-model alone. */
export async function planFacts(options: PlanOptions): Promise<PlanFacts> {
  const dir = options.run ? await openRun(options.run) : null;
  const served = dir ? await loadServeRun(dir) : null;
  // A fleet run (bench --serve --fleet): its servers, the mode that kept each within the SLO, their settings.
  // A capacity fleet run (capacity --serve --fleet): the largest fleet each mode kept within the SLO.
  if (served?.fleet?.search !== undefined) return fleetFromCapacity(served, capacityFleets(served));
  if (served?.fleet !== undefined) return fleetFromBench(served);
  if (served !== null) return serverFacts(served, options);
  return modelFacts(dir ? await loadRun(dir) : null, options);
}
