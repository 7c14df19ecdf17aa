/**
 * The GPU a plan is for, as facts: a built-in model, a model whose memory is given, or the GPU a run
 * measured; and the warning when a run's costs were measured on another model (verdicts.ts's sameGpuModel).
 */

import type { Run } from '../bench/record/schema.js';
import { UserError } from '../core/errors.js';
import { commentText } from '../core/escape/embed.js';
import { termText } from '../core/escape/terminal.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { BUILTIN_MIG_GPUS, builtinMigGpu, migGpuFromRun } from './mig-profiles.js';
import type { PlanGpu } from './plan-types.js';
import { sameGpuModel } from './verdicts.js';

/** SMs of the built-in GPU models (NVIDIA's data sheets): green contexts split them. */
const BUILTIN_SM_COUNTS: Record<string, number> = {
  'A100-40GB': 108,
  'A100-80GB': 108,
  'H100-80GB': 132,
  'H200-141GB': 132,
};

export function builtinGpu(name: string): PlanGpu {
  const table = builtinMigGpu(name);
  if (!table)
    throw new UserError(
      `unknown GPU "${name}" for --gpu-model: choose from ${BUILTIN_MIG_GPUS.map((g) => g.name).join(', ')}, or give --run with a measured run`,
    );
  return { name: table.name, memoryGiB: table.memoryGiB, mig: table, smCount: BUILTIN_SM_COUNTS[table.name] ?? null };
}

/** A GPU for plan: a built-in table, or any model whose memory is given (no MIG table: MIG not assessed). */
export function planGpu(name: string, memoryGiB: number | null): PlanGpu {
  if (builtinMigGpu(name) || memoryGiB === null) {
    if (!builtinMigGpu(name)) {
      throw new UserError(
        `unknown GPU "${name}" for --gpu-model: choose from ${BUILTIN_MIG_GPUS.map((g) => g.name).join(', ')}, give its memory with --gpu-mem-gib (time-slicing and MPS need no MIG table), or give --run with a measured run`,
      );
    }
    return builtinGpu(name);
  }
  return { name: commentText(name), memoryGiB, mig: null };
}

/** 16 TiB: more GPU memory than any GPU has, by far; a larger value is no measurement. */
const MAX_GPU_MEMORY_MIB = 16 * 1024 * 1024;

/** The GPU a run measured, as plan computes with it: its memory must be there, its name is free text. */
export function runGpu(run: Pick<Run, 'id' | 'fingerprint'>, gpuIndex: number): PlanGpu {
  const gpu = gpuAt(run.fingerprint, gpuIndex);
  if (!gpu) throw new UserError(`run ${run.id} has no GPU ${gpuIndex} in its fingerprint`);
  // The name is free text from run.json: it reaches comments and the index, never a command.
  const python = run.fingerprint.python;
  const where = `run ${run.id}: fingerprint.gpus[${run.fingerprint.gpus.indexOf(gpu)}]`;
  // What plan computes with must be there: a GPU of null, zero or negative memory fits nothing, silently.
  const memoryMiB = gpu.memoryTotalMiB;
  if (memoryMiB === null || !(memoryMiB > 0) || memoryMiB > MAX_GPU_MEMORY_MIB)
    throw new UserError(
      `${where}.memoryTotalMiB is ${memoryMiB}: plan needs the GPU's memory; give --gpu-model (or --gpu-mem-gib) instead of --run`,
    );
  return {
    name: commentText(gpu.name ?? 'GPU'),
    memoryGiB: memoryMiB / 1024,
    mig: migGpuFromRun(gpu, where),
    smCount: python.status === 'ok' ? python.smCount : null,
  };
}

/**
 * Why costs measured by `run` may not be this GPU's, or null: the run's GPU is not the model planned
 * for (sameGpuModel). A run's GPU of unknown memory is taken as 0 GiB, so never for the same model.
 * Slowdowns and latencies are the measured GPU's; plan then fits them to another.
 */
export function otherGpuWarning(run: Pick<Run, 'id' | 'fingerprint' | 'config'>, gpu: PlanGpu): string | null {
  const measured = gpuAt(run.fingerprint, run.config.gpuIndex);
  if (!measured) return null;
  const memoryGiB = (measured.memoryTotalMiB ?? 0) / 1024;
  if (sameGpuModel(gpu, { name: measured.name ?? '', memoryGiB })) return null;
  return `run ${run.id} was measured on ${termText(measured.name ?? 'another GPU')} (${memoryGiB.toFixed(0)} GiB), and the plan is for the ${termText(gpu.name)} (${gpu.memoryGiB.toFixed(0)} GiB): its measured costs (slowdowns, latencies, memory overhead) are that GPU's and may not hold on this one; measure on it (gpushare bench) to plan from its own`;
}
