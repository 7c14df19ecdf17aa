/**
 * One process of workloads/isolation.py playing a role: it prints JSON lines, reads commands, and
 * is stopped (stop command, then what is left of it killed) however its probe ended. A thin adapter
 * over the JSON-lines child.
 */
import type { ExitInfo, ProcessRunner } from '../core/process.js';
import { JsonLinesChild, type LineParser } from '../system/proc/json-lines-child.js';

/** A line a role printed: `event` says which (ready, result, failed, alloc, status). */
export type RoleMessage = { event: string } & Record<string, unknown>;

/** What waiting on a role gave: the message, its exit, or nothing before the deadline. */
export type RoleReply =
  | { kind: 'message'; message: RoleMessage }
  | { kind: 'exited'; exit: ExitInfo; stderr: string }
  | { kind: 'timeout' };

/** A JSON object with an event; anything else is ignored: the role broke its contract, and its exit and stderr will say why. */
const parseLine: LineParser<RoleMessage> = (line) => {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && typeof (value as { event?: unknown }).event === 'string')
      return { ok: true, message: value as RoleMessage };
  } catch {
    // Not JSON.
  }
  return null;
};

const STOP_COMMAND = JSON.stringify({ cmd: 'stop' });

export class RoleProcess {
  private readonly child: JsonLinesChild<RoleMessage>;

  constructor(
    readonly label: string,
    runner: ProcessRunner,
    argv: readonly string[],
    env: Record<string, string>,
  ) {
    this.child = JsonLinesChild.spawn(runner, argv, env, parseLine);
  }

  get pid(): number | null {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.child.exit !== null;
  }

  send(command: Record<string, unknown>): boolean {
    return this.child.send(JSON.stringify(command));
  }

  /** The next message whose event is one of `events` (earlier others are dropped), or why none came. */
  async next(events: readonly string[], timeoutMs: number): Promise<RoleReply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const next = await this.child.next(Math.max(0, deadline - Date.now()));
      if (next.kind === 'message' && events.includes(next.message.event))
        return { kind: 'message', message: next.message };
      if (next.kind === 'exit') return { kind: 'exited', exit: next.exit, stderr: this.child.stderrTail() };
      if (next.kind === 'timeout' || next.kind === 'aborted') return { kind: 'timeout' };
    }
  }

  /** Stops it within `timeoutMs` (see JsonLinesChild.close); returns the PIDs of it still running: none, or a leak. */
  async stop(timeoutMs: number): Promise<number[]> {
    return (await this.child.close(STOP_COMMAND, timeoutMs)).left;
  }

  /** Synchronous kill of its group: for a forced exit. */
  killNow(): void {
    this.child.killNow();
  }
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
    const process = new RoleProcess(label, this.runner, this.argv(role, flags), { ...this.baseEnv, ...env });
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
