/** A line of the claims ledger, the documents the claims come from, and how a claim finds its probe's outcome. */
import type { ProbeOutcome } from './record.js';

export type ClaimVerdict = 'holds' | 'does not hold' | 'partly holds' | 'not measured';

/** One line of the ledger. */
export interface Claim {
  id: string;
  claim: string;
  source: string;
  /** What was measured, in words with units; or why nothing was. */
  measured: string;
  verdict: ClaimVerdict;
  /** How the verdict follows from the measurement. */
  rule: string;
}

/** Public documents the claims are checked against, by title and address. */
export const DOC = {
  mps: 'NVIDIA, "Multi-Process Service" (https://docs.nvidia.com/deploy/mps/index.html)',
  cuda: 'NVIDIA, "CUDA C++ Programming Guide" (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html)',
  plugin:
    'NVIDIA, "k8s-device-plugin README: Shared Access to GPUs" (https://github.com/NVIDIA/k8s-device-plugin#shared-access-to-gpus)',
  torch:
    'PyTorch, "torch.cuda.green_contexts.GreenContext" (https://docs.pytorch.org/docs/stable/generated/torch.cuda.green_contexts.GreenContext.html)',
};

/**
 * Where each claim comes from, by title and address. The project's seed articles have no public
 * address: they are named by title, beside the public document that states the same behaviour.
 */
export const SEED = {
  s000: `the article "CUDA contexts, streams, and MPS"; ${DOC.cuda}`,
  s001: `the article "CUDA Multi-Process Service (MPS)"; ${DOC.mps}`,
  s002: `the article "What is a CUDA Stream?"; ${DOC.cuda}`,
  s003: `the lab "GPU Sharing: Streams, MPS, MIG, and the Real Cost of Contention"; ${DOC.mps}`,
  s004: `the article "Multi-Process Service (MPS)" (TL;DR); ${DOC.mps}`,
  mpsDocs: DOC.mps,
  plugin: DOC.plugin,
  cudaGuide: `${DOC.cuda}, stream priorities`,
  torch: DOC.torch,
  cudaErrors: `${DOC.cuda}, error checking (sticky errors: the context is unusable until the process ends)`,
};

export type Find = <P extends ProbeOutcome['probe']>(
  probe: P,
  where?: (o: Extract<ProbeOutcome, { probe: P }>) => boolean,
) => Extract<ProbeOutcome, { probe: P }> | undefined;

/** What a claim says where its probe did not measure: not run, skipped or failed, with why; '' where it measured. */
export function unmeasured(o: ProbeOutcome | undefined, what: string): string {
  return o === undefined ? `${what} was not run` : o.status !== 'measured' ? `${what} ${o.status}: ${o.reason}` : '';
}
