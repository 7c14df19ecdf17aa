import path from 'node:path';
import { Interrupted } from '../core/errors.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import type { ChildHandle, ExitInfo, ProcessRunner } from '../core/process.js';
import { descendants, processStartTicks } from '../system/proc/process-table.js';
import {
  EXIT_COMMAND,
  parseWorkloadLine,
  type ReadyMessage,
  type ResultMessage,
  type WorkloadMessage,
} from './protocol.js';

/** How long a workload may take to say ready (import, CUDA start-up, build and warm-up) unless told otherwise, s. */
export const READY_TIMEOUT_S = 180;

/** Where gpushare's Python helper (gpushare_protocol.py) is: `gpushare check --print-helper-path` prints it. */
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
  | { kind: 'failed'; reason: string; exitCode: number | null }
  | { kind: 'timeout' };

type QueueItem =
  | { kind: 'message'; message: WorkloadMessage }
  | { kind: 'bad-line'; error: string }
  | { kind: 'exit'; exit: ExitInfo };

/** One workload process speaking the protocol. */
export class WorkloadClient {
  private readonly queue: QueueItem[] = [];
  private wake: (() => void) | null = null;
  private exitInfo: ExitInfo | null = null;

  private constructor(
    readonly index: number,
    readonly label: string,
    private readonly child: ChildHandle,
  ) {
    child.onLine((line, tooLong) => {
      if (!line.trim()) return;
      const parsed = tooLong
        ? { ok: false as const, error: `printed a line over 1 MiB starting "${line.slice(0, 80)}…"` }
        : parseWorkloadLine(line);
      this.push(parsed.ok ? { kind: 'message', message: parsed.message } : { kind: 'bad-line', error: parsed.error });
    });
    void child.exited.then((exit) => {
      this.exitInfo = exit;
      this.push({ kind: 'exit', exit });
    });
  }

  static start(
    runner: ProcessRunner,
    index: number,
    label: string,
    argv: readonly string[],
    env: Record<string, string>,
  ): WorkloadClient {
    return new WorkloadClient(index, label, runner.spawn(argv, { env: workloadEnv(env) }));
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  stderrTail(): string {
    return this.child.stderrTail();
  }

  awaitReady(timeoutMs: number, signal: AbortSignal): Promise<ClientReply<ReadyMessage>> {
    return this.awaitEvent('ready', timeoutMs, signal);
  }

  /** Sends a run command and waits for its result. */
  async run(
    command: string,
    trialId: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ClientReply<ResultMessage>> {
    if (!this.child.writeLine(command)) return this.failure('its stdin is closed');
    const reply = await this.awaitEvent('result', timeoutMs, signal);
    if (reply.kind === 'message' && reply.message.trial !== trialId) {
      return this.failure(`answered for trial "${reply.message.trial}" instead of "${trialId}"`);
    }
    return reply;
  }

  /**
   * Asks the workload to exit; kills its process group if it has not within `timeoutMs`, and any
   * descendant that left the group with setsid() (seen while the workload still ran).
   */
  async close(timeoutMs: number): Promise<'exited' | 'killed'> {
    if (this.exitInfo) return 'exited';
    // Before it exits: once it has, its setsid() children are reparented and no longer findable.
    const spawned = this.child.pid !== undefined ? await descendants(this.child.pid) : [];
    this.child.writeLine(EXIT_COMMAND);
    this.child.closeStdin();
    const exited = await Promise.race([this.child.exited.then(() => true), delay(timeoutMs).then(() => false)]);
    // The group may hold children of the workload even when the leader exited.
    this.child.killGroup('SIGKILL');
    for (const { pid, startTicks } of spawned) {
      // The same start time: still the workload's descendant, not a reused PID.
      if ((await processStartTicks(pid)) === startTicks) killQuietly(pid);
    }
    if (!exited) await this.child.exited;
    return exited ? 'exited' : 'killed';
  }

  kill(): void {
    this.child.killGroup('SIGKILL');
  }

  private push(item: QueueItem): void {
    this.queue.push(item);
    this.wake?.();
  }

  private failure(reason: string): ClientReply<never> {
    return { kind: 'failed', reason: `${this.label} ${reason}`, exitCode: this.exitInfo?.exitCode ?? null };
  }

  private async awaitEvent<E extends 'ready' | 'result'>(
    event: E,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<ClientReply<Extract<WorkloadMessage, { event: E }>>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (signal.aborted) throw new Interrupted(signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT');
      const item = this.queue.shift();
      if (item) {
        switch (item.kind) {
          case 'bad-line':
            return this.failure(item.error);
          case 'exit':
            return this.failure(describeExit(item.exit, event, this.stderrTail()));
          case 'message':
            if (item.message.event === event)
              return { kind: 'message', message: item.message as Extract<WorkloadMessage, { event: E }> };
            if (item.message.event === 'error') return this.failure(`reported an error: ${item.message.message}`);
            return this.failure(`sent "${item.message.event}" while the harness waited for "${event}"`);
        }
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) return { kind: 'timeout' };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, remaining);
        const onAbort = () => done();
        signal.addEventListener('abort', onAbort, { once: true });
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve();
        }
        this.wake = done;
      });
      this.wake = null;
    }
  }
}

function describeExit(exit: ExitInfo, waitingFor: string, stderr: string): string {
  if (exit.spawnError) return `could not be started: ${exit.spawnError}`;
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
  const lastLine = stderr.trim().split('\n').at(-1)?.slice(0, 300);
  return `${how} before sending "${waitingFor}"${lastLine ? ` (stderr: ${lastLine})` : ''}`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}
