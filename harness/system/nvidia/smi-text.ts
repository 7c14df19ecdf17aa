/** Parsers for nvidia-smi's human-readable outputs: -L, -q and the mig -lgip / -lgipp tables. */

/** A MIG device as `nvidia-smi -L` lists it under its GPU. */
export interface MigDevice {
  gpuIndex: number;
  /** Profile name, e.g. "1g.18gb". */
  profile: string;
  deviceIndex: number;
  uuid: string;
}

export interface ListedGpu {
  index: number;
  name: string;
  uuid: string;
  migDevices: MigDevice[];
}

/** Parses `nvidia-smi -L`. */
export function parseGpuList(text: string): ListedGpu[] {
  const gpus: ListedGpu[] = [];
  for (const line of text.split('\n')) {
    const gpu = /^GPU (\d+): (.+?) \(UUID: ([^)]+)\)/.exec(line.trim());
    if (gpu) {
      gpus.push({ index: Number(gpu[1]), name: gpu[2] ?? '', uuid: gpu[3] ?? '', migDevices: [] });
      continue;
    }
    const mig = /^MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)/.exec(line.trim());
    const owner = gpus.at(-1);
    if (mig && owner) {
      owner.migDevices.push({
        gpuIndex: owner.index,
        profile: mig[1] ?? '',
        deviceIndex: Number(mig[2]),
        uuid: mig[3] ?? '',
      });
    }
  }
  return gpus;
}

/** Driver and CUDA versions from the header of `nvidia-smi -q`. */
export function parseVersions(text: string): { driverVersion: string | null; cudaVersion: string | null } {
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(\\S+)`, 'm').exec(text)?.[1] ?? null;
  return { driverVersion: field('Driver Version'), cudaVersion: field('CUDA Version') };
}

/** A GPU instance profile from `nvidia-smi mig -lgip`. */
export interface MigProfile {
  gpuIndex: number;
  /** e.g. "1g.18gb" or "1g.18gb+me". */
  name: string;
  profileId: number;
  instancesFree: number;
  instancesTotal: number;
  memoryGiB: number;
  smCount: number;
  copyEngines: number;
  decoders: number;
  encoders: number;
  jpegs: number;
  ofas: number;
}

/** Parses the `nvidia-smi mig -lgip` table: each profile is a row and a continuation row. */
export function parseMigProfiles(text: string): MigProfile[] {
  const profiles: MigProfile[] = [];
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    const m = /^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\/(\d+)\s+([\d.]+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+\|/.exec(
      line,
    );
    if (!m) continue;
    const next = /^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+\|/.exec(lines[i + 1] ?? '');
    profiles.push({
      gpuIndex: Number(m[1]),
      name: m[2] ?? '',
      profileId: Number(m[3]),
      instancesFree: Number(m[4]),
      instancesTotal: Number(m[5]),
      memoryGiB: Number(m[6]),
      smCount: Number(m[7]),
      decoders: Number(m[8]),
      encoders: Number(m[9]),
      copyEngines: Number(next?.[1] ?? 0),
      jpegs: Number(next?.[2] ?? 0),
      ofas: Number(next?.[3] ?? 0),
    });
  }
  return profiles;
}

/** Where a profile can be placed, from `nvidia-smi mig -lgipp`: start slots and the slots it spans. */
export interface MigPlacement {
  gpuIndex: number;
  profileId: number;
  starts: number[];
  size: number;
}

export function parseMigPlacements(text: string): MigPlacement[] {
  const placements: MigPlacement[] = [];
  for (const line of text.split('\n')) {
    const m = /^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,\s]*)\}:(\d+)/.exec(line.trim());
    if (!m) continue;
    placements.push({
      gpuIndex: Number(m[1]),
      profileId: Number(m[2]),
      starts: (m[3] ?? '')
        .split(',')
        .filter((s) => s.trim())
        .map(Number),
      size: Number(m[4]),
    });
  }
  return placements;
}
