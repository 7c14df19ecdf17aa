/**
 * One process of workloads/isolation.py playing a role: it prints JSON lines, reads commands, and
 * is stopped (stop command, then its process group killed) however its probe ended.
 */
import type { ChildHandle, ExitInfo, ProcessRunner } from '../proc/runner.js';
import { isRunning } from '../proc/process-table.js';

/** A line a role printed: `event` says which (ready, result, failed, alloc, status). */
export type RoleMessage = { event: string } & Record<string, unknown>;

/** What waiting on a role gave: the message, its exit, or nothing before the deadline. */
export type RoleReply = { kind: 'message'; message: RoleMessage } | { kind: 'exited'; exit: ExitInfo; stderr: string } | { kind: 'timeout' };

export class RoleProcess {
  private readonly messages: RoleMessage[] = [];
  private exit: ExitInfo | null = null;
  private wake: (() => void) | null = null;

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

  /** Asks it to stop and waits up to `timeoutMs`; kills its process group either way. Its last lines stay readable. */
  async stop(timeoutMs: number): Promise<'exited' | 'killed'> {
    if (this.exit === null) {
      this.send({ cmd: 'stop' });
      this.child.closeStdin();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.child.exited, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer); // a pending timer would keep the harness alive after its last probe
    }
    const exited = this.exit !== null;
    this.child.killGroup('SIGKILL');
    await this.child.exited;
    return exited ? 'exited' : 'killed';
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
    if (typeof value === 'object' && value !== null && typeof (value as { event?: unknown }).event === 'string') return value as RoleMessage;
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
    const process = new RoleProcess(label, this.runner.spawn(this.argv(role, flags), { env: { ...this.baseEnv, ...env } }));
    this.roles.push(process);
    return process;
  }

  /** Stops every process (in parallel) and returns the PIDs still running afterwards: none, or a leak. */
  async stopAll(timeoutMs: number): Promise<number[]> {
    await Promise.all(this.roles.map((r) => r.stop(timeoutMs)));
    const left: number[] = [];
    for (const r of this.roles) if (r.pid !== null && (await isRunning(r.pid))) left.push(r.pid);
    return left;
  }

  killNow(): void {
    for (const r of this.roles) r.killNow();
  }
}
