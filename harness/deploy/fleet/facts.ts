/**
 * A fleet run as plan's facts: the GPU (its memory from the run's device record), the mode chosen by the
 * rule of verdicts.ts, the servers to start per GPU with each one's memory and MPS settings, and why. One
 * adapter per source: a bench fleet run (`bench --serve --fleet`: which modes kept every server within
 * the SLO) and the largest fleets `capacity --serve --fleet` found (fleetFromCapacity).
 */
import { analyzeFleet, type FleetAnalysis } from '../../serve/fleet/fleet-analysis.js';
import type { FleetServerRecord } from '../../serve/fleet/fleet-record.js';
import type { ServeMode, ServeRun } from '../../serve/record.js';
import { isServeMode } from '../../serve/record.js';
import { runGpu } from '../gpu-model.js';
import {
  checkDeployable,
  chooseCapacityMode,
  chooseMeasuredMode,
  type LargestFleet,
  type MeasuredMode,
  type ModeChoice,
  serverMemory,
  serverThreadPct,
} from './verdicts.js';

/** One server to start, with its settings. */
export interface PlannedServer {
  label: string;
  kind: string;
  model: string;
  /** Its command line as recorded, placeholders unfilled; null where the run predates it. */
  command: string | null;
  memFraction: number;
  memGiB: number;
  /** CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, MiB, under an MPS mode; null under time-slicing. */
  memLimitMiB: number | null;
  /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under mps-threads; else null. */
  threadPct: number | null;
}

/** Why each mode was or was not chosen, one line each. */
export interface ModeLine {
  mode: string;
  line: string;
}

export interface FleetFacts {
  kind: 'fleet';
  run: ServeRun;
  source: 'bench' | 'capacity';
  gpu: { name: string; memoryMiB: number };
  sloTtftP99Ms: number;
  /** The mode chosen; null: none advised (no mode kept every server within the SLO). */
  choice: ModeChoice | null;
  modes: ModeLine[];
  /** The servers per GPU under the chosen mode (the fleet's own where none is chosen), with their settings. */
  servers: PlannedServer[];
}

/** The GPU the run measured, as plan computes with it (gpu-model.ts's runGpu refuses one of no memory). */
function fleetGpu(run: ServeRun): FleetFacts['gpu'] {
  const gpu = runGpu(run, run.gpuIndex);
  return { name: gpu.name, memoryMiB: Math.round(gpu.memoryGiB * 1024) };
}

/** Each server's settings under `mode` (null: the fleet as measured, no MPS limits). */
function planned(servers: readonly FleetServerRecord[], mode: ServeMode | null, memoryMiB: number): PlannedServer[] {
  return servers.map((s) => {
    const memory = serverMemory(s.memFraction, memoryMiB);
    return {
      label: s.label,
      kind: s.kind,
      model: s.model,
      command: s.command ?? null,
      memFraction: s.memFraction,
      memGiB: memory.memGiB,
      memLimitMiB: mode === null || mode === 'timeslice' ? null : memory.limitMiB,
      threadPct: mode === null ? null : serverThreadPct(mode, s.threadPct),
    };
  });
}

/** The servers of a mode that did not keep within the SLO, by verdict: "large-1 missed, small-3 unclear". */
function notWithin(m: FleetAnalysis['modes'][number]): string {
  const out = m.servers.filter((s) => s.verdict !== 'within');
  const shown = out.slice(0, 8).map((s) => `${s.label} ${s.verdict}`);
  return `${shown.join(', ')}${out.length > shown.length ? ` and ${out.length - shown.length} more` : ''}`;
}

/** A bench fleet run: the modes that kept every server within the SLO, the rule over them, the fleet's servers. */
export function fleetFromBench(run: ServeRun): FleetFacts {
  const analysis = analyzeFleet(run) as FleetAnalysis;
  const measured: MeasuredMode[] = analysis.modes.flatMap((m) =>
    isServeMode(m.mode) && m.verdict !== 'not measured'
      ? [
          {
            mode: m.mode,
            everyServerWithin: m.verdict === 'every server within',
            good: m.servers.reduce((n, s) => n + s.good, 0),
            requests: m.servers.reduce((n, s) => n + s.requests, 0),
            goodPerS: m.goodPerS,
          },
        ]
      : [],
  );
  const choice = chooseMeasuredMode(measured);
  const servers = (run.fleet as NonNullable<ServeRun['fleet']>).servers;
  checkDeployable(choice?.mode ?? null, servers);
  const gpu = fleetGpu(run);
  const modes = analysis.modes
    .map((m) => ({
      mode: m.mode,
      line:
        m.verdict === 'not measured'
          ? `not measured (${m.status}${m.reason ? `: ${m.reason}` : ''})`
          : m.verdict === 'every server within'
            ? `every server within the SLO; goodput ${m.goodPerS.toFixed(2)} req/s`
            : `${m.verdict}: ${notWithin(m)}; goodput ${m.goodPerS.toFixed(2)} req/s`,
    }))
    .map((l) => (isServeMode(l.mode) ? l : { ...l, line: `${l.line} (beside the modes: plan deploys processes)` }));
  return {
    kind: 'fleet',
    run,
    source: 'bench',
    gpu,
    sloTtftP99Ms: run.settings.sloTtftP99Ms,
    choice,
    modes,
    servers: planned(servers, choice?.mode ?? null, gpu.memoryMiB),
  };
}

/**
 * The largest fleets `capacity --serve --fleet` found (one per mode), as plan's facts: the mode by
 * chooseCapacityMode, and that mode's fleet expanded per kind, each kind's settings those its first server
 * in the run's fleet had (its command, model, memory share), each server's thread cap the one it ran with
 * where the run recorded it (a sized fleet's share moves it), else its kind's. plan-sources.ts gives it
 * deploy/fleet/from-capacity.ts's answers.
 */
export function fleetFromCapacity(run: ServeRun, fleets: readonly LargestFleet[]): FleetFacts {
  const record = run.fleet as NonNullable<ServeRun['fleet']>;
  const choice = chooseCapacityMode(fleets);
  const chosen = choice === null ? null : (fleets.find((f) => f.mode === choice.mode) as LargestFleet);
  const kinds = [...new Set(record.servers.map((s) => s.kind))];
  const firstOf = (kind: string) => record.servers.find((s) => s.kind === kind) as FleetServerRecord;
  const expanded =
    chosen === null
      ? []
      : chosen.measured !== undefined
        ? chosen.measured.map((s) => ({ ...firstOf(s.kind), label: s.label, threadPct: s.threadPct }))
        : kinds.flatMap((kind) => {
            const n = chosen.perKindCounts[kind] ?? 0;
            return Array.from({ length: n }, (_, k) => ({
              ...firstOf(kind),
              label: n > 1 ? `${kind}-${k + 1}` : kind,
            }));
          });
  checkDeployable(choice?.mode ?? null, expanded);
  const gpu = fleetGpu(run);
  return {
    kind: 'fleet',
    run,
    source: 'capacity',
    gpu,
    sloTtftP99Ms: run.settings.sloTtftP99Ms,
    choice,
    modes: fleets.map((f) => ({
      mode: f.mode,
      line:
        f.servers > 0
          ? `at most ${f.servers} servers kept every one within the SLO (interval ${f.interval[0]}–${f.interval[1]})`
          : (f.note ?? 'no fleet measured kept every server within the SLO'),
    })),
    servers: planned(expanded, choice?.mode ?? null, gpu.memoryMiB),
  };
}
