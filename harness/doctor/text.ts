/** What `gpushare doctor` prints to a person: one labelled row per part of the machine, then whether a run may start. */
import { TERMINAL_COLUMNS, wrapLine } from '../core/wrap.js';
import { SIMULATED_TEXT } from '../record/simulated.js';
import type { MpsLeftover } from '../system/mps/leftovers.js';
import { type Fingerprint, type Gpu, isSimulated } from '../system/nvidia/schema.js';
import type { LeftWorkload } from '../system/proc/left-workloads.js';

/** The label column and the space after it. */
const LABEL_WIDTH = 13;

/** A leftover MPS root with the gpushare that still uses it (null: none) or how to stop it (null: in use). */
export type DoctorLeftover = MpsLeftover & { inUse: number | null; stop: string | null };

/** A row: its label ('' continues the row above) and its text. */
type Row = readonly [label: string, text: string];

export function doctorText(
  f: Fingerprint,
  blockers: string[],
  leftovers: readonly DoctorLeftover[],
  left: readonly LeftWorkload[] = [],
  verbose = false,
  columns = TERMINAL_COLUMNS,
): string {
  const lines: string[] = isSimulated(f) ? wrapLine(SIMULATED_TEXT, columns) : [];
  const rows: Row[] = [
    [
      'nvidia-smi',
      f.nvidiaSmi.error ?? `${f.nvidiaSmi.path}  driver ${f.driverVersion ?? '?'}  CUDA ${f.cudaVersion ?? '?'}`,
    ],
    ...f.gpus.flatMap((g) => gpuRows(g, verbose)),
    ...mpsRows(f, leftovers, left),
    [
      'processes',
      f.computeApps.length > 0
        ? f.computeApps.map((a) => `${a.pid} ${a.name} ${a.usedMemoryMiB} MiB`).join('; ')
        : 'no other compute processes listed (some VMs hide them: check utilization above)',
    ],
    ['python', pythonText(f.python)],
  ];
  // Folded under its text, not its label: the labels stay a column of their own.
  for (const [label, text] of rows)
    lines.push(...wrapLine(`${label.padEnd(12)} ${text}`, columns, ' '.repeat(LABEL_WIDTH)));
  lines.push(
    blockers.length === 0 ? 'ready to bench' : `not ready to bench:\n${blockers.map((b) => `  - ${b}`).join('\n')}`,
  );
  return `${lines.join('\n')}\n`;
}

/** A GPU: its identity, modes, load and MIG state; its MIG profiles named, or (verbose) each in detail. */
function gpuRows(g: Gpu, verbose: boolean): Row[] {
  const rows: Row[] = [
    [`GPU ${g.index}`, `${g.name}  ${g.uuid}  ${g.memoryTotalMiB} MiB`],
    ['', `compute mode ${g.computeMode}, persistence ${g.persistenceMode}`],
    ['', `utilization ${g.utilGpuPct ?? '?'}%, memory used ${g.memoryUsedMiB ?? '?'} MiB`],
    [
      '',
      `MIG ${g.migModeCurrent ?? 'n/a'} (pending ${g.migModePending ?? 'n/a'}), ${g.migDevices.length} MIG devices${g.migDevices.map((d) => ` ${d.profile}:${d.uuid}`).join('')}`,
    ],
  ];
  if (g.migProfiles.length === 0) return rows;
  const starts = (id: number) => g.migPlacements.find((p) => p.profileId === id)?.starts.join(',') ?? '?';
  // Each profile's detail is a line of its own, and only asked for: a GPU has up to a dozen.
  if (!verbose)
    return [
      ...rows,
      [
        '',
        `MIG profiles: ${g.migProfiles.map((p) => p.name).join(', ')} (gpushare doctor --verbose: their SMs, memory, slots)`,
      ],
    ];
  return [
    ...rows,
    ...g.migProfiles.map(
      (p): Row => [
        '',
        `MIG profile ${p.name} (id ${p.profileId}): ${p.smCount} SMs, ${p.memoryGiB} GiB, ${p.instancesFree}/${p.instancesTotal} free, slots ${starts(p.profileId)}`,
      ],
    ),
  ];
}

/** MPS: its tools, a daemon gpushare did not start, gpushare's leftover roots and the workload processes a dead gpushare left. */
function mpsRows(f: Fingerprint, leftovers: readonly DoctorLeftover[], left: readonly LeftWorkload[]): Row[] {
  // A process serving one of gpushare's own roots is gpushare's, listed below with how to stop it.
  const ours = new Set(leftovers.flatMap((l) => l.pids));
  const others = f.mps.runningPids.filter((pid) => !ours.has(pid));
  const rows: Row[] = [
    ['MPS', `control ${f.mps.controlPath ?? 'not on PATH'}, server ${f.mps.serverPath ?? 'not on PATH'}`],
    [
      '',
      others.length > 0 || f.mps.defaultDaemonSocket
        ? `a daemon not started by gpushare is running (PIDs ${others.join(', ') || '?'}, pipe ${f.mps.defaultPipeDirectory}); gpushare leaves it alone`
        : `no daemon${ours.size > 0 ? " but gpushare's own" : ''} running (pipe directory ${f.mps.defaultPipeDirectory})`,
    ],
  ];
  for (const l of leftovers) {
    const what = `gpushare's ${l.root} (run ${l.marker.runId}${l.pids.length > 0 ? `, MPS PIDs ${l.pids.join(', ')}` : ', no process'})`;
    rows.push([
      '',
      l.stop === null
        ? `${what}: in use by gpushare pid ${l.inUse}`
        : `${what}, left by gpushare pid ${l.marker.harnessPid}: stop it with ${l.stop}`,
    ]);
  }
  for (const harnessPid of new Set(left.map((p) => p.harnessPid))) {
    const group = left.filter((p) => p.harnessPid === harnessPid);
    const groups = [...new Set(group.map((p) => p.pgid))];
    rows.push([
      '',
      `processes ${group.map((p) => p.pid).join(', ')} left by gpushare pid ${harnessPid}, which has exited: stop them with ${groups.map((g) => `kill -9 -- -${g}`).join('; ')} (or --resume their run)`,
    ]);
  }
  return rows;
}

/** The Python interpreter: its torch, CUDA device and triton, or why it could not be asked. */
function pythonText(p: Fingerprint['python']): string {
  return p.status === 'error'
    ? `${p.executable}: ${p.error}`
    : `${p.executable} ${p.version}, torch ${p.torch ?? 'missing'} (CUDA ${p.torchCuda ?? '-'}), ${p.cudaAvailable ? `sees ${p.deviceName} with ${p.smCount} SMs` : 'no CUDA device'}, triton ${p.triton ?? 'missing'}`;
}
