/**
 * `gpushare doctor`: the fingerprint, shown to a person or as JSON, with what blocks a run and the
 * MPS daemons gpushare left behind (a killed run's), each with how to stop it.
 */
import path from 'node:path';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { TERMINAL_COLUMNS, wrapLine } from '../core/wrap.js';
import { RECORD_KINDS, recordKindIn } from '../record/kinds.js';
import { liveLockHolder } from '../record/lock.js';
import { SIMULATED_TEXT } from '../record/simulated.js';
import { readRegularFile } from '../record/store.js';
import { machineFingerprint } from '../session/preflight.js';
import { benchBlockers } from '../session/readiness.js';
import { findMpsLeftovers, type MpsLeftover } from '../system/mps/leftovers.js';
import { type Fingerprint, isSimulated } from '../system/nvidia/schema.js';
import { findLeftWorkloads, type LeftWorkload } from '../system/proc/left-workloads.js';
import { bootId, isRunning } from '../system/proc/process-table.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';

const DOCTOR_FLAGS = {
  json: { type: 'boolean', describe: 'print the fingerprint as JSON' },
  verbose: { type: 'boolean', describe: 'every detail: each MIG profile with its SMs, memory and slots' },
  python: { type: 'string', describe: 'Python interpreter to probe', defaultDescription: DEFAULT_PYTHON },
} as const;

/** `gpushare doctor`: flags, options, run. */
export const doctorCommand = defineCommand({ flags: DOCTOR_FLAGS, resolve: (args) => args, run: doctor });

async function doctor(args: ArgsOf<typeof DOCTOR_FLAGS>, deps: AppDeps): Promise<number> {
  const fingerprint = await machineFingerprint(deps, args.python ?? DEFAULT_PYTHON);
  const blockers = benchBlockers(fingerprint, 0);
  const leftovers = await Promise.all(
    (await findMpsLeftovers()).map(async (l) => {
      const inUse = await inUseBy(l);
      return { ...l, inUse, stop: inUse !== null ? null : await howToStop(l) };
    }),
  );
  const left = await findLeftWorkloads();
  if (args.json)
    deps.out(
      `${JSON.stringify(
        {
          ...fingerprint,
          ready: blockers.length === 0,
          blockers,
          mpsLeftovers: leftovers.map((l) => ({
            root: l.root,
            runId: l.marker.runId,
            runDir: l.marker.runDir ?? null,
            harnessPid: l.marker.harnessPid,
            pids: l.pids,
            inUseBy: l.inUse,
            stop: l.stop,
          })),
          leftProcesses: left.map((p) => ({ pid: p.pid, pgid: p.pgid, harnessPid: p.harnessPid })),
        },
        null,
        2,
      )}\n`,
    );
  else deps.out(doctorText(fingerprint, blockers, leftovers, left, args.verbose ?? false, deps.terminal.columns));
  return blockers.length === 0 ? ExitCode.ok : ExitCode.usage;
}

/** The PID of the gpushare still running the leftover's run (it holds the run directory's lock), or null: left over. */
async function inUseBy(leftover: MpsLeftover): Promise<number | null> {
  const { runDir, harnessPid, bootId: boot } = leftover.marker;
  if (runDir !== undefined) return liveLockHolder(runDir);
  // A marker written before markers named their run: its harness, if it still runs in this boot.
  return boot === (await bootId()) && (await isRunning(harnessPid)) ? harnessPid : null;
}

/**
 * How to stop a leftover: the --resume of the run its marker names (it stops the daemon and goes on)
 * when that directory still holds that run, else the daemon's own quit and the root's removal.
 */
async function howToStop(leftover: MpsLeftover): Promise<string> {
  const runDir = leftover.marker.runDir;
  const kind = runDir !== undefined ? await recordKindIn(runDir) : null;
  if (runDir !== undefined && kind !== null) {
    const id = await readRegularFile(path.join(runDir, RECORD_KINDS[kind].file))
      .then((text) => (JSON.parse(text) as { id?: unknown }).id)
      .catch(() => null);
    if (id === leftover.marker.runId) {
      // A GPU's run of a multi-GPU host run: the host run continues it.
      const parent = path.dirname(runDir);
      const [dir, command] =
        kind === 'bench' && (await recordKindIn(parent)) === 'host'
          ? [parent, RECORD_KINDS.host.command]
          : [runDir, RECORD_KINDS[kind].command];
      return `${command} --resume ${argvText([dir])} (stops it and continues the run)`;
    }
  }
  const remove = `rm -r ${argvText([leftover.root])}`;
  return leftover.pids.length > 0
    ? `echo quit | CUDA_MPS_PIPE_DIRECTORY=${argvText([leftover.pipeDirectory])} nvidia-cuda-mps-control; ${remove}`
    : remove;
}

/** The label column and the space after it. */
const LABEL_WIDTH = 13;

