/**
 * Before a run: this machine's fingerprint, what blocks a run on it, and whether another tenant is
 * busy on the GPU. Shared by every product.
 */
import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { resultsDir, WORKLOADS_DIR } from '../core/paths.js';
import { newRunId } from '../record/record-file.js';
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

/** What a new run of a product starts from (see newRun). */
export interface NewRun {
  fingerprint: Fingerprint;
  /** refuseBusy's evidence: what made the GPU busy, where --allow-busy let the run go on. */
  busy: string[];
  createdAt: string;
  id: string;
  dir: string;
}

/**
 * The start every product's new run shares: this machine's fingerprint, refused where the GPU is blocked
 * (`verb`: what the product does, for the message) or busy, then the run's id and its directory (--out,
 * else under the default results directory).
 */
export async function newRun(
  deps: AppDeps,
  options: { python: string; gpuIndex: number; allowBusy: boolean; out: string | null },
  kind: Parameters<typeof newRunId>[3],
  verb: string,
): Promise<NewRun> {
  const fingerprint = await machineFingerprint(deps, options.python);
  refuseBlocked(fingerprint, [options.gpuIndex], verb);
  const busy = refuseBusy(fingerprint, options.gpuIndex, options.allowBusy);
  const createdAt = deps.clock.nowIso();
  const id = newRunId(createdAt, fingerprint, options.gpuIndex, kind);
  return { fingerprint, busy, createdAt, id, dir: options.out ?? path.join(resultsDir(deps.cwd), id) };
}
