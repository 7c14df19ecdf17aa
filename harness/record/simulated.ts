/** Runs made on gpushare's simulator: how they say so, and the refusal to set one beside a real run. */
import { UserError } from '../core/errors.js';
import { type Fingerprint, isSimulated } from '../system/nvidia/schema.js';

/** What every output of a simulated run says of it, in one line. */
export const SIMULATED_TEXT =
  "SIMULATED: made on gpushare's simulator, not on a GPU; its numbers are the simulator's arithmetic and say nothing about any GPU";

/** The SIMULATED line, newline included, that starts a simulated run's console text; '' for a real run. */
export function simulatedLine(fingerprint: Pick<Fingerprint, 'simulated'>): string {
  return isSimulated(fingerprint) ? `${SIMULATED_TEXT}\n` : '';
}

/** The SIMULATED line that starts a simulated run's markdown report, a blank line after it; none for a real run. */
export function simulatedMarkdown(fingerprint: Pick<Fingerprint, 'simulated'>): string[] {
  return isSimulated(fingerprint) ? [`> **${SIMULATED_TEXT}**`, ''] : [];
}

/** The field a simulated run's JSON outputs carry at their top, `simulated: true`; none for a real run. */
export function simulatedJson(fingerprint: Pick<Fingerprint, 'simulated'>): { simulated?: true } {
  return isSimulated(fingerprint) ? { simulated: true } : {};
}

/** A record that names its run and the fingerprint it was made on. */
export interface Fingerprinted {
  id: string;
  fingerprint: Pick<Fingerprint, 'simulated'>;
}

/**
 * Refuses (one line, exit 2) to `purpose` with runs of which some are simulated and some real: a
 * simulated ratio compared with a measured one means nothing, whatever --allow-mismatch says.
 */
export function refuseSimulatedBesideReal(runs: readonly Fingerprinted[], purpose: string): void {
  const simulated = runs.find((r) => isSimulated(r.fingerprint));
  const real = runs.find((r) => !isSimulated(r.fingerprint));
  if (simulated && real)
    throw new UserError(
      `cannot ${purpose}: run ${simulated.id} was made on gpushare's simulator and run ${real.id} on a real GPU, and a simulated run compares only with another simulated one`,
    );
}
