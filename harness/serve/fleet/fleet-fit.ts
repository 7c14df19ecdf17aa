/**
 * Whether a fleet fits before anything is measured (issue #49's 40-server question), with the figures:
 * the GPU's memory (every server's {mem_fraction} share plus a CUDA context each), the clients an MPS
 * server accepts (MPS modes), and the host's cores (the servers and the load generator's workers). A
 * mode the memory or the MPS limit rules out is skipped with the check's line; too few cores is a
 * warning (a light server needs far less than a core; an engine's busy loop needs one).
 */
import { z } from 'zod';
import { CUDA_CONTEXT_MIB } from '../../system/cuda-context.js';
import { MPS_CLIENT_LIMIT } from '../../system/mps/client-limit.js';
import { isServeMode, type ServeGroup, type ServeMode } from '../record.js';

export const FitCheckSchema = z.object({
  check: z.enum(['memory', 'mps-clients', 'host-cpus']),
  /** The modes it applies to. */
  modes: z.array(z.string()).max(8),
  /** null: not known (the GPU's memory was not read). */
  fits: z.boolean().nullable(),
  /** A failed check that rules its modes out (memory, MPS clients); else a warning. */
  blocks: z.boolean(),
  /** The check in one line, with its figures. */
  text: z.string(),
});
export type FitCheck = z.infer<typeof FitCheckSchema>;

export interface FitInput {
  /** Each server's {mem_fraction}. */
  memFractions: readonly number[];
  modes: readonly ServeMode[];
  /** The GPU's memory, MiB; null where not known. */
  gpuMemoryMiB: number | null;
  /** Cores the host gives this run. */
  cores: number;
  /** The load generator's worker processes. */
  loadWorkers: number;
}

const MPS_MODES: readonly ServeMode[] = ['mps', 'mps-threads'];
const pct = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;

/** What a fleet's servers need of a GPU of `gpuMiB`: their shares and a CUDA context each, MiB, and whether it fits. */
export function memoryNeed(
  memFractions: readonly number[],
  gpuMiB: number,
): { share: number; sharesMiB: number; contextsMiB: number; needMiB: number; fits: boolean } {
  const share = memFractions.reduce((a, b) => a + b, 0);
  const sharesMiB = share * gpuMiB;
  const contextsMiB = memFractions.length * CUDA_CONTEXT_MIB;
  const needMiB = sharesMiB + contextsMiB;
  // Within a thousandth of a MiB: Σ mem_fraction × memory is a float sum, and exactly all of it fits.
  return { share, sharesMiB, contextsMiB, needMiB, fits: needMiB <= gpuMiB + 1e-3 };
}

function memoryCheck(input: FitInput): FitCheck {
  const n = input.memFractions.length;
  const share = input.memFractions.reduce((a, b) => a + b, 0);
  const contextsMiB = n * CUDA_CONTEXT_MIB;
  const base = { check: 'memory' as const, modes: [...input.modes], blocks: true };
  const gpu = input.gpuMemoryMiB;
  if (gpu === null)
    return {
      ...base,
      fits: null,
      text: `memory: Σ mem_fraction ${share.toFixed(3)} and ${n} CUDA contexts × ${CUDA_CONTEXT_MIB} MiB = ${contextsMiB} MiB, against a GPU memory not known: not checked`,
    };
  const { sharesMiB, needMiB, fits } = memoryNeed(input.memFractions, gpu);
  return {
    ...base,
    fits,
    text: `memory: Σ mem_fraction ${share.toFixed(3)} × ${gpu} MiB = ${sharesMiB.toFixed(0)} MiB, plus ${n} CUDA contexts × ${CUDA_CONTEXT_MIB} MiB = ${contextsMiB} MiB: ${needMiB.toFixed(0)} of ${gpu} MiB (${pct(needMiB, gpu)}), ${fits ? 'fits' : 'over: lower mem_fraction or count'}`,
  };
}

function mpsCheck(input: FitInput): FitCheck | null {
  const modes = input.modes.filter((m) => MPS_MODES.includes(m));
  if (modes.length === 0) return null;
  const n = input.memFractions.length;
  const fits = n <= MPS_CLIENT_LIMIT;
  return {
    check: 'mps-clients',
    modes,
    fits,
    blocks: true,
    text: `MPS clients: ${n} servers ${fits ? 'within' : 'over'} the ${MPS_CLIENT_LIMIT} clients an MPS server accepts per GPU`,
  };
}

function cpuCheck(input: FitInput): FitCheck {
  const n = input.memFractions.length;
  const processes = n + input.loadWorkers;
  const fits = processes <= input.cores;
  return {
    check: 'host-cpus',
    modes: [...input.modes],
    fits,
    blocks: false,
    text: `host CPUs: ${n} servers + ${input.loadWorkers} load generator workers = ${processes} processes on ${input.cores} cores: ${fits ? 'a core each' : `${(input.cores / processes).toFixed(2)} of a core each: a server that needs a core of its own (an engine's busy loop) waits for one, and its latency shows it`}`,
  };
}

/** The checks, in order: memory, MPS clients (where an MPS mode is asked), host CPUs. */
export function fleetFit(input: FitInput): FitCheck[] {
  return [memoryCheck(input), mpsCheck(input), cpuCheck(input)].filter((c): c is FitCheck => c !== null);
}

/** Why `mode` cannot run: the failed checks that block it, in one line; null where none does (dedicated: none names it). */
export function fitSkipReason(checks: readonly FitCheck[], mode: ServeGroup['mode']): string | null {
  const failed = checks.filter((c) => c.blocks && c.fits === false && c.modes.includes(mode));
  return failed.length === 0 ? null : `the fleet does not fit: ${failed.map((c) => c.text).join('; ')}`;
}

/** The warnings of failed checks that do not block (too few cores). */
export function fitWarnings(checks: readonly FitCheck[]): string[] {
  return checks.filter((c) => !c.blocks && c.fits === false).map((c) => c.text);
}

/**
 * The pre-check of a fleet run, before anything starts: the checks kept in its record, each pending
 * mode they rule out skipped with the figures, and the warnings of those that do not.
 */
export function preCheckFleet(
  run: {
    groups: ServeGroup[];
    host: { cpus: number };
    settings: { loadWorkers?: number };
    warnings: string[];
    fleet?: { fit?: FitCheck[] };
  },
  memFractions: readonly number[],
  gpuMemoryMiB: number | null,
): void {
  const modes = run.groups.flatMap((g) => (isServeMode(g.mode) ? [g.mode] : []));
  const cores = run.host.cpus;
  const checks = fleetFit({ memFractions, modes, gpuMemoryMiB, cores, loadWorkers: run.settings.loadWorkers ?? 1 });
  if (run.fleet !== undefined) run.fleet.fit = checks;
  for (const line of fitWarnings(checks)) if (!run.warnings.includes(line)) run.warnings.push(line);
  for (const g of run.groups) {
    const why = g.status !== 'pending' ? null : fitSkipReason(checks, g.mode);
    if (why !== null) Object.assign(g, { status: 'skipped', reason: why });
  }
}
