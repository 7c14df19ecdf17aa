/**
 * One process of workloads/isolation.py playing a role: it prints JSON lines, reads commands, and
 * is stopped (stop command, then its process group killed) however its probe ended.
 */
import type { ChildHandle, ExitInfo, ProcessRunner } from '../core/process.js';
import { descendants, isRunning, processStartTicks } from '../system/proc/process-table.js';

/** A line a role printed: `event` says which (ready, result, failed, alloc, status). */
export type RoleMessage = { event: string } & Record<string, unknown>;

/** What waiting on a role gave: the message, its exit, or nothing before the deadline. */
export type RoleReply =
  | { kind: 'message'; message: RoleMessage }
  | { kind: 'exited'; exit: ExitInfo; stderr: string }
  | { kind: 'timeout' };

export class RoleProcess {
  private readonly messages: RoleMessage[] = [];
  private exit: ExitInfo | null = null;
  private wake: (() => void) | null = null;
  /** PIDs a stop found still running, kept for every later stop to report again. */
  private leaked: number[] = [];

  constructor(
    readonly label: string,
    private readonly child: ChildHandle,
  ) {
    child.onLine((line) => {
      const message = parseLine(line);
      if (message) this.push(message);
    });
    void child.exited.then((exit) => {
      this.exit = exit;
      this.wake?.();
    });
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  get exited(): boolean {
    return this.exit !== null;
  }

  send(command: Record<string, unknown>): boolean {
    return this.child.writeLine(JSON.stringify(command));
  }

  /** The next message whose event is one of `events` (earlier others are dropped), or why none came. */
  async next(events: readonly string[], timeoutMs: number): Promise<RoleReply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex((m) => events.includes(m.event));
      if (i !== -1) {
        const [message] = this.messages.splice(0, i + 1).slice(-1);
        return { kind: 'message', message: message as RoleMessage };
      }
      if (this.exit !== null) return { kind: 'exited', exit: this.exit, stderr: this.child.stderrTail() };
      const left = deadline - Date.now();
      if (left <= 0) return { kind: 'timeout' };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /**
   * Asks it to stop and waits up to `timeoutMs`; then kills its process group and every descendant
   * seen before (one that left the group with setsid()). Returns the PIDs of those still running a
   * moment later: none, or a leak (a process stuck in the driver cannot even be killed). Bounded:
   * it never waits on a pipe that a stray descendant holds open.
   */
  async stop(timeoutMs: number): Promise<number[]> {
    const spawned = this.child.pid !== undefined && this.exit === null ? await descendants(this.child.pid) : [];
    if (this.exit === null) {
      this.send({ cmd: 'stop' });
      this.child.closeStdin();
      await raceDelay(this.child.exited, timeoutMs);
    }
    this.child.killGroup('SIGKILL');
    for (const { pid, startTicks } of spawned) if ((await processStartTicks(pid)) === startTicks) killQuietly(pid);
    await raceDelay(this.child.exited, 2000);
    const left: number[] = [];
    const leader = this.child.pid;
    if (leader !== undefined && this.exit === null && (await isRunning(leader))) left.push(leader);
    for (const { pid, startTicks } of spawned) if ((await processStartTicks(pid)) === startTicks) left.push(pid);
    this.leaked = [...new Set([...this.leaked, ...left])];
    return this.leaked;
  }

  /** Synchronous kill of its group: for a forced exit. */
  killNow(): void {
    this.child.killGroup('SIGKILL');
  }

  private push(message: RoleMessage): void {
    this.messages.push(message);
    this.wake?.();
  }
}

function parseLine(line: string): RoleMessage | null {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && typeof (value as { event?: unknown }).event === 'string')
      return value as RoleMessage;
  } catch {
    // Not JSON: the role broke its contract; its exit and stderr will say why.
  }
  return null;
}

/** Every process a probe started, so none outlives it. */
export class Cast {
  private readonly roles: RoleProcess[] = [];

  constructor(
    private readonly runner: ProcessRunner,
    private readonly argv: (role: string, flags: readonly string[]) => string[],
    private readonly baseEnv: Record<string, string>,
  ) {}

  start(label: string, role: string, flags: readonly string[] = [], env: Record<string, string> = {}): RoleProcess {
    const process = new RoleProcess(
      label,
      this.runner.spawn(this.argv(role, flags), { env: { ...this.baseEnv, ...env } }),
    );
    this.roles.push(process);
    return process;
  }

  /** Stops every process (in parallel) and returns the PIDs still running afterwards: none, or a leak. */
  async stopAll(timeoutMs: number): Promise<number[]> {
    return (await Promise.all(this.roles.map((r) => r.stop(timeoutMs)))).flat();
  }

  killNow(): void {
    for (const r of this.roles) r.killNow();
  }
}

/** Waits for `promise` or `ms`, whichever comes first; the timer never keeps the process alive. */
async function raceDelay(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
}