function doctorText(
  f: Fingerprint,
  blockers: string[],
  leftovers: Array<MpsLeftover & { inUse: number | null; stop: string | null }>,
  left: readonly LeftWorkload[] = [],
  verbose = false,
  columns = TERMINAL_COLUMNS,
): string {
  const lines: string[] = isSimulated(f) ? wrapLine(SIMULATED_TEXT, columns) : [];
  // Folded under its text, not its label: the labels stay a column of their own.
  const row = (label: string, text: string) =>
    lines.push(...wrapLine(`${label.padEnd(12)} ${text}`, columns, ' '.repeat(LABEL_WIDTH)));
  row(
    'nvidia-smi',
    f.nvidiaSmi.error ?? `${f.nvidiaSmi.path}  driver ${f.driverVersion ?? '?'}  CUDA ${f.cudaVersion ?? '?'}`,
  );
  for (const g of f.gpus) {
    row(`GPU ${g.index}`, `${g.name}  ${g.uuid}  ${g.memoryTotalMiB} MiB`);
    row('', `compute mode ${g.computeMode}, persistence ${g.persistenceMode}`);
    row('', `utilization ${g.utilGpuPct ?? '?'}%, memory used ${g.memoryUsedMiB ?? '?'} MiB`);
    row(
      '',
      `MIG ${g.migModeCurrent ?? 'n/a'} (pending ${g.migModePending ?? 'n/a'}), ${g.migDevices.length} MIG devices${g.migDevices.map((d) => ` ${d.profile}:${d.uuid}`).join('')}`,
    );
    if (g.migProfiles.length > 0) {
      const starts = (id: number) => g.migPlacements.find((p) => p.profileId === id)?.starts.join(',') ?? '?';
      // Each profile's detail is a line of its own, and only asked for: a GPU has up to a dozen.
      if (verbose)
        for (const p of g.migProfiles)
          row(
            '',
            `MIG profile ${p.name} (id ${p.profileId}): ${p.smCount} SMs, ${p.memoryGiB} GiB, ${p.instancesFree}/${p.instancesTotal} free, slots ${starts(p.profileId)}`,
          );
      else
        row(
          '',
          `MIG profiles: ${g.migProfiles.map((p) => p.name).join(', ')} (gpushare doctor --verbose: their SMs, memory, slots)`,
        );
    }
  }
  row('MPS', `control ${f.mps.controlPath ?? 'not on PATH'}, server ${f.mps.serverPath ?? 'not on PATH'}`);
  // A process serving one of gpushare's own roots is gpushare's, listed below with how to stop it.
  const ours = new Set(leftovers.flatMap((l) => l.pids));
  const others = f.mps.runningPids.filter((pid) => !ours.has(pid));
  row(
    '',
    others.length > 0 || f.mps.defaultDaemonSocket
      ? `a daemon not started by gpushare is running (PIDs ${others.join(', ') || '?'}, pipe ${f.mps.defaultPipeDirectory}); gpushare leaves it alone`
      : `no daemon${ours.size > 0 ? " but gpushare's own" : ''} running (pipe directory ${f.mps.defaultPipeDirectory})`,
  );
  for (const l of leftovers) {
    const what = `gpushare's ${l.root} (run ${l.marker.runId}${l.pids.length > 0 ? `, MPS PIDs ${l.pids.join(', ')}` : ', no process'})`;
    row(
      '',
      l.stop === null
        ? `${what}: in use by gpushare pid ${l.inUse}`
        : `${what}, left by gpushare pid ${l.marker.harnessPid}: stop it with ${l.stop}`,
    );
  }
  for (const harnessPid of new Set(left.map((p) => p.harnessPid))) {
    const group = left.filter((p) => p.harnessPid === harnessPid);
    const groups = [...new Set(group.map((p) => p.pgid))];
    row(
      '',
      `processes ${group.map((p) => p.pid).join(', ')} left by gpushare pid ${harnessPid}, which has exited: stop them with ${groups.map((g) => `kill -9 -- -${g}`).join('; ')} (or --resume their run)`,
    );
  }
  row(
    'processes',
    f.computeApps.length > 0
      ? f.computeApps.map((a) => `${a.pid} ${a.name} ${a.usedMemoryMiB} MiB`).join('; ')
      : 'no other compute processes listed (some VMs hide them: check utilization above)',
  );
  const p = f.python;
  row(
    'python',
    p.status === 'error'
      ? `${p.executable}: ${p.error}`
      : `${p.executable} ${p.version}, torch ${p.torch ?? 'missing'} (CUDA ${p.torchCuda ?? '-'}), ${p.cudaAvailable ? `sees ${p.deviceName} with ${p.smCount} SMs` : 'no CUDA device'}, triton ${p.triton ?? 'missing'}`,
  );
  lines.push(
    blockers.length === 0 ? 'ready to bench' : `not ready to bench:\n${blockers.map((b) => `  - ${b}`).join('\n')}`,
  );
  return `${lines.join('\n')}\n`;
}
