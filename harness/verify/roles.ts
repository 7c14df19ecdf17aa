/**
 * The client processes verify starts: roles of workloads/isolation.py (the probe's own measurements:
 * smcap, hog, context, tenant) and of workloads/verify_probe.py (bandwidth). Each prints JSON lines;
 * a role that does not answer as expected is a NotMeasured with the reason, never a crash of verify.
 * Every process started is stopped by `stopAll`, whatever happened.
 */
import path from 'node:path';
import { WORKLOADS_DIR } from '../core/paths.js';
import type { ProcessRunner } from '../core/process.js';
import { JsonLinesChild, type LineParser } from '../system/proc/json-lines-child.js';

export type Message = { event: string } & Record<string, unknown>;

/** A probe did not measure: the row or case says why. */
export class NotMeasured extends Error {}

const parse: LineParser<Message> = (line) => {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && typeof (value as { event?: unknown }).event === 'string')
      return { ok: true, message: value as Message };
  } catch {
    // Not JSON: the role's exit and stderr say why.
  }
  return null;
};

const STOP = JSON.stringify({ cmd: 'stop' });
export const STEP_TIMEOUT_MS = 120_000;

export class Role {
  constructor(
    readonly label: string,
    private readonly child: JsonLinesChild<Message>,
  ) {}

  get pid(): number | null {
    return this.child.pid;
  }

  send(command: Record<string, unknown>): void {
    this.child.send(JSON.stringify(command));
  }

  /** The next message of one of `events`, or NotMeasured saying why none came. */
  async expect(events: readonly string[], timeoutMs = STEP_TIMEOUT_MS): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const next = await this.child.next(Math.max(0, deadline - Date.now()));
      if (next.kind === 'message' && events.includes(next.message.event)) return next.message;
      if (next.kind === 'message' && next.message.event === 'failed')
        throw new NotMeasured(`${this.label} failed: ${String(next.message.error ?? '')}`);
      if (next.kind === 'exit') {
        const tail = this.child.stderrTail().trim().split('\n').pop() ?? '';
        throw new NotMeasured(
          `${this.label} exited (${next.exit.spawnError ?? `code ${next.exit.exitCode ?? next.exit.signal}`}) before ${events.join('/')}${tail ? `: ${tail}` : ''}`,
        );
      }
      if (next.kind === 'timeout' || next.kind === 'aborted')
        throw new NotMeasured(`${this.label} printed no ${events.join('/')} within ${timeoutMs / 1000} s`);
    }
  }

  async stop(timeoutMs: number): Promise<number[]> {
    return (await this.child.close(STOP, timeoutMs)).left;
  }

  killNow(): void {
    this.child.killNow();
  }
}

/** Starts roles with a base environment and stops them all at the end. */
export class Roles {
  private readonly started: Role[] = [];

  constructor(
    private readonly runner: ProcessRunner,
    private readonly python: string,
    private readonly baseEnv: Record<string, string>,
  ) {}

  /** A role of isolation.py (the probe's) or, for `bandwidth`, of verify_probe.py. */
  start(label: string, role: string, flags: readonly string[], env: Record<string, string>): Role {
    const script = role === 'bandwidth' ? 'verify_probe.py' : 'isolation.py';
    const child = JsonLinesChild.spawn(
      this.runner,
      [this.python, path.join(WORKLOADS_DIR, script), role, ...flags],
      { ...this.baseEnv, ...env },
      parse,
    );
    const r = new Role(label, child);
    this.started.push(r);
    return r;
  }

  async stopAll(timeoutMs = 10_000): Promise<number[]> {
    const left = (await Promise.all(this.started.splice(0).map((r) => r.stop(timeoutMs)))).flat();
    return left;
  }

  killNow(): void {
    for (const r of this.started) r.killNow();
  }
}

export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : Number.NaN);
