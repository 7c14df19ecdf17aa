/** What `--dry-run` adds for a fleet: its servers and the pre-check (fleet-fit.ts), against this host's GPU and cores. */
import type { ProcessRunner } from '../../core/process.js';
import { smiText } from '../../system/nvidia/fingerprint.js';
import type { ServeMode } from '../record.js';
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
  windows: { windowMs: number; rounds: number } | null = null,
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
    ...(windows === null || measure !== 'bench'
      ? []
      : requestsLines(
          requestsPerServer(fleet, windows.windowMs, windows.rounds),
          windows.windowMs,
          windows.rounds,
          windowSFor(fleet, windows.rounds),
        )),
    '',
  ].join('\n');
}
