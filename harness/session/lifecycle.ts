/**
 * One run's lifecycle, the same for a bench run, a multi-GPU host run, a probe run and a capacity
 * run: its directory opened and locked (or, for --resume, locked and its record read again), the
 * interrupts watched (one double-signal policy), its MPS daemons (mps.ts) recorded before they start
 * and stopped however the run ends, the status, finishedAt and "stopped by" warning set, the final save,
 * and where the report goes. A product supplies only what differs: its record, its loop, its report.
 */
import path from 'node:path';
import type { AppDeps } from '../core/deps.js';
import { Interrupted, type InterruptSignal, signalExitCode, UserError } from '../core/errors.js';
import { reportsDir, resultsDir } from '../core/paths.js';
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import { RECORD_KINDS, type RecordKind } from '../record/kinds.js';
import { acquireRunLock, type RunLock } from '../record/lock.js';
import type { RunStatus } from '../record/record-file.js';
import { directoryWriter, jsonRecordStore, openRunDirectory, removeStaleTempFiles } from '../record/store.js';
import type { MpsPaths } from '../system/mps/ownership.js';
import { type Fingerprint, isSimulated } from '../system/nvidia/schema.js';
import { findLeftWorkloads, killLeftWorkloads } from '../system/proc/left-workloads.js';
import { Reaper } from '../system/proc/reaper.js';
import { SIMULATE_ENV } from '../system/simulator.js';
import { type InterruptWatch, watchInterrupts } from './interrupts.js';
import { refuseOtherMachine } from './machine.js';
import { RunDaemons, type SessionMpsStart } from './mps.js';
import { machineFingerprint, refuseBlocked } from './preflight.js';

// The daemons' types, where the products have always found them.
export type { SessionDaemon, SessionMpsStart } from './mps.js';

/** What the lifecycle reads and sets in every product's record. */
export interface SessionRecord {
  id: string;
  status: RunStatus;
  finishedAt: string | null;
  warnings: string[];
  /** The machine it ran on: a simulated run resumes only on the simulator. */
  fingerprint?: Pick<Fingerprint, 'simulated'>;
}

/** How a product's record is kept: the lifecycle saves it and manages the MPS daemons it lists. */
export interface RecordBinding<R extends SessionRecord> {
  kind: RecordKind;
  save(record: R): Promise<void>;
  /** save, synchronously: for a forced exit, where process.exit follows at once. */
  saveSync(record: R): void;
  /** The record's MPS daemon records, as live objects of it. */
  daemons(record: R): MpsDaemonRecord[];
  /** Files written once, after the record, at the end and on a forced exit (bench's CSVs). */
  tables?: { write(record: R): Promise<void>; writeSync(record: R): void };
  /** How many units of work (RECORD_KINDS[kind].unit) the record holds finished. */
  done(record: R): number;
  /** What the first Ctrl-C does, e.g. "finishing the current probe, then stopping". */
  windDown: string;
  /** False for a run that has no --resume (verify: minutes long, run again instead). */
  resumable?: boolean;
  /** The command that continues it, where one kind has two (a server run: bench or capacity); default its kind's. */
  command?: string;
}

/**
 * The binding of a record kept as one JSON file in `dir` (its kind's file, `indent` spaces a level; 0:
 * one line): saved whole, atomically, synchronously on a forced exit. The product gives the rest.
 */
export function jsonBinding<R extends SessionRecord>(
  dir: string,
  kind: RecordKind,
  indent: number,
  rest: Omit<RecordBinding<R>, 'kind' | 'save' | 'saveSync'>,
): RecordBinding<R> {
  const store = jsonRecordStore<R>(dir, kind, indent);
  return { kind, save: (run) => store.save(run), saveSync: (run) => store.saveSync(run), ...rest };
}

export class Session<R extends SessionRecord> {
  /** Everything that must die on a forced exit: each part of the run registers its killer here. */
  readonly reaper = new Reaper();
  private readonly watch: InterruptWatch;
  private readonly daemons: RunDaemons;

  constructor(
    readonly dir: string,
    readonly record: R,
    private readonly binding: RecordBinding<R>,
    private readonly lock: RunLock,
    private readonly deps: AppDeps,
  ) {
    this.watch = watchInterrupts(
      (signal) => this.forcedExit(signal),
      (signal) => deps.err(`gpushare: ${signal}: ${binding.windDown} (again to stop at once)\n`),
    );
    this.daemons = new RunDaemons({
      runId: record.id,
      dir,
      files: directoryWriter(dir, undefined, binding.kind),
      deps,
      reaper: this.reaper,
      abort: this.watch.abort,
      daemons: () => binding.daemons(record),
      warn: (warning) => record.warnings.push(warning),
      save: () => this.save(),
      interrupted: () => this.interrupted(),
    });
  }

  /** Fires on the first signal: the run finishes what it is doing and stops. */
  get abort(): AbortSignal {
    return this.watch.abort;
  }

