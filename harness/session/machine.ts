/** Whether two runs were measured on the same kind of machine: a pure reading of their fingerprints. */
import { UserError } from '../core/errors.js';
import { type Fingerprint, gpuAt } from '../system/nvidia/schema.js';

/** A machine as a run saw it: its fingerprint and the GPU it ran on. */
export interface Machine {
  fingerprint: Fingerprint;
  gpuIndex: number;
}

/** What differs between two machines that changes what a measurement means, one phrase each. */
export function fingerprintMismatches(now: Machine, before: Machine): string[] {
  const gpu = (m: Machine) => gpuAt(m.fingerprint, m.gpuIndex);
  const fields: Array<[string, (m: Machine) => unknown]> = [
    ['GPU model', (m) => gpu(m)?.name],
    ['driver', (m) => m.fingerprint.driverVersion],
    ['MIG mode', (m) => gpu(m)?.migModeCurrent],
    ['compute mode', (m) => gpu(m)?.computeMode],
  ];
  return fields.flatMap(([name, get]) =>
    get(now) === get(before) ? [] : [`${name}: ${String(get(before))} before vs ${String(get(now))} now`],
  );
}

/** Refuses to resume `dir`, recorded on `before`, on a machine that differs from it. */
export function refuseOtherMachine(dir: string, now: Fingerprint, before: Fingerprint, gpuIndex: number): void {
  const mismatches = fingerprintMismatches({ fingerprint: now, gpuIndex }, { fingerprint: before, gpuIndex });
  if (mismatches.length > 0)
    throw new UserError(`cannot resume ${dir} on a different machine (${mismatches.join('; ')})`);
}
