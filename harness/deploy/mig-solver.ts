/**
 * Is a MIG geometry (profile → count) placeable on a GPU? A backtracking search over start slots:
 * no two instances may share a memory slot, compute slices may not exceed the GPU's, and a profile
 * may start only where its placements allow.
 */
import type { MigGpu, MigProfileSpec } from './mig-profiles.js';

export type Geometry = Record<string, number>;

export type Placement =
  | { ok: true; instances: Array<{ profile: string; start: number; slots: number }> }
  | { ok: false; reason: string };

export function placeGeometry(gpu: MigGpu, geometry: Geometry): Placement {
  const wanted: MigProfileSpec[] = [];
  for (const [name, count] of Object.entries(geometry)) {
    const profile = gpu.profiles.find((p) => p.name === name);
    if (!profile)
      return {
        ok: false,
        reason: `${gpu.name} has no MIG profile ${name} (it has ${gpu.profiles.map((p) => p.name).join(', ')})`,
      };
    if (!Number.isInteger(count) || count < 1)
      return { ok: false, reason: `${name}: count ${count} is not a positive whole number` };
    if (count > profile.maxInstances)
      return { ok: false, reason: `${name} allows at most ${profile.maxInstances} instance(s), ${count} asked` };
    for (let i = 0; i < count; i++) wanted.push(profile);
  }
  const compute = wanted.reduce((n, p) => n + p.computeSlices, 0);
  if (compute > gpu.computeSlices)
    return { ok: false, reason: `${compute} compute slices asked, ${gpu.name} has ${gpu.computeSlices}` };
  // Largest first: they have the fewest places to go, so dead ends show up early.
  wanted.sort((a, b) => b.slots - a.slots || a.starts.length - b.starts.length);
  const used = new Array<boolean>(gpu.memorySlots).fill(false);
  const chosen: Array<{ profile: string; start: number; slots: number }> = [];
  const place = (i: number): boolean => {
    const profile = wanted[i];
    if (!profile) return true;
    // Same profiles go in ascending start order, so permutations of equal instances are tried once.
    const previous = chosen.at(-1);
    const floor = previous && previous.profile === profile.name ? previous.start + 1 : 0;
    for (const start of profile.starts) {
      if (start < floor || start + profile.slots > gpu.memorySlots) continue;
      const span = used.slice(start, start + profile.slots);
      if (span.some(Boolean)) continue;
      used.fill(true, start, start + profile.slots);
      chosen.push({ profile: profile.name, start, slots: profile.slots });
      if (place(i + 1)) return true;
      chosen.pop();
      used.fill(false, start, start + profile.slots);
    }
    return false;
  };
  if (!place(0)) {
    return {
      ok: false,
      reason: `no placement of ${describeGeometry(geometry)} fits ${gpu.name}'s ${gpu.memorySlots} memory slots with the allowed start slots`,
    };
  }
  return { ok: true, instances: [...chosen].sort((a, b) => a.start - b.start) };
}

export function describeGeometry(geometry: Geometry): string {
  return Object.entries(geometry)
    .map(([name, count]) => `${count}× ${name}`)
    .join(' + ');
}
