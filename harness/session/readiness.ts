/** Whether this machine can bench: a pure reading of its fingerprint, shared by doctor and bench. */
import { type Fingerprint, gpuAt } from '../system/nvidia/schema.js';

/** What stops `bench` on this machine, each as a sentence that says what to do. */
export function benchBlockers(f: Fingerprint, gpuIndex: number): string[] {
  const blockers: string[] = [];
  if (f.nvidiaSmi.error)
    blockers.push(`${f.nvidiaSmi.error}: install the NVIDIA driver, or run on a machine with an NVIDIA GPU`);
  else if (!gpuAt(f, gpuIndex))
    blockers.push(`no GPU with index ${gpuIndex}: nvidia-smi lists ${f.gpus.map((g) => g.index).join(', ') || 'none'}`);
  if (f.python.status === 'error') blockers.push(`Python failed: ${f.python.error}`);
  else if (!f.python.torch) blockers.push(`${f.python.executable} has no PyTorch: install torch with CUDA support`);
  else if (!f.python.cudaAvailable) blockers.push(`PyTorch ${f.python.torch} sees no CUDA GPU`);
  return blockers;
}
