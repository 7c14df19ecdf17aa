/**
 * A long-lived child spoken to in JSON lines (workload clients, probe roles): one queue of what it
 * said, one wait with a deadline, one way to end it. Ending it reaches what it started too: its
 * process group, and every descendant seen before that left the group with setsid().
 */
import type { ChildHandle, ExitInfo, ProcessRunner } from '../../core/process.js';
import { KILLED_GRACE_MS, runningAfter, signalSeen } from './end-processes.js';
import { descendants, isRunning } from './process-table.js';

/** How a line parses: a message, a line that breaks the contract (why), or null for one to ignore. */
export type LineParser<M> = (
  line: string,
  tooLong: boolean,
) => { ok: true; message: M } | { ok: false; error: string } | null;

/** What the child did next: a message, a line it should not have printed, or its exit (once its lines are read). */
export type ChildEvent<M> =
  | { kind: 'message'; message: M }
  | { kind: 'bad-line'; error: string }
  | { kind: 'exit'; exit: ExitInfo };

/** How a close went: whether it exited when asked, and the PIDs still running after it (a leak: none, normally). */
export interface ChildClose {
  exited: boolean;
  left: number[];
}

export class JsonLinesChild<M> {
  private readonly queue: Array<ChildEvent<M>> = [];
  private exitInfo: ExitInfo | null = null;
  private wake: (() => void) | null = null;
  /** PIDs a close found still running, kept for every later close to report again. */
  private leaked: number[] = [];

  constructor(
    private readonly child: ChildHandle,
    parse: LineParser<M>,
  ) {
    child.onLine((line, tooLong) => {
      const parsed = parse(line, tooLong);
      if (parsed === null) return;
      this.queue.push(
        parsed.ok ? { kind: 'message', message: parsed.message } : { kind: 'bad-line', error: parsed.error },
      );
      this.wake?.();
    });
    void child.exited.then((exit) => {
      this.exitInfo = exit;
      this.wake?.();
    });
  }

  static spawn<M>(
    runner: ProcessRunner,
    argv: readonly string[],
    env: Record<string, string>,
    parse: LineParser<M>,
  ): JsonLinesChild<M> {
    return new JsonLinesChild(runner.spawn(argv, { env }), parse);
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  /** How it exited, or null while it runs. */
  get exit(): ExitInfo | null {
    return this.exitInfo;
  }

  /** The last bytes it wrote to stderr. */
  stderrTail(): string {
    return this.child.stderrTail();
  }

  /** Writes one line to its stdin; false when stdin is already closed. */
  send(line: string): boolean {
    return this.child.writeLine(line);
  }

  /**
   * The next thing it did, in order: a message, a bad line, or, once every line is read, its exit
   * (again on every later call). `timeout` when nothing came within `timeoutMs`; `aborted` when
   * `signal` fired first.
   */
  async next(timeoutMs: number, signal?: AbortSignal): Promise<ChildEvent<M> | { kind: 'timeout' | 'aborted' }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (signal?.aborted) return { kind: 'aborted' };
      const event = this.queue.shift();
      if (event) return event;
      if (this.exitInfo !== null) return { kind: 'exit', exit: this.exitInfo };
      const left = deadline - Date.now();
      if (left <= 0) return { kind: 'timeout' };
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, left);
        signal?.addEventListener('abort', done, { once: true });
        this.wake = done;
      });
      this.wake = null;
    }
  }

  /**
   * Asks it to end (`stopLine`, then stdin closed) and waits up to `timeoutMs`; then kills its process
   * group and every descendant seen before (one that left the group with setsid()). Bounded: it never
   * waits on a pipe that a stray descendant holds open.
   */
  async close(stopLine: string, timeoutMs: number): Promise<ChildClose> {
    // Before it exits: once it has, its setsid() children are reparented and no longer findable.
    const spawned = this.child.pid !== undefined && this.exitInfo === null ? await descendants(this.child.pid) : [];
    let exited = this.exitInfo !== null;
    if (!exited) {
      this.send(stopLine);
      this.child.closeStdin();
      exited = await within(
        this.child.exited.then(() => true),
        timeoutMs,
        false,
      );
    }
    // The group may hold children of the child even when the leader exited.
    this.child.killGroup('SIGKILL');
    // Only while each is still the process seen: never a reused PID.
    await signalSeen(spawned, 'SIGKILL');
    const graceEnd = Date.now() + KILLED_GRACE_MS;
    await within(this.child.exited, KILLED_GRACE_MS, undefined);
    // A killed process takes a moment to die: polled, within the same grace.
    const stillOurs = await runningAfter(spawned, Math.max(0, graceEnd - Date.now()));
    const left: number[] = [];
    const leader = this.child.pid;
    if (leader !== undefined && this.exitInfo === null && (await isRunning(leader))) left.push(leader);
    left.push(...stillOurs.map((p) => p.pid));
    this.leaked = [...new Set([...this.leaked, ...left])];
    return { exited, left: this.leaked };
  }

  /** Kills its process group at once, synchronously: for a forced exit. */
  killNow(): void {
    this.child.killGroup('SIGKILL');
  }
}

/** `promise`'s value, or `fallback` after `ms`; the timer never keeps the process alive. */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const value = await Promise.race([
    promise,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback), ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  return value;
}