  /** The first signal that came, or null. */
  get signal(): InterruptSignal | null {
    return this.watch.signal;
  }

  /** Where the report goes: runs/reports/ for a run in runs/results/, null for beside the run. */
  get reportDir(): string | null {
    return path.dirname(path.resolve(this.deps.cwd, this.dir)) === resultsDir(this.deps.cwd)
      ? reportsDir(this.deps.cwd)
      : null;
  }

  /** The file of a one-file report: runs/reports/<run id>.md for a run in runs/results/, else report.md beside the run. */
  reportFile(): string {
    const dir = this.reportDir;
    return dir !== null ? path.join(dir, `${this.record.id}.md`) : path.join(this.dir, 'report.md');
  }

  save(): Promise<void> {
    return this.binding.save(this.record);
  }

  /** Thrown by a loop that stops because of the first signal. */
  interrupted(): Interrupted {
    return new Interrupted(this.signal ?? 'SIGINT');
  }

  /**
   * Runs the product's loop, then sets the record's status (complete, unless the loop set failed;
   * interrupted; or failed with a "run stopped by" warning), stops any daemon it still lists, saves it
   * with its tables, and says how to continue a run that did not complete. Throws what stopped the run,
   * but an interrupt.
   */
  async run(loop: () => Promise<void>, onEnd: (status: RunStatus) => void = () => undefined): Promise<void> {
    const record = this.record;
    let failure: unknown = null;
    try {
      await loop();
      if (record.status === 'running') record.status = 'complete';
    } catch (error) {
      failure = this.stoppedBy(error);
    } finally {
      record.finishedAt = this.deps.clock.nowIso();
      // Every path tries to save what it can, even when the disk is refusing writes.
      const saved = await this.daemons
        .stopLeft('failed', 'this harness, whose shutdown an error cut short')
        .then(() => this.save())
        .then(() => this.binding.tables?.write(record))
        .then(
          () => null,
          (error: unknown) => error,
        );
      failure ??= saved;
      onEnd(record.status);
      // A store error says where the work is and how to continue in its one line already.
      if (record.status !== 'complete' && !(failure instanceof UserError)) this.deps.err(this.continueLine());
    }
    if (failure !== null && !(failure instanceof Interrupted)) throw failure;
  }

  /** What stopped the loop, as the record says it (interrupted, or failed with a warning) and as `run` throws it. */
  private stoppedBy(error: unknown): unknown {
    if (error instanceof Interrupted) {
      this.record.status = 'interrupted';
      return new Interrupted(this.signal ?? error.signal);
    }
    this.record.status = 'failed';
    this.record.warnings.push(
      `run stopped by ${error instanceof UserError ? 'an error' : 'an internal error'}: ${error instanceof UserError ? error.message : String(error)}`,
    );
    return error;
  }

  /** The line that says what a run that did not complete saved, and how to continue it. */
  private continueLine(): string {
    const record = this.record;
    const { unit } = RECORD_KINDS[this.binding.kind];
    const command = this.binding.command ?? RECORD_KINDS[this.binding.kind].command;
    const n = this.binding.done(record);
    // A command that works as printed: a simulated run goes on only on the simulator.
    const simulated = record.fingerprint !== undefined && isSimulated(record.fingerprint);
    const next =
      this.binding.resumable === false
        ? `run ${command} again`
        : `continue with ${simulated ? `${SIMULATE_ENV}=1 ` : ''}${command} --resume ${this.dir}`;
    return `gpushare: run ${record.status}; ${n} finished ${unit}${n === 1 ? ' is' : 's are'} saved in ${this.dir} (${next})\n`;
  }

  /** Stops listening for interrupts and releases the directory: once the run is saved and reported. */
  close(): void {
    this.watch.dispose();
    this.lock.release();
  }

  /** A fresh MPS daemon for this run, recorded (by `place`) and saved before it starts: see RunDaemons.start. */
  startMps(
    place: (daemon: MpsDaemonRecord) => void,
    visibleDevices: string,
    logDirectory?: string,
    paths?: MpsPaths,
  ): Promise<SessionMpsStart> {
    return this.daemons.start(place, visibleDevices, logDirectory, paths);
  }

  /** Stops the MPS daemons the record still lists as running or starting: see RunDaemons.stopLeft. */
  stopLeftDaemons(prefix: string, leftBy: string): Promise<void> {
    return this.daemons.stopLeft(prefix, leftBy);
  }

  /**
   * A second signal (or the process ending while the run is live): kill everything registered, MPS
   * daemons by their pipe directories, salvage their logs, and save the record synchronously.
   */
  private forcedExit(signal: InterruptSignal | null): void {
    const record = this.record;
    this.reaper.killAll();
    if (record.status === 'running') {
      record.status = signal !== null ? 'interrupted' : 'failed';
      if (signal === null) record.warnings.push('run stopped by the process exiting while the run was in progress');
      record.finishedAt = this.deps.clock.nowIso();
    }
    this.daemons.killSync(signal);
    try {
      this.binding.saveSync(record);
      this.binding.tables?.writeSync(record);
    } catch {
      // The last save before the signal stands; --resume continues from it.
    }
    this.lock.release();
  }
}

