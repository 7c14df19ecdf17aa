/**
 * capacity --serve --fleet's answers as plan reads them: per mode, the largest fleet at the SLO, its
 * interval and its count per kind (the counts of a step at that size). A mode whose answer is unverified
 * (a step at that size sent over the generator's ceiling, or had none to check by) or that kept no fleet
 * is given as 0 servers, so plan never names a capacity it did not measure.
 */

import { analyzeFleetCapacity } from '../../serve/fleet/fleet-capacity-analysis.js';
import type { ServeMode, ServeRun } from '../../serve/record.js';
import { unverifiedText } from '../../serve/verdicts.js';
import type { LargestFleet } from './verdicts.js';

export function capacityFleets(run: ServeRun): LargestFleet[] {
  const analysis = analyzeFleetCapacity(run);
  if (analysis === null) return [];
  return analysis.modes.map((m) => {
    const { servers, interval, unverified } = m.answer;
    const held = servers !== null && interval !== null && !unverified;
    const step = held ? m.steps.find((s) => s.servers === servers) : undefined;
    return {
      mode: m.mode as ServeMode,
      servers: held ? servers : 0,
      interval: held ? interval : [0, 0],
      perKindCounts: Object.fromEntries((step?.counts ?? []).map((c) => [c.kind, c.count])),
      ...measuredServers(run, m.mode, servers),
      ...(unverified && servers !== null
        ? {
            note: `its answer, ${servers} servers, is unverified: a step at that size was ${unverifiedText(analysis.ceiling.ratePerS)}`,
          }
        : {}),
    };
  });
}

/** The answer's servers as its steps ran them (each one's mps-threads cap), where every one was recorded. */
function measuredServers(
  run: ServeRun,
  mode: string,
  servers: number | null,
): { measured?: NonNullable<LargestFleet['measured']> } {
  const step = run.fleet?.search?.modes.find((m) => m.mode === mode)?.steps.find((s) => s.servers === servers);
  const fleet = step?.fleet ?? [];
  if (fleet.length === 0 || fleet.some((s) => s.threadPct === undefined)) return {};
  return { measured: fleet.map((s) => ({ label: s.label, kind: s.kind, threadPct: s.threadPct as number })) };
}
