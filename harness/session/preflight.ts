/**
 * Before a run: this machine's fingerprint, what blocks a run on it, and whether another tenant is
 * busy on the GPU. Shared by every product.
 */
import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import { startFingerprint } from '../system/nvidia/fingerprint.js';
import type { Fingerprint } from '../system/nvidia/schema.js';
import { busyEvidence } from './busy.js';
import { benchBlockers } from './readiness.js';

/** This machine's fingerprint, with `python` probed for PyTorch. */
export function machineFingerprint(deps: AppDeps, python: string): Promise<Fingerprint> {
  return startMachineFingerprint(deps, python).complete;
}

/** This machine's fingerprint in two steps (see startFingerprint): without the Python probe, then with it. */
export function startMachineFingerprint(
  deps: AppDeps,
  python: string,
): { system: Promise<Fingerprint>; complete: Promise<Fingerprint> } {
  return startFingerprint(deps.runner, {
    python,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
}

/**
 * Refuses, with the first blocker, to `verb` any of `gpuIndices` here ("cannot probe here: …").
 * `needsPython` false: Python and PyTorch blockers do not count (a run of custom commands only).
 */
export function refuseBlocked(
  fingerprint: Fingerprint,
  gpuIndices: readonly number[],
  verb: string,
  needsPython = true,
): void {
  const blockers = gpuIndices
    .flatMap((i) => benchBlockers(fingerprint, i))
    .filter((b) => needsPython || (!b.startsWith('Python') && !b.includes('PyTorch')));
  if (blockers.length > 0) throw new UserError(`cannot ${verb} here: ${blockers[0]} (run gpushare doctor for details)`);
}

/**
 * The evidence that GPU `gpuIndex` is busy: refused unless `allowBusy`, and returned to be recorded
 * when allowed. `allowed` says what --allow-busy does for this kind of run.
 */
export function refuseBusy(fingerprint: Fingerprint, gpuIndex: number, allowBusy: boolean, allowed = ''): string[] {
  const busy = busyEvidence(fingerprint, gpuIndex);
  if (busy.length > 0 && !allowBusy)
    throw new UserError(
      `GPU ${gpuIndex} is busy (${busy.join('; ')}): wait until it is idle, or pass --allow-busy${allowed ? ` (${allowed})` : ''}`,
    );
  return busy;
}