/** Opens `dir` for a new run (the --out refusals and the lock), saves its first record, and watches interrupts. */
export async function newSession<R extends SessionRecord>(
  binding: RecordBinding<R>,
  dir: string,
  record: R,
  deps: AppDeps,
): Promise<Session<R>> {
  const lock = await openRunDirectory(dir, record.id, binding.kind);
  if (lock.warning !== null) {
    record.warnings.push(lock.warning);
    deps.err(`gpushare: warning: ${lock.warning}\n`);
  }
  try {
    await binding.save(record);
  } catch (error) {
    lock.release();
    throw error;
  }
  return new Session(dir, record, binding, lock, deps);
}

/** What resuming a product's run needs: its record read (under the lock), checked, and marked resumed. */
export interface Resumption<R> {
  load(dir: string): Promise<R>;
  /** Throws a UserError when the run cannot go on here (another machine). */
  check(record: R): void;
  /** Notes the resume in the record (when, and what it kept). */
  resumed(record: R): void;
}

/**
 * Continues the run in `dir` whose harness was killed or interrupted: locks it first (a harness still
 * running it, or a second --resume, is refused), reads its record again under the lock, removes temp
 * files a killed write left, and stops the daemons the record still lists as running.
 */
export async function resumeSession<R extends SessionRecord>(
  binding: RecordBinding<R>,
  dir: string,
  deps: AppDeps,
  resumption: Resumption<R>,
): Promise<Session<R>> {
  const lock = await acquireRunLock(dir);
  let session: Session<R> | null = null;
  try {
    // Read again under the lock: another harness may have written it since.
    const record = await resumption.load(dir);
    if (record.status === 'complete') throw new UserError(`${dir} holds a complete run: there is nothing to resume`);
    resumption.check(record);
    if (lock.warning !== null) {
      record.warnings.push(lock.warning);
      deps.err(`gpushare: warning: ${lock.warning}\n`);
    }
    // Workload processes the killed harness left (its watchdog killed too): they would share the GPU.
    if (lock.staleHolder !== null) {
      const killed = killLeftWorkloads(await findLeftWorkloads(lock.staleHolder));
      if (killed.length > 0) {
        const warning = `killed ${killed.length} process(es) left by the interrupted harness: PIDs ${killed.join(', ')}`;
        record.warnings.push(warning);
        deps.err(`gpushare: warning: ${warning}\n`);
      }
    }
    // Temp files of a harness killed mid-write: nobody else writes here while we hold the lock.
    await removeStaleTempFiles(dir);
    session = new Session(dir, record, binding, lock, deps);
    await session.stopLeftDaemons('interrupted', 'the interrupted harness');
    record.status = 'running';
    record.finishedAt = null;
    resumption.resumed(record);
    await session.save();
    return session;
  } catch (error) {
    if (session !== null) session.close();
    else lock.release();
    throw error;
  }
}

/** A recorded run that knows the machine it ran on: a probe or capacity run. */
export interface MachineRecord extends SessionRecord {
  fingerprint: Fingerprint;
  gpuIndex: number;
}

/**
 * Continues the probe or capacity run in `dir` on this machine: its fingerprint is taken with the run's
 * own Python, and a machine that cannot `verb` or differs from the run's is refused.
 */
export async function resumeOnThisMachine<R extends MachineRecord>(
  binding: RecordBinding<R>,
  dir: string,
  deps: AppDeps,
  { load, resumed, verb }: Omit<Resumption<R>, 'check'> & { verb: string },
): Promise<Session<R>> {
  const recorded = await load(dir);
  const fingerprint = await machineFingerprint(deps, recorded.fingerprint.python.executable);
  refuseBlocked(fingerprint, [recorded.gpuIndex], verb);
  return resumeSession(binding, dir, deps, {
    load,
    check: (run) => refuseOtherMachine(dir, fingerprint, run.fingerprint, run.gpuIndex),
    resumed,
  });
}

/**
 * Runs `loop` in `session`, then `report` (for a complete, failed or interrupted run alike), and
 * closes the session. The exit code is the report's, or 128 + the signal for an interrupted run.
 */
export async function runAndReport<R extends SessionRecord>(
  session: Session<R>,
  loop: () => Promise<void>,
  report: () => Promise<number>,
  onEnd?: (status: RunStatus) => void,
): Promise<number> {
  try {
    await session.run(loop, onEnd);
    const code = await report();
    return session.record.status === 'interrupted' ? signalExitCode(session.signal ?? 'SIGINT') : code;
  } finally {
    session.close();
  }
}
