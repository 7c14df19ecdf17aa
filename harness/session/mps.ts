/**
 * A run's MPS daemons, owned by the run: each recorded (and saved) before it starts, its forced-exit
 * killer registered, its logs saved beside the run and its private directory removed when it stops;
 * those a killed harness or an error left running stopped on --resume or at the end; and, on a forced
 * exit, killed by their pipe directories with their logs salvaged. The lifecycle (lifecycle.ts) owns
 * one of these per run.
 */
import type { AppDeps } from '../core/deps.js';
import type { Interrupted, InterruptSignal } from '../core/errors.js';
import { daemonMayRun, type MpsDaemonRecord } from '../record/daemon-record.js';
import type { RecordWriter } from '../record/store.js';
import { type MpsDaemon, startMpsDaemon, stopOrphanDaemon } from '../system/mps/daemon.js';
import {
  chooseMpsDirectory,
  type MpsPaths,
  makeMpsDirectory,
  type PreparedMps,
  removeRecordedMpsRootSync,
} from '../system/mps/ownership.js';
import { killMpsProcessesSettledSync, killMpsProcessesSync } from '../system/mps/pipe-processes.js';
import { salvageMpsLogsSync } from '../system/mps/salvage.js';
import type { Reaper } from '../system/proc/reaper.js';

/** A daemon of a run, its record kept up to date in the run's record. */
export interface SessionDaemon {
  /** CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY for every client. */
  readonly env: Record<string, string>;
  serverPids(): Promise<number[]>;
  ask(command: string): Promise<string | null>;
  /** Quits it, saves its logs, removes its directory and records how it went; safe to call twice. */
  stop(): Promise<string>;
}

export type SessionMpsStart =
  | { ok: true; daemon: SessionDaemon }
  | { ok: false; reason: string; logs: Array<{ name: string; content: string }> };

/** How long a daemon may take to answer, and to quit, ms. */
const MPS_START_TIMEOUT_MS = 15_000;
const MPS_QUIT_TIMEOUT_MS = 10_000;

/** What a run's daemons need of the run: its id, directory and files, its record's daemons, and how it saves. */
export interface MpsRun {
  readonly runId: string;
  readonly dir: string;
  readonly files: RecordWriter;
  readonly deps: Pick<AppDeps, 'runner' | 'clock'>;
  readonly reaper: Reaper;
  readonly abort: AbortSignal;
  /** The record's MPS daemon records, as live objects of it. */
  daemons(): MpsDaemonRecord[];
  /** Adds a warning to the record. */
  warn(warning: string): void;
  save(): Promise<void>;
  interrupted(): Interrupted;
}

/** The MPS daemons of one run (see the module's comment). */
export class RunDaemons {
  constructor(private readonly run: MpsRun) {}

  /**
   * A fresh MPS daemon for this run. Its private directory is put in the record (by `place`) and saved,
   * and its forced-exit killer registered, before `nvidia-cuda-mps-control -d` runs: a harness killed
   * at any moment leaves a record that --resume acts on. Its logs go to `logDirectory` when it stops.
   */
  async start(
    place: (daemon: MpsDaemonRecord) => void,
    visibleDevices: string,
    logDirectory = 'mps',
    // Chosen by the caller when a client must be told the directory before the daemon exists (verify).
    paths: MpsPaths = chooseMpsDirectory(),
  ): Promise<SessionMpsStart> {
    const run = this.run;
    if (run.abort.aborted) throw run.interrupted();
    // Recorded before it is even made: a harness killed at any moment leaves no root its record lacks.
    const pipe = paths.pipeDirectory;
    const daemonRecord: MpsDaemonRecord = {
      controlPid: null,
      serverPids: [],
      logFiles: [],
      pipeDirectory: pipe,
      shutdown: 'starting',
      ...(logDirectory !== 'mps' ? { logDirectory } : {}),
    };
    place(daemonRecord);
    const forget = run.reaper.add(() => killMpsProcessesSync(pipe));
    let prepared: PreparedMps;
    try {
      await run.save();
      prepared = await makeMpsDirectory(paths, run.runId, run.dir);
    } catch (error) {
      forget();
      Object.assign(daemonRecord, { pipeDirectory: null, shutdown: 'not started' });
      throw error;
    }
    const started = await startMpsDaemon(
      run.deps.runner,
      run.deps.clock,
      {
        visibleDevices,
        startTimeoutMs: MPS_START_TIMEOUT_MS,
        quitTimeoutMs: MPS_QUIT_TIMEOUT_MS,
        signal: run.abort,
      },
      prepared,
    );
    if (!started.ok) {
      forget();
      Object.assign(daemonRecord, {
        pipeDirectory: null,
        shutdown: started.interrupted ? `stopped: ${started.reason}` : 'not started',
        logFiles: await this.saveLogs(started.logs, logDirectory, ''),
      });
      await run.save();
      if (started.interrupted) throw run.interrupted();
      return { ok: false, reason: started.reason, logs: started.logs };
    }
    const daemon = started.daemon;
    Object.assign(daemonRecord, { controlPid: daemon.controlPid, shutdown: 'running' });
    await run.save();
    const managed = this.managed(daemon, daemonRecord, logDirectory, forget);
    // Up just as the first signal came: no client will use it.
    if (run.abort.aborted) {
      await managed.stop();
      throw run.interrupted();
    }
    return { ok: true, daemon: managed };
  }

