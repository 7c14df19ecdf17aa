/**
 * The harness's own MPS control daemon: started in a fresh private directory, checked through its
 * control pipe, always shut down with `quit`, and killed by PID (the MPS processes of its own pipe
 * directory, never by name alone) when it will not quit. A daemon the harness did not start is never
 * touched: its pipe directory differs.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import type { ProcessRunner } from '../../core/process.js';
import { isRunning, readProcess } from '../proc/process-table.js';
import {
  checkMpsRootSync,
  MPS_COMM_PREFIX,
  type PreparedMps,
  prepareMpsDirectory,
  removeMpsRemnantSync,
  removeMpsRootSync,
  whyNotOurMpsProcess,
} from './ownership.js';
import { killMpsProcessesSettledSync, mpsProcessesOfSync } from './pipe-processes.js';

const CONTROL = 'nvidia-cuda-mps-control';

/** A running daemon of this harness. */
export interface MpsDaemon {
  /** CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY for every client. */
  readonly env: Record<string, string>;
  readonly controlPid: number | null;
  /** Server PIDs answered by get_server_list (empty until a client has connected). */
  serverPids(): Promise<number[]>;
  /** One control command's answer (e.g. get_server_status 1234 → ACTIVE), or null when it failed. */
  ask(command: string): Promise<string | null>;
  /** Quits the daemon and confirms it is gone; says how it went. Safe to call twice. */
  stop(): Promise<string>;
  /** control.log and server.log as they are now. */
  logs(): Promise<Array<{ name: string; content: string }>>;
  /** Removes the private directory (after logs were saved). */
  removeDirectory(): Promise<void>;
}

export interface MpsOptions {
  /** CUDA_VISIBLE_DEVICES for the daemon: the GPU under test. */
  visibleDevices: string;
  startTimeoutMs: number;
  quitTimeoutMs: number;
  /** Aborts the start: a daemon that has not answered yet is killed, and the start says it was interrupted. */
  signal?: AbortSignal;
}

export type MpsStart =
  | { ok: true; daemon: MpsDaemon }
  | { ok: false; reason: string; logs: Array<{ name: string; content: string }>; interrupted?: boolean };

/**
 * Starts the daemon in `prepared` (recorded in the run's record before it was made, so a harness
 * killed while the daemon starts leaves a record --resume can act on), or in a fresh root.
 */
