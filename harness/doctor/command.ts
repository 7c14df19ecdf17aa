/**
 * `gpushare doctor`: the fingerprint, shown to a person or as JSON, with what blocks a run and the
 * MPS daemons gpushare left behind (a killed run's), each with how to stop it.
 */
import path from 'node:path';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { argvText } from '../core/escape/terminal.js';
import { RECORD_KINDS, recordKindIn } from '../record/kinds.js';
import { liveLockHolder } from '../record/lock.js';
import { readRegularFile } from '../record/store.js';
import { machineFingerprint } from '../session/preflight.js';
import { benchBlockers } from '../session/readiness.js';
import { findMpsLeftovers, type MpsLeftover } from '../system/mps/leftovers.js';
import { findLeftWorkloads } from '../system/proc/left-workloads.js';
import { bootId, isRunning } from '../system/proc/process-table.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { doctorText } from './text.js';

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
