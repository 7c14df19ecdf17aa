/**
 * One copy of the user's inference server as a member of a WorkloadGroup: started from its command
 * line (its own process group, killed with the harness), ready once its ready path answers 200, and
 * released with a load (a schedule for a duration) that gpushare's generator drives against it from
 * the release time; its answer is the load run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../core/clock.js';
import { Interrupted } from '../core/errors.js';
import type { ChildHandle, ExitInfo, ProcessRunner } from '../core/process.js';
import { mulberry32 } from '../core/random.js';
import type { RequestSpec } from '../load/request.js';
import { type LoadResult, runLoad } from '../load/run.js';
import type { Schedule } from '../load/schedule.js';
import type { CollectReply, GroupMember, MemberReply } from '../workload/group.js';

/** What a release sends a copy: its load, from the release time. */
export interface LoadCommand {
  startAtUs: number;
  schedule: Schedule;
  durationMs: number;
}

/** What a copy said when ready: the model it serves (the first of /v1/models, when it lists one). */
export interface ServerReady {
  model: string | null;
  readyMs: number;
}

export interface ServerSpec {
  index: number;
  label: string;
  /** The command line, placeholders filled. */
  command: string;
  env: Record<string, string>;
  port: number;
  readyPath: string;
  request: Omit<RequestSpec, 'baseUrl' | 'model'>;
  /** The longest prompt of a uniform range from request.inputTokens, or null: every prompt that long. */
  inputTokensMax: number | null;
  /** Cores to pin it to (taskset -c), or null. */
  cpus: string | null;
}

const POLL_MS = 200;
const LOG_LINES = 20;

/** GET `url`: its status and body, or null when nothing answered within `timeoutMs`. */
async function get(url: string, timeoutMs: number): Promise<{ status: number; body: string } | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: await res.text() };
  } catch {
    return null;
  }
}

export class ServerMember implements GroupMember<LoadCommand, LoadResult, ServerReady> {
  private child: ChildHandle | null = null;
  private exit: ExitInfo | null = null;
  private readonly lines: string[] = [];
  private pending: Promise<LoadResult> | null = null;
  /** Stops the load under way: on an interrupt, or when its answer is not awaited any longer. */
  private load: AbortController | null = null;
  private model: string | null = null;

  constructor(
    private readonly runner: ProcessRunner,
    private readonly clock: Clock,
    readonly spec: ServerSpec,
  ) {}

  get label(): string {
    return this.spec.label;
  }

  /** How it ended, or null while it runs. */
  get ended(): ExitInfo | null {
    return this.exit;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.spec.port}`;
  }

  start(): void {
    if (this.child !== null) return;
    const shell = ['sh', '-c', `exec ${this.spec.command}`];
    const argv = this.spec.cpus !== null ? ['taskset', '-c', this.spec.cpus, ...shell] : shell;
    this.child = this.runner.spawn(argv, { env: this.spec.env });
    this.child.onLine((line) => {
      this.lines.push(line);
      if (this.lines.length > LOG_LINES) this.lines.shift();
    });
    void this.child.exited.then((info) => {
      this.exit = info;
    });
  }

  async ready(timeoutMs: number, signal: AbortSignal): Promise<MemberReply<ServerReady>> {
    const startMs = this.clock.monotonicUs() / 1000;
    const url = new URL(this.spec.readyPath, this.baseUrl).toString();
    for (;;) {
      if (signal.aborted) throw new Interrupted('SIGINT');
      const exit = this.exit ?? (await Promise.race([this.child?.exited, sleep(0).then(() => null)]));
      if (exit) return { kind: 'failed', reason: this.exitText(exit, 'before it was ready'), exitCode: exit.exitCode };
      const answer = await get(url, 2000);
      if (answer?.status === 200) {
        this.model = servedModel(answer.body);
        return { kind: 'message', message: { model: this.model, readyMs: this.clock.monotonicUs() / 1000 - startMs } };
      }
      if (this.clock.monotonicUs() / 1000 - startMs > timeoutMs) return { kind: 'timeout' };
      await sleep(POLL_MS);
    }
  }

  release(command: LoadCommand): void {
    const request: RequestSpec = { ...this.spec.request, baseUrl: this.baseUrl, model: this.model ?? 'default' };
    const waitMs = Math.max(0, (command.startAtUs - this.clock.monotonicUs()) / 1000);
    const hi = this.spec.inputTokensMax;
    const inputTokensOf = hi === null ? undefined : (i: number) => promptLength(this.spec.request.inputTokens, hi, i);
    const load = new AbortController();
    this.load = load;
    this.pending = sleep(waitMs).then(() =>
      runLoad({
        request,
        schedule: command.schedule,
        durationMs: command.durationMs,
        inputTokensOf,
        signal: load.signal,
      }),
    );
  }

  async collect(timeoutMs: number, signal: AbortSignal): Promise<CollectReply<LoadResult>> {
    const pending = this.pending;
    if (pending === null) return { kind: 'malformed', problem: 'collected before a release' };
    this.pending = null;
    let onAbort: () => void = () => undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    // Deadlines are unref'd: a timer still pending must not hold the process open once the run is done.
    const outcome = await Promise.race([pending, sleep(timeoutMs, 'timeout' as const, { ref: false }), aborted]);
    signal.removeEventListener('abort', onAbort);
    // A load no one waits for stops sending and cuts its requests: nothing of it outlives the window.
    if (outcome === 'aborted' || outcome === 'timeout') this.load?.abort();
    if (outcome === 'aborted') throw new Interrupted('SIGINT');
    if (outcome === 'timeout') return { kind: 'timeout' };
    if (this.exit)
      return { kind: 'failed', reason: this.exitText(this.exit, 'during the window'), exitCode: this.exit.exitCode };
    return { kind: 'message', message: outcome };
  }

  async stop(timeoutMs: number): Promise<'exited' | 'killed'> {
    const child = this.child;
    if (child === null) return 'exited';
    this.load?.abort();
    // The group even when its leader has exited: an engine's workers (vLLM's engine core, TGI's shards)
    // outlive a crashed leader and hold GPU memory through every later group.
    child.killGroup('SIGTERM');
    if (this.exit !== null) {
      child.killGroup('SIGKILL');
      return 'exited';
    }
    const ended = await Promise.race([child.exited.then(() => true), sleep(timeoutMs, false, { ref: false })]);
    // Whatever of its group is left once the leader is gone, or once it ran out of time.
    child.killGroup('SIGKILL');
    if (ended) return 'exited';
    await child.exited;
    return 'killed';
  }

  kill(): void {
    this.child?.killGroup('SIGKILL');
  }

  /** The end of its log: stderr, then its last stdout lines. */
  stderrTail(): string {
    const err = this.child?.stderrTail() ?? '';
    return [err.trimEnd(), ...this.lines].filter((l) => l !== '').join('\n');
  }

  private exitText(exit: ExitInfo, when: string): string {
    if (exit.spawnError) return `could not start: ${exit.spawnError}`;
    return `exited ${exit.signal !== null ? `on ${exit.signal}` : `with status ${exit.exitCode}`} ${when}`;
  }
}

/** Request `index`'s prompt length, uniform in [lo, hi]: seeded by the index alone, so every copy and arm asks the same lengths. */
export function promptLength(lo: number, hi: number, index: number): number {
  return lo + Math.floor(mulberry32(index + 1)() * (hi - lo + 1));
}

/** The first model id /v1/models lists, or null (a health path, or a body that is not a list). */
export function servedModel(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { data?: Array<{ id?: unknown }> };
    const id = parsed.data?.[0]?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}