export async function startMpsDaemon(
  runner: ProcessRunner,
  clock: Clock,
  options: MpsOptions,
  prepared?: PreparedMps,
): Promise<MpsStart> {
  const { root, pipeDirectory: pipeDir, logDirectory: logDir } = prepared ?? (await prepareMpsDirectory('unrecorded'));
  const env = { CUDA_MPS_PIPE_DIRECTORY: pipeDir, CUDA_MPS_LOG_DIRECTORY: logDir };
  const daemonEnv = { ...env, CUDA_VISIBLE_DEVICES: options.visibleDevices };
  const readLogs = () => readMpsLogs(logDir);

  const started = await runner.exec([CONTROL, '-d'], { env: daemonEnv, timeoutMs: options.startTimeoutMs });
  if (started.status !== 'exited' || started.exitCode !== 0) {
    const why =
      started.status === 'exited' ? `exited with ${started.exitCode}: ${started.stderr.trim()}` : started.status;
    const logs = await readLogs();
    removeMpsRootSync(root);
    return { ok: false, reason: `${CONTROL} -d failed (${why})`, logs };
  }

  // The daemon forks away from us; its PID is in the first line it logs.
  let controlPid: number | null = null;
  let answering = false;
  const deadline = clock.monotonicUs() + options.startTimeoutMs * 1000;
  while (clock.monotonicUs() < deadline && !(controlPid !== null && answering) && !options.signal?.aborted) {
    controlPid ??= await pidFromLog(path.join(logDir, 'control.log'));
    if (controlPid !== null) answering = (await control(runner, env, 'get_server_list')).ok;
    if (!(controlPid !== null && answering)) await clock.sleep(100, options.signal);
  }
  if (options.signal?.aborted && !(controlPid !== null && answering)) {
    // A daemon that does not answer yet cannot be asked to quit: killed at once, by its pipe directory.
    const killed = killMpsProcessesSettledSync(pipeDir);
    const logs = await readLogs();
    removeMpsRootSync(root);
    return {
      ok: false,
      interrupted: true,
      reason: `interrupted while the MPS daemon started${killed.length > 0 ? ` (killed PID ${killed.join(', ')})` : ''}`,
      logs,
    };
  }

  const knownServers = new Set<number>();
  let stopped: string | null = null;
  const ours = async (pid: number) => (await readProcess(pid))?.comm.startsWith(MPS_COMM_PREFIX) ?? false;

  const daemon: MpsDaemon = {
    env,
    controlPid,
    async serverPids() {
      const answer = await control(runner, env, 'get_server_list');
      if (answer.ok) for (const pid of parsePids(answer.stdout)) knownServers.add(pid);
      return [...knownServers];
    },
    async ask(command) {
      const answer = await control(runner, env, command);
      return answer.ok ? answer.stdout.trim() : null;
    },
    async stop() {
      if (stopped !== null) return stopped;
      await daemon.serverPids();
      const quit = await control(runner, env, 'quit', options.quitTimeoutMs);
      const known = [...(controlPid !== null ? [controlPid] : []), ...knownServers];
      // Gone: every PID it answered with, and every MPS process of its pipe directory (a server it never listed).
      const alive = async () => [...new Set([...(await runningOf(known)), ...mpsProcessesOfSync(pipeDir)])];
      if (await waitUntil(async () => (await alive()).length === 0, options.quitTimeoutMs, clock)) {
        stopped = quit.ok ? 'quit' : `quit failed (${quit.error}) but the daemon is gone`;
        return stopped;
      }
      const left: number[] = [];
      for (const pid of await alive()) if (await ours(pid)) left.push(pid);
      for (const pid of left) signal(pid, 'SIGTERM');
      if (!(await waitUntil(async () => (await runningOf(left)).length === 0, 2000, clock)))
        for (const pid of left) signal(pid, 'SIGKILL');
      await waitUntil(async () => (await runningOf(left)).length === 0, 2000, clock);
      stopped = `killed by PID (${left.join(', ')}) after quit did not finish within ${options.quitTimeoutMs} ms`;
      return stopped;
    },
    logs: readLogs,
    removeDirectory: async () => removeMpsRootSync(root),
  };

  if (controlPid === null || !answering) {
    const reason =
      controlPid === null
        ? 'the MPS daemon wrote no PID to control.log'
        : 'the MPS daemon did not answer get_server_list';
    await daemon.stop();
    const logs = await readLogs();
    await daemon.removeDirectory();
    return { ok: false, reason: `${reason} within ${options.startTimeoutMs} ms`, logs };
  }
  return { ok: true, daemon };
}

/** What --resume knows of a daemon a killed harness left: run.json's record of it. */
export interface OrphanRecord {
  runId: string;
  /** Null while the record says 'starting': the PID is then read from the daemon's control.log. */
  controlPid: number | null;
  serverPids: number[];
  pipeDirectory: string;
}

/**
 * Stops a daemon this run started before its harness was killed (kill -9), acting only on what is
 * provably its own: the recorded root must be gpushare's with this run's marker, and each PID an MPS
 * process tied to that pipe directory. Quits it through its pipe, kills by PID what is left, saves
 * its logs; `removeRoot` removes the root once the caller has saved them. Anything not proven ours
 * is left alone, and `leftAlone` says why.
 */