  private managed(
    daemon: MpsDaemon,
    daemonRecord: MpsDaemonRecord,
    logDirectory: string,
    forget: () => void,
  ): SessionDaemon {
    let stopped: Promise<string> | null = null;
    const stop = async () => {
      const serverPids = await daemon.serverPids();
      const shutdown = await daemon.stop();
      forget();
      // Logs that cannot be saved (a full disk) keep the record "running": the end of the run, or
      // --resume, saves them from the private directory later.
      const logFiles = await this.saveLogs(await daemon.logs(), logDirectory, '');
      Object.assign(daemonRecord, { serverPids, shutdown, logFiles });
      await daemon.removeDirectory();
      await this.run.save();
      return shutdown;
    };
    return {
      env: daemon.env,
      serverPids: () => daemon.serverPids(),
      ask: (command) => daemon.ask(command),
      stop: () => {
        stopped ??= stop();
        return stopped;
      },
    };
  }

  private async saveLogs(
    logs: Array<{ name: string; content: string }>,
    logDirectory: string,
    prefix: string,
  ): Promise<string[]> {
    const files: string[] = [];
    for (const log of logs) {
      const file = `${logDirectory}/${prefix}${log.name}`;
      await this.run.files.writeText(file, log.content);
      files.push(file);
    }
    return files;
  }

  /**
   * The record's daemons that may still run, each with its private directory, one at a time. One that
   * quit and was recorded so, but whose directory a killed harness left, has it removed instead (only
   * a root provably this run's, as everywhere).
   */
  private *mayRun(): Generator<[MpsDaemonRecord, string]> {
    for (const daemon of this.run.daemons()) {
      if (daemon.pipeDirectory === null) continue;
      if (daemonMayRun(daemon)) yield [daemon, daemon.pipeDirectory];
      else removeRecordedMpsRootSync(daemon.pipeDirectory, this.run.runId);
    }
  }

  /**
   * Stops every MPS daemon the record still lists as running or starting (left by a killed harness,
   * or by an error that cut the run's own shutdown short), acting only on what is provably this
   * run's; saves its logs as `<prefix>-*.log` and removes its private directory once they are saved.
   */
  async stopLeft(prefix: string, leftBy: string): Promise<void> {
    const run = this.run;
    for (const [daemon, pipeDirectory] of this.mayRun()) {
      const orphan = await stopOrphanDaemon(run.deps.runner, run.deps.clock, {
        runId: run.runId,
        controlPid: daemon.controlPid,
        serverPids: daemon.serverPids,
        pipeDirectory,
      });
      const logFiles = await this.saveLogs(orphan.logs, daemon.logDirectory ?? 'mps', `${prefix}-`).catch(() => null);
      if (logFiles !== null) {
        await orphan.removeRoot();
        Object.assign(daemon, {
          controlPid: orphan.controlPid,
          shutdown: `daemon of ${leftBy}: ${orphan.outcome}`,
          logFiles,
        });
      } else daemon.controlPid = orphan.controlPid;
      if (orphan.outcome !== 'left alone')
        run.warn(`MPS daemon ${orphan.controlPid ?? '(no PID logged)'} left by ${leftBy}: ${orphan.outcome}`);
      for (const warning of orphan.leftAlone) run.warn(warning);
    }
  }

  /**
   * On a forced exit (a second signal, or the process ending while the run is live): kills every daemon
   * the record lists by its pipe directory and salvages its logs, synchronously; the caller saves.
   */
  killSync(signal: InterruptSignal | null): void {
    const run = this.run;
    for (const [daemon, pipeDirectory] of this.mayRun()) {
      killMpsProcessesSettledSync(pipeDirectory);
      const logFiles = salvageMpsLogsSync(pipeDirectory, run.runId, run.dir, daemon.logDirectory);
      // Not salvaged: the record keeps it running, for --resume to stop and clean up.
      if (logFiles === null) continue;
      Object.assign(daemon, {
        shutdown: `killed by PID on a forced exit (${signal !== null ? `a second ${signal}` : 'the process exited'})`,
        logFiles,
      });
    }
  }
}
