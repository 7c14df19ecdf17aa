/** One workload process speaking the protocol: a thin adapter over the JSON-lines child. */
import path from 'node:path';
import { INTERRUPT_SIGNALS, Interrupted, type InterruptSignal } from '../core/errors.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import type { ExitInfo, ProcessRunner } from '../core/process.js';
import { JsonLinesChild, type LineParser } from '../system/proc/json-lines-child.js';
import {
  EXIT_COMMAND,
  parseWorkloadLine,
  type ReadyMessage,
  type ResultMessage,
  START_COMMAND,
  switchCommand,
  type WorkloadMessage,
} from './protocol.js';

/** How long a workload may take to say ready (import, CUDA start-up, build and warm-up) unless told otherwise, s. */
export const READY_TIMEOUT_S = 180;

/** Where gpushare's Python helper (the package gpushare_protocol/) is: the directory that holds it, which `gpushare check --print-helper-path` prints. */
export const HELPER_DIR = WORKLOADS_DIR;

/**
 * A workload's environment: `env`, with the helper's directory first on PYTHONPATH and the caller's
 * PYTHONPATH after it, so that `from gpushare_protocol import serve` works from any directory.
 */
export function workloadEnv(env: Record<string, string>, inherited = process.env.PYTHONPATH): Record<string, string> {
  const rest = env.PYTHONPATH ?? inherited;
  return { ...env, PYTHONPATH: rest ? `${HELPER_DIR}${path.delimiter}${rest}` : HELPER_DIR };
}

/** What waiting on a client gave: the expected message, or why not. */
export type ClientReply<M> =
  | { kind: 'message'; message: M }
  | { kind: 'failed'; reason: string; exitCode: number | null; unsupported?: true }
  | { kind: 'timeout' };

/** Every line is a protocol message; a blank one is ignored, any other is a broken contract. */
const parseLine: LineParser<WorkloadMessage> = (line, tooLong) => {
  if (!line.trim()) return null;
  if (tooLong) return { ok: false, error: `printed a line over 1 MiB starting "${line.slice(0, 80)}…"` };
  return parseWorkloadLine(line);
};

/** One workload process speaking the protocol. */
export class WorkloadClient {
  /** stderr as it stood at the last switch or continuation (see stderrTail). */
  private stderrBeforeSwitch = '';

  private constructor(
    readonly index: number,
    /** How failures name it: its workload and client index (a switch renames it). */
    public label: string,
    private readonly child: JsonLinesChild<WorkloadMessage>,
  ) {}

  static start(
    runner: ProcessRunner,
    index: number,
    label: string,
    argv: readonly string[],
    env: Record<string, string>,
  ): WorkloadClient {
    const box: { client?: WorkloadClient } = {};
    // A holding line is news, not an answer: it marks the held process imported and never reaches a wait.
    const parse: LineParser<WorkloadMessage> = (line, tooLong) => {
      const parsed = parseLine(line, tooLong);
      if (parsed?.ok !== true || parsed.message.event !== 'holding') return parsed;
      if (box.client) box.client.imported = true;
      return null;
    };
    box.client = new WorkloadClient(index, label, JsonLinesChild.spawn(runner, argv, workloadEnv(env), parse));
    return box.client;
  }

  /** A held process (HOLD_ENV) said `holding`: its imports are done and it waits for start, using no core. */
  imported = false;

  get pid(): number | null {
    return this.child.pid;
  }

  /** Whether the process still runs (its exit not yet seen). */
  get running(): boolean {
    return this.child.exit === null;
  }

  /** The end of what the process wrote on stderr since it was started, or since its last switch. */
  stderrTail(): string {
    const all = this.child.stderrTail();
    return all.startsWith(this.stderrBeforeSwitch) ? all.slice(this.stderrBeforeSwitch.length) : all;
  }

  /** The last ready line the process sent (at its start or its last switch); null before one came. */
  lastReady: ReadyMessage | null = null;

  /** A ready line a check looked at (peekReady), for the next awaitReady to take. */
  private peeked: ReadyMessage | null = null;

  async awaitReady(timeoutMs: number, signal: AbortSignal): Promise<ClientReply<ReadyMessage>> {
    const peeked = this.peeked;
    this.peeked = null;
    if (peeked !== null) return { kind: 'message', message: peeked };
    const reply = await this.awaitEvent('ready', timeoutMs, signal);
    const asked = this.switchingTo;
    this.switchingTo = null;
    if (asked !== null) {
      // What a switch answers is about this process, not the GPU: "unsupported" is its failure, not a skip.
      if (reply.kind === 'failed') return this.failure(`could not switch to "${asked.script}": ${reply.reason}`);
      if (reply.kind === 'message' && asked.workload !== null && reply.message.workload !== asked.workload)
        return this.failure(
          `said ready as workload "${reply.message.workload}" after it was asked to switch to "${asked.workload}"`,
        );
    }
    if (reply.kind === 'message') this.lastReady = reply.message;
    return reply;
  }