export async function stopOrphanDaemon(
  runner: ProcessRunner,
  clock: Clock,
  orphan: OrphanRecord,
  tempRoot?: string,
): Promise<{
  outcome: string;
  controlPid: number | null;
  leftAlone: string[];
  logs: Array<{ name: string; content: string }>;
  removeRoot: () => Promise<void>;
}> {
  const checked = checkMpsRootSync(orphan.pipeDirectory, orphan.runId, tempRoot);
  // A harness killed while it made or removed the root can leave it empty and unmarked: nothing ran there.
  if (!checked.ok && !checked.missing && removeMpsRemnantSync(orphan.pipeDirectory, tempRoot))
    return {
      outcome: 'never started (the empty directory of a start cut short is removed)',
      controlPid: orphan.controlPid,
      leftAlone: [],
      logs: [],
      removeRoot: async () => undefined,
    };
  if (!checked.ok && checked.missing)
    return {
      outcome: 'already gone (its directory was never made, or is removed)',
      controlPid: orphan.controlPid,
      leftAlone: [],
      logs: [],
      removeRoot: async () => undefined,
    };
  if (!checked.ok)
    return {
      outcome: 'left alone',
      controlPid: orphan.controlPid,
      leftAlone: [`${orphan.pipeDirectory} is not provably gpushare's (${checked.reason}): nothing there was touched`],
      logs: [],
      removeRoot: async () => undefined,
    };
  const logDir = checked.logDirectory;
  const readLogs = () => readMpsLogs(logDir);
  const before = await readLogs();
  // A harness killed while the daemon started recorded no PID; the daemon logged it anyway.
  const controlPid = orphan.controlPid ?? parseControlPid(before.find((l) => l.name === 'control.log')?.content ?? '');
  const serverLog = before.find((l) => l.name === 'server.log')?.content ?? '';
  const candidates = [
    ...new Set([
      ...(controlPid !== null ? [controlPid] : []),
      ...orphan.serverPids,
      ...parseServerPids(serverLog),
      ...mpsProcessesOfSync(orphan.pipeDirectory),
    ]),
  ];
  const ours: number[] = [];
  const leftAlone: string[] = [];
  for (const pid of candidates) {
    const why = await whyNotOurMpsProcess(pid, orphan.pipeDirectory, checked.marker);
    if (why === null) ours.push(pid);
    else if (why !== 'not running')
      leftAlone.push(`PID ${pid} left alone: ${why}, so it is not provably the daemon gpushare started`);
  }
  let outcome =
    leftAlone.length > 0
      ? 'none of its processes is running (a recorded PID belongs to another process now)'
      : 'already gone';
  if (ours.length > 0) {
    const env = { CUDA_MPS_PIPE_DIRECTORY: orphan.pipeDirectory, CUDA_MPS_LOG_DIRECTORY: logDir };
    await control(runner, env, 'quit', 5000);
    const gone = async () => (await runningOf(ours)).length === 0;
    if (await waitUntil(gone, 5000, clock)) outcome = 'quit on resume';
    else {
      for (const pid of ours) signal(pid, 'SIGKILL');
      await waitUntil(gone, 2000, clock);
      outcome = `killed by PID (${ours.join(', ')}) on resume`;
    }
  }
  const logs = await readLogs();
  return { outcome, controlPid, leftAlone, logs, removeRoot: async () => removeMpsRootSync(checked.root) };
}

/** Server PIDs from server.log lines "[… Server 1234] …". */
export function parseServerPids(log: string): number[] {
  return [...log.matchAll(/Server\s+(\d+)\]/g)].map((m) => Number(m[1]));
}

/** control.log and server.log of a daemon's log directory, as they are now. */
async function readMpsLogs(logDir: string): Promise<Array<{ name: string; content: string }>> {
  const logs: Array<{ name: string; content: string }> = [];
  for (const name of ['control.log', 'server.log']) {
    const file = path.join(logDir, name);
    if (existsSync(file)) logs.push({ name, content: await readFile(file, 'utf8') });
  }
  return logs;
}

async function control(
  runner: ProcessRunner,
  env: Record<string, string>,
  command: string,
  timeoutMs = 5000,
): Promise<{ ok: true; stdout: string } | { ok: false; error: string }> {
  const result = await runner.exec([CONTROL], { env, input: `${command}\n`, timeoutMs });
  if (result.status === 'exited' && result.exitCode === 0) return { ok: true, stdout: result.stdout };
  return {
    ok: false,
    error:
      result.status === 'exited'
        ? `exit ${result.exitCode}: ${result.stderr.trim() || result.stdout.trim()}`
        : result.status,
  };
}

/** Reads the control daemon's PID from "[… Control   574] Starting control daemon …". */
export function parseControlPid(log: string): number | null {
  const match = /Control\s+(\d+)\]\s+Starting control daemon/.exec(log);
  return match ? Number(match[1]) : null;
}

async function pidFromLog(file: string): Promise<number | null> {
  return existsSync(file) ? parseControlPid(await readFile(file, 'utf8')) : null;
}

export function parsePids(text: string): number[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
}

/** The PIDs of `pids` still running (zombies count as gone). */
async function runningOf(pids: readonly number[]): Promise<number[]> {
  const alive: number[] = [];
  for (const pid of pids) if (await isRunning(pid)) alive.push(pid);
  return alive;
}

/** Polls `condition` every 100 ms until it holds (true) or `timeoutMs` passes (false). */
async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  clock: Clock,
): Promise<boolean> {
  const deadline = clock.monotonicUs() + timeoutMs * 1000;
  for (;;) {
    if (await condition()) return true;
    if (clock.monotonicUs() >= deadline) return false;
    await clock.sleep(100);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Gone already.
  }
}
