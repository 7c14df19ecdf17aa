import { UserError } from '../core/errors.js';
/**
 * MIG profile tables: names, memory, compute slices and where each profile may start. A measured run
 * supplies its GPU's own table (nvidia-smi mig -lgip/-lgipp); these built-in tables cover GPUs we
 * plan for without one.
 */
import type { Gpu } from '../system/nvidia/schema.js';

/** One GPU instance profile: `starts` are the memory-slot indices it may begin at, `slots` how many it spans. */
export interface MigProfileSpec {
  name: string;
  /** Compute slices ("Ng" in the name); a GPU has 7. */
  computeSlices: number;
  memoryGiB: number;
  smCount: number | null;
  starts: number[];
  slots: number;
  /** At most this many at once (the +me profiles allow one). */
  maxInstances: number;
}

/** A GPU model's MIG geometry: 8 memory slots and 7 compute slices on every MIG-capable GPU so far. */
export interface MigGpu {
  name: string;
  memoryGiB: number;
  memorySlots: number;
  computeSlices: number;
  profiles: MigProfileSpec[];
}

const ONE = [0, 1, 2, 3, 4, 5, 6];

function table(
  name: string,
  memoryGiB: number,
  profiles: Array<[string, number, number | null, number[], number]>,
): MigGpu {
  return {
    name,
    memoryGiB,
    memorySlots: 8,
    computeSlices: 7,
    profiles: profiles.map(([profile, mem, sm, starts, slots]) => ({
      name: profile,
      computeSlices: Number(/^(\d+)g/.exec(profile)?.[1] ?? 0),
      memoryGiB: mem,
      smCount: sm,
      starts,
      slots,
      maxInstances: profile.endsWith('+me') ? 1 : starts.length,
    })),
  };
}

/**
 * Built-in tables, following NVIDIA's MIG user guide. H200-141GB is the H200's own `mig -lgip` and
 * `-lgipp` output recorded on 2026-11-21. The others take slice memory from the profile name, and
 * placements from the A100/H100 pattern, which the H200 recording also follows. GPU memory is the
 * nvidia-smi total in GiB (H100: 81559 MiB as recorded here; H200: 143771 MiB).
 */
export const BUILTIN_MIG_GPUS: readonly MigGpu[] = [
  table('A100-40GB', 40, [
    ['1g.5gb', 5, 14, ONE, 1],
    ['1g.5gb+me', 5, 14, ONE, 1],
    ['1g.10gb', 10, 14, [0, 2, 4, 6], 2],
    ['2g.10gb', 10, 28, [0, 2, 4], 2],
    ['3g.20gb', 20, 42, [0, 4], 4],
    ['4g.20gb', 20, 56, [0], 4],
    ['7g.40gb', 40, 98, [0], 8],
  ]),
  table('A100-80GB', 80, [
    ['1g.10gb', 10, 14, ONE, 1],
    ['1g.10gb+me', 10, 14, ONE, 1],
    ['1g.20gb', 20, 14, [0, 2, 4, 6], 2],
    ['2g.20gb', 20, 28, [0, 2, 4], 2],
    ['3g.40gb', 40, 42, [0, 4], 4],
    ['4g.40gb', 40, 56, [0], 4],
    ['7g.80gb', 80, 98, [0], 8],
  ]),
  table('H100-80GB', 79.6, [
    ['1g.10gb', 10, 16, ONE, 1],
    ['1g.10gb+me', 10, 16, ONE, 1],
    ['1g.20gb', 20, 26, [0, 2, 4, 6], 2],
    ['2g.20gb', 20, 32, [0, 2, 4], 2],
    ['3g.40gb', 40, 60, [0, 4], 4],
    ['4g.40gb', 40, 64, [0], 4],
    ['7g.80gb', 80, 132, [0], 8],
  ]),
  table('H200-141GB', 140.4, [
    ['1g.18gb', 16, 16, ONE, 1],
    ['1g.18gb+me', 16, 16, ONE, 1],
    ['1g.35gb', 32.5, 26, [0, 2, 4, 6], 2],
    ['2g.35gb', 32.5, 32, [0, 2, 4], 2],
    ['3g.71gb', 69.75, 60, [0, 4], 4],
    ['4g.71gb', 69.75, 64, [0], 4],
    ['7g.141gb', 140, 132, [0], 8],
  ]),
];

export function builtinMigGpu(name: string): MigGpu | undefined {
  return BUILTIN_MIG_GPUS.find((g) => g.name.toLowerCase() === name.toLowerCase());
}

/** The most memory slots a MIG GPU is given here: NVIDIA's have 8; more is a record no GPU wrote. */
const MAX_MIG_SLOTS = 64;

/**
 * A measured GPU's own table, from the profiles and placements its run recorded; null without them.
 * `where` names the GPU in the record (`run <id>: fingerprint.gpus[0]`): a placement or profile the
 * solver cannot use (no start position, a size of 0 or thousands of slots, negative memory) is a
 * one-line UserError naming its field, never a RangeError or a search that runs for minutes.
 */
export function migGpuFromRun(gpu: Gpu, where = 'the run'): MigGpu | null {
  if (gpu.migProfiles.length === 0) return null;
  const refuse = (field: string, problem: string) =>
    new UserError(`${where}.${field} ${problem}: not a MIG table nvidia-smi writes; plan with --gpu-model instead`);
  for (const [j, pl] of gpu.migPlacements.entries()) {
    if (pl.starts.length === 0) throw refuse(`migPlacements[${j}].starts`, 'lists no start position');
    if (pl.size < 1 || pl.size > MAX_MIG_SLOTS)
      throw refuse(`migPlacements[${j}].size`, `is ${pl.size}, not 1 to ${MAX_MIG_SLOTS} memory slots`);
    const bad = pl.starts.find((start) => start < 0 || start + pl.size > MAX_MIG_SLOTS);
    if (bad !== undefined)
      throw refuse(`migPlacements[${j}].starts`, `holds ${bad}, which does not fit ${MAX_MIG_SLOTS} memory slots`);
  }
  for (const [j, p] of gpu.migProfiles.entries()) {
    if (!(p.memoryGiB >= 0)) throw refuse(`migProfiles[${j}].memoryGiB`, `is ${p.memoryGiB}`);
    if (p.smCount < 0) throw refuse(`migProfiles[${j}].smCount`, `is ${p.smCount}`);
    if (p.instancesTotal < 0 || p.instancesTotal > MAX_MIG_SLOTS)
      throw refuse(`migProfiles[${j}].instancesTotal`, `is ${p.instancesTotal}, not 0 to ${MAX_MIG_SLOTS}`);
  }
  const profiles = gpu.migProfiles.flatMap((p) => {
    const placement = gpu.migPlacements.find((pl) => pl.profileId === p.profileId);
    if (!placement) return [];
    return [
      {
        name: p.name,
        computeSlices: Number(/^(\d+)g/.exec(p.name)?.[1] ?? 0),
        memoryGiB: p.memoryGiB,
        smCount: p.smCount,
        starts: placement.starts,
        slots: placement.size,
        maxInstances: p.instancesTotal,
      },
    ];
  });
  if (profiles.length === 0) return null; // no profile has a placement: MIG is not assessed
  const memorySlots = Math.max(...profiles.map((p) => Math.max(...p.starts) + p.slots));
  return {
    name: gpu.name ?? 'GPU',
    memoryGiB: (gpu.memoryTotalMiB ?? 0) / 1024,
    memorySlots,
    computeSlices: Math.max(...profiles.map((p) => p.computeSlices)),
    profiles,
  };
}