  /** The switch under way (see switchTo): its script, and the workload its ready line must name (null: not checked). */
  private switchingTo: { script: string; workload: string | null } | null = null;

  /** awaitReady, leaving the ready line for the next awaitReady: a check of a run's own client before the run takes it. */
  async peekReady(timeoutMs: number, signal: AbortSignal): Promise<ClientReply<ReadyMessage>> {
    const reply = await this.awaitReady(timeoutMs, signal);
    if (reply.kind === 'message') this.peeked = reply.message;
    return reply;
  }

  /** Sends a run command and waits for its result. */
  run(command: string, trialId: string, timeoutMs: number, signal: AbortSignal): Promise<ClientReply<ResultMessage>> {
    this.release(command, trialId);
    return this.collect(timeoutMs, signal);
  }

  /** The run command last sent (release) whose result collect awaits: its trial, and whether stdin took it. */
  private released: { trialId: string; sent: boolean } | null = null;

  /** Sends a run command for trial `trialId`; collect waits for its result (a group releases all before collecting any). */
  release(command: string, trialId: string): void {
    this.released = { trialId, sent: this.child.send(command) };
  }

  /** The result of the run command last released, which must name its trial. */
  async collect(timeoutMs: number, signal: AbortSignal): Promise<ClientReply<ResultMessage>> {
    const released = this.released;
    this.released = null;
    if (released === null) throw new Error(`${this.label}: collect() without a release()`);
    if (!released.sent) return this.failure('its stdin is closed');
    const reply = await this.awaitEvent('result', timeoutMs, signal);
    if (reply.kind === 'message' && reply.message.trial !== released.trialId) {
      return this.failure(`answered for trial "${reply.message.trial}" instead of "${released.trialId}"`);
    }
    return reply;
  }

  /** Tells a held process (HOLD_ENV) to start CUDA, build and warm up; false: its stdin is closed (it exited). */
  start(): boolean {
    return this.child.send(START_COMMAND);
  }

  /**
   * Tells a process that said `switches` to serve `argv` (script and arguments) next, as `label`; its
   * next ready line must name `workload` (null: any). false: its stdin is closed.
   */
  switchTo(argv: readonly string[], label: string, workload: string | null = null): boolean {
    this.label = label;
    this.switchingTo = { script: argv[0] ?? '', workload };
    this.stderrBeforeSwitch = this.child.stderrTail(); // the previous workload's: not this one's to show
    return this.child.send(switchCommand(argv));
  }

  /** Goes on serving its workload for another comparison, as `label`: its stderr log starts afresh. */
  continueAs(label: string): void {
    this.label = label;
    this.stderrBeforeSwitch = this.child.stderrTail();
  }

  /** Asks the workload to exit; kills what is left of it after `timeoutMs` (see JsonLinesChild.close). */
  async close(timeoutMs: number): Promise<'exited' | 'killed'> {
    return (await this.child.close(EXIT_COMMAND, timeoutMs)).exited ? 'exited' : 'killed';
  }

  kill(): void {
    this.child.killNow();
  }

  /** unsupported: the workload said it cannot run so on this machine (a skip, not a failure). */
  private failure(reason: string, unsupported = false): ClientReply<never> {
    return {
      kind: 'failed',
      reason: `${this.label} ${reason}`,
      exitCode: this.child.exit?.exitCode ?? null,
      ...(unsupported ? { unsupported: true as const } : {}),
    };
  }

  /** The next message, which must be `event`: anything else it does first is a failure. */
  private async awaitEvent<E extends 'ready' | 'result'>(
    event: E,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ClientReply<Extract<WorkloadMessage, { event: E }>>> {
    const next = await this.child.next(timeoutMs, signal);
    switch (next.kind) {
      case 'aborted':
        throw new Interrupted(interruptOf(signal.reason));
      case 'timeout':
        return { kind: 'timeout' };
      case 'bad-line':
        return this.failure(next.error);
      case 'exit':
        return this.failure(describeExit(next.exit, event, this.stderrTail()));
      case 'message':
        if (next.message.event === event)
          return { kind: 'message', message: next.message as Extract<WorkloadMessage, { event: E }> };
        if (next.message.event === 'error' && next.message.unsupported)
          return this.failure(`cannot run here: ${next.message.message}`, true);
        if (next.message.event === 'error') return this.failure(`reported an error: ${next.message.message}`);
        return this.failure(`sent "${next.message.event}" while the harness waited for "${event}"`);
    }
  }
}

/** The signal an abort names (its reason), SIGINT when it names none. */
function interruptOf(reason: unknown): InterruptSignal {
  return (INTERRUPT_SIGNALS as readonly unknown[]).includes(reason) ? (reason as InterruptSignal) : 'SIGINT';
}

function describeExit(exit: ExitInfo, waitingFor: string, stderr: string): string {
  if (exit.spawnError) return `could not be started: ${exit.spawnError}`;
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
  const lastLine = stderr.trim().split('\n').at(-1)?.slice(0, 300);
  return `${how} before sending "${waitingFor}"${lastLine ? ` (stderr: ${lastLine})` : ''}`;
}
