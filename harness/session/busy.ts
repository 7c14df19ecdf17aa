/** Is someone else using the GPU? Evidence read from the fingerprint, before anything is measured. */
import { type Fingerprint, gpuAt } from '../system/nvidia/schema.js';

/** Utilization above this, or this much memory in use, before a run means another tenant is busy. */
export const BUSY_UTIL_PCT = 10;
export const BUSY_MEMORY_MIB = 1024;

export function busyEvidence(fingerprint: Fingerprint, gpuIndex: number): string[] {
  const gpu = gpuAt(fingerprint, gpuIndex);
  const evidence: string[] = [];
  // A process on another GPU of the host is no tenant of this one (nvidia-smi names each process's GPU).
  for (const app of fingerprint.computeApps.filter(
    (a) => a.gpuUuid === null || gpu === undefined || a.gpuUuid === gpu.uuid,
  ))
    evidence.push(`compute process ${app.pid} (${app.name}, ${app.usedMemoryMiB ?? '?'} MiB)`);
  if (gpu?.utilGpuPct !== null && gpu?.utilGpuPct !== undefined && gpu.utilGpuPct > BUSY_UTIL_PCT)
    evidence.push(`utilization ${gpu.utilGpuPct}%`);
  if (gpu?.memoryUsedMiB !== null && gpu?.memoryUsedMiB !== undefined && gpu.memoryUsedMiB > BUSY_MEMORY_MIB)
    evidence.push(`${gpu.memoryUsedMiB} MiB of memory in use`);
  return evidence;
}
