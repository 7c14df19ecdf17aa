/** What `--dry-run` adds for a fleet: its servers and the pre-check (fleet-fit.ts), against this host's GPU and cores. */
import type { ProcessRunner } from '../../core/process.js';
import { smiText } from '../../system/nvidia/fingerprint.js';
import { ceilingS, warmupBoundsS } from '../dry-run.js';
import type { ServeMode } from '../record.js';
import { SEARCH_MAX_STEPS } from './fleet-capacity.js';
import { fleetFit } from './fleet-fit.js';
import { loadFleet } from './fleet-load.js';
import { requestsLines, requestsPerServer, windowSFor } from './fleet-requests.js';

/** GPU `gpuIndex`'s memory, MiB, or null where nvidia-smi does not say. */
async function gpuMemoryMiB(runner: ProcessRunner, gpuIndex: number): Promise<number | null> {
  const got = await smiText(runner, [
    '--query-gpu=memory.total',
    '--format=csv,noheader,nounits',
    '-i',
    String(gpuIndex),
  ]);
  const mib = got.ok ? Number(got.text.trim()) : Number.NaN;
  return Number.isFinite(mib) && mib > 0 ? mib : null;
}

/** What a fleet run's load time depends on: its windows, warm-up rule and the generator's ceiling steps. */
export interface FleetTiming {
  windowMs: number;
  rounds: number;
  warmupMs?: number | undefined;
  warmupMaxMs?: number | undefined;
  ceilingStepMs: number;
}

/**
 * The load a fleet run takes, as its dry run says: bench's arms (each kind's baseline, each mode, the in-process
 * arm) at least, each a warm-up of whole windows and --rounds windows; capacity's steps at most, per mode.
 */
export function fleetLoadLine(
  measure: 'bench' | 'capacity',
  arms: { kinds: number; modes: number; inProcess: boolean },
  t: FleetTiming,
): string {
  const { leastS, mostS } = warmupBoundsS(t.windowMs, t);
  const windowS = t.windowMs / 1000;
  const each = `a warm-up (${leastS}–${mostS} s) and ${t.rounds} window${t.rounds === 1 ? '' : 's'} of ${windowS} s`;
  const ceilingRunS = ceilingS(t.ceilingStepMs);
  const ceiling = `the generator's ceiling (${ceilingRunS} s)`;
  const starts = "plus each server's start-up";
  if (measure === 'capacity') {
    const perModeS = SEARCH_MAX_STEPS * (mostS + t.rounds * windowS);
    const totalS = ceilingRunS + arms.modes * perModeS;
    return `load: at most ${Math.round(totalS)} s: ${ceiling}, then per mode at most ${SEARCH_MAX_STEPS} steps, each ${each}; ${starts}`;
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const count = arms.kinds + arms.modes + (arms.inProcess ? 1 : 0);
  const totalS = ceilingRunS + count * (leastS + t.rounds * windowS);
  const which = [
    plural(arms.kinds, 'baseline'),
    plural(arms.modes, 'mode'),
    ...(arms.inProcess ? ['the in-process arm'] : []),
  ];
  return `load: at least ${Math.round(totalS)} s: ${ceiling}, then ${count} arms (${which.join(', ')}), each ${each}; ${starts}`;
}

/** What becomes of the file's in_process arm: bench measures it after the modes; capacity does not. */
const inProcessLine = (servers: number, measure: 'bench' | 'capacity') =>
  measure === 'bench'
    ? `in-process arm: after the modes, one process of the file's in_process command serving all ${servers} models ({models}), with the same traffic`
    : "in-process arm: not measured (capacity sizes fleets of processes; bench --serve --fleet measures the file's in_process)";

export async function fleetDryRunText(
  file: string,
  modes: readonly ServeMode[],
  host: { runner: ProcessRunner; gpuIndex: number; cores: number; loadWorkers: number },
  measure: 'bench' | 'capacity' = 'bench',
  timing: FleetTiming | null = null,
): Promise<string> {
  const fleet = await loadFleet(file);
  const checks = fleetFit({
    memFractions: fleet.servers.map((s) => s.memFraction),
    modes,
    gpuMemoryMiB: await gpuMemoryMiB(host.runner, host.gpuIndex),
    cores: host.cores,
    loadWorkers: host.loadWorkers,
  });
  const kinds = new Set(fleet.servers.map((s) => s.kind)).size;
  const mark = (fits: boolean | null, blocks: boolean) =>
    fits === null ? 'not checked' : fits ? 'fits' : blocks ? 'rules out' : 'warning';
  return [
    `fleet ${file}: ${fleet.servers.length} servers of ${kinds} kind${kinds === 1 ? '' : 's'}`,
    measure === 'bench'
      ? 'pre-check (a mode a check rules out is skipped, with these figures):'
      : "pre-check of the file's fleet (the search tries sizes up to its top: memory shares, MPS clients, --max-servers):",
    ...checks.map((c) => `  ${mark(c.fits, c.blocks)} (${c.modes.join(', ')}): ${c.text}`),
    ...(fleet.inProcess === null ? [] : [inProcessLine(fleet.servers.length, measure)]),
    // capacity's sizes scale the rates: the file's size alone is known here.
    ...(timing === null || measure !== 'bench'
      ? []
      : requestsLines(
          requestsPerServer(fleet, timing.windowMs, timing.rounds),
          timing.windowMs,
          timing.rounds,
          windowSFor(fleet, timing.rounds),
        )),
    ...(timing === null
      ? []
      : [
          fleetLoadLine(
            measure,
            { kinds, modes: modes.length, inProcess: measure === 'bench' && fleet.inProcess !== null },
            timing,
          ),
        ]),
    '',
  ].join('\n');
}
