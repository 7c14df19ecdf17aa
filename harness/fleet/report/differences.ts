/** How fleet runs differ from each other: their software, their comparisons, their settings in words; classes of like runs and the majority among them. */
import { clientCounts, type Run } from '../../bench/record/schema.js';
import { gpuAt } from '../../system/nvidia/schema.js';
import type { FleetMember, Software } from './analyze.js';

export const gpuOf = (run: Run) => gpuAt(run.fingerprint, run.config.gpuIndex);
export const gpuKey = (m: FleetMember) => gpuOf(m.run)?.uuid ?? m.path;
export const modelOf = (m: FleetMember) => gpuOf(m.run)?.name ?? 'unknown GPU';

export function softwareOf(run: Run): Software {
  const gpu = gpuOf(run);
  const p = run.fingerprint.python;
  return {
    driver: run.fingerprint.driverVersion,
    cuda: run.fingerprint.cudaVersion,
    torch: p.status === 'ok' ? p.torch : null,
    gpushare: run.tool.version,
    computeMode: gpu?.computeMode ?? null,
    mig: gpu?.migModeCurrent ?? null,
  };
}

/** Each field the runs agree on, null where they differ. */
export function commonSoftware(runs: readonly Run[]): Software {
  const all = runs.map(softwareOf);
  const first = all[0] as Software;
  const keys = Object.keys(first) as Array<keyof Software>;
  return Object.fromEntries(
    keys.map((k) => [k, all.every((x) => x[k] === first[k]) ? first[k] : null]),
  ) as unknown as Software;
}

/** Software the gate's fingerprint comparison does not cover, in its words. */
export function softwareDifferences(now: Run, before: Run): string[] {
  const [a, b] = [softwareOf(now), softwareOf(before)];
  const fields: Array<[string, keyof Software]> = [
    ['CUDA', 'cuda'],
    ['PyTorch', 'torch'],
    ['gpushare', 'gpushare'],
  ];
  return fields.flatMap(([name, key]) =>
    a[key] === b[key] ? [] : [`${name}: ${String(b[key])} before vs ${String(a[key])} now`],
  );
}

export const comparisonIds = (run: Run) => run.plan.map((c) => c.id).sort();

/** Comparisons one run has and the other (`reference`) lacks. */
export function planDifferences(now: Run, before: Run, reference: string): string[] {
  const [a, b] = [comparisonIds(now), comparisonIds(before)];
  const list = (xs: string[]) =>
    xs.length > 4 ? `${xs.slice(0, 4).join(', ')} and ${xs.length - 4} more` : xs.join(', ');
  const here = a.filter((x) => !b.includes(x));
  const there = b.filter((x) => !a.includes(x));
  return [
    ...(here.length > 0 ? [`comparisons only here: ${list(here)}`] : []),
    ...(there.length > 0 ? [`comparisons only in ${reference}: ${list(there)}`] : []),
  ];
}

/** The gate's "X: a before vs b now" as the fleet says it: the node's value against its reference's. */
export function reword(line: string, reference: string): string {
  const m = /^(.*?): (.*) before vs (.*) now$/s.exec(line);
  return m ? `${m[1]}: ${m[3]} here, ${m[2]} in ${reference}` : line;
}

/** Partitions items into classes of equals (`same` is an equivalence), in first-seen order. */
export function classes<T>(items: readonly T[], same: (a: T, b: T) => boolean): T[][] {
  const out: T[][] = [];
  for (const item of items) {
    const home = out.find((c) => same(c[0] as T, item));
    if (home) home.push(item);
    else out.push([item]);
  }
  return out;
}

/** The class held by more than half of the distinct GPUs, or null: repeat runs of one GPU do not outvote another GPU. */
export function majority(cls: readonly FleetMember[][]): FleetMember[] | null {
  const total = new Set(cls.flat().map(gpuKey)).size;
  const weight = (c: readonly FleetMember[]) => new Set(c.map(gpuKey)).size;
  const best = [...cls].sort((a, b) => weight(b) - weight(a))[0];
  return best && weight(best) * 2 > total ? best : null;
}

/** A run's settings in one line, as a group names them. */
export function settingsText(run: Run): string {
  const c = run.config;
  const mps = [
    c.mps.threadPct !== null ? `MPS ${c.mps.threadPct}% threads` : '',
    c.mps.memLimit !== null ? `MPS memory ${c.mps.memLimit}` : '',
  ].filter(Boolean);
  return [
    `${clientCounts(c).join(', ')} client(s)`,
    `${c.windowMs} ms windows`,
    `CPU pinning ${c.cpuPin}`,
    ...mps,
    `comparisons ${run.plan.map((p) => p.id).join(', ')}`,
  ].join(' · ');
}
