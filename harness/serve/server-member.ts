/**
 * One copy of the user's inference server as a member of a WorkloadGroup: started from its command
 * line (its own process group, killed with the harness), ready once its ready path answers 200, and
 * released with a load (a schedule for a duration) that gpushare's generator drives against it from
 * the release time; its answer is the load run.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../core/clock.js';
import { Interrupted } from '../core/errors.js';
import { type ChildHandle, type ExitInfo, type ProcessRunner, STDIO_GRACE_MS } from '../core/process.js';
import { inProcess, type LoadGenerator, LoadGeneratorFailed } from '../load/pool.js';
import type { RequestSpec } from '../load/request.js';
import { type LoadResult, monotonicMs } from '../load/run.js';
import type { Schedule } from '../load/schedule.js';
import { KILLED_GRACE_MS, killSeen, runningAfter, signalSeen, uniqueSeen } from '../system/proc/end-processes.js';
import { descendants, processesWithEnv } from '../system/proc/process-table.js';
import type { CollectReply, GroupMember, MemberReply } from '../workload/group.js';

export { promptLength } from '../load/run.js';

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
  /** The model its requests name; absent: the first /v1/models lists (a fleet's in-process arm names each server's). */
  model?: string;
}

const POLL_MS = 200;
/** How long a killed leader's exit may take to be seen: the kill's grace, then the runner's wait for its output. */
const EXIT_SEEN_MS = KILLED_GRACE_MS + STDIO_GRACE_MS;
/** The environment variable that marks every process of one copy (inherited by whatever it starts). */
export const COPY_ENV = 'GPUSHARE_SERVE_COPY';
const LOG_LINES = 20;
/** The lines of its log a failure quotes. */
const LOG_END_LINES = 5;

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
  /** COPY_ENV's value, in the environment of every process of this copy: how stop finds those that left its group. */
  private readonly mark = `${process.pid}-${randomUUID()}`;
  private left: number[] = [];

  constructor(
    private readonly runner: ProcessRunner,
    private readonly clock: Clock,
    readonly spec: ServerSpec,
    /** What sends its loads: the run's pool of generator workers, or this process. */
    private readonly generator: LoadGenerator = inProcess,
    /**
     * The server it loads when it starts none of its own (a fleet's in-process arm: one process serving every
     * server's model): its process, exit and lifetime are the host's, which its own group owns.
     */
    private readonly host: ServerMember | null = null,
  ) {}

  get label(): string {
    return this.spec.label;
  }

  /** How it ended, or null while it runs. */
  get ended(): ExitInfo | null {
    return this.host !== null ? this.host.ended : this.exit;
  }

  /** Its leader's pid (the server's, through sh's exec), or null before it started. */
  get pid(): number | null {
    return this.host !== null ? this.host.pid : (this.child?.pid ?? null);
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.spec.port}`;
  }

  start(): void {
    if (this.child !== null || this.host !== null) return;
    const shell = ['sh', '-c', `exec ${this.spec.command}`];
    const argv = this.spec.cpus !== null ? ['taskset', '-c', this.spec.cpus, ...shell] : shell;
    this.child = this.runner.spawn(argv, { env: { ...this.spec.env, [COPY_ENV]: this.mark } });
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
    // Appended, not resolved: a path such as //host/health must not take the poll to another host.
    const url = `${this.baseUrl}${this.spec.readyPath}`;
    for (;;) {
      if (signal.aborted) throw new Interrupted('SIGINT');
      const exit = this.ended ?? (await Promise.race([this.child?.exited, sleep(0).then(() => null)]));
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
    const model = this.spec.model ?? this.model ?? 'default';
    const request: RequestSpec = { ...this.spec.request, baseUrl: this.baseUrl, model };
    // The release time on the clock the generator's processes share (load/run.ts monotonicMs).
    const startMs = monotonicMs() + (command.startAtUs - this.clock.monotonicUs()) / 1000;
    const load = new AbortController();
    this.load = load;
    this.pending = this.generator.run(
      {
        request,
        schedule: command.schedule,
        durationMs: command.durationMs,
        inputTokensMax: this.spec.inputTokensMax,
        signal: load.signal,
      },
      startMs,
    );
    // Awaited in collect; a load no one collects must not be an unhandled rejection.
    this.pending.catch(() => undefined);
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
    // A generator worker that died fails the window as the copy's: one line, not a hang.
    const generatorFailed = (error: unknown) => {
      if (error instanceof LoadGeneratorFailed) return { failed: error.message };
      throw error;
    };
    const outcome = await Promise.race([
      pending.catch(generatorFailed),
      sleep(timeoutMs, 'timeout' as const, { ref: false }),
      aborted,
    ]);
    signal.removeEventListener('abort', onAbort);
    // A load no one waits for stops sending and cuts its requests: nothing of it outlives the window.
    if (outcome === 'aborted' || outcome === 'timeout') this.load?.abort();
    if (outcome === 'aborted') throw new Interrupted('SIGINT');
    if (outcome === 'timeout') return { kind: 'timeout' };
    if ('failed' in outcome) return { kind: 'failed', reason: outcome.failed, exitCode: null };
    const ended = this.ended;
    if (ended)
      return {
        kind: 'failed',
        reason: `${this.exitText(ended, 'during the window')}; ${this.logEnd()}`,
        exitCode: ended.exitCode,
      };
    return { kind: 'message', message: outcome };
  }

  /**
   * Asks the copy to stop (SIGTERM) and, after `timeoutMs`, kills what is left: its process group even
   * when its leader has exited (an engine's workers, vLLM's engine core or TGI's shards, outlive a
   * crashed leader and hold GPU memory through every later group), and every process that left the
   * group (a server that daemonised: forked, setsid()): those seen as the leader's descendants while it
   * lived, and those carrying the copy's mark. Bounded: what does not die is named by `left`.
   */
  async stop(timeoutMs: number): Promise<'exited' | 'killed'> {
    const child = this.child;
    if (child === null) return 'exited';
    this.load?.abort();
    // Before the leader exits: once it has, its setsid() children are no longer its descendants.
    const seen = child.pid !== undefined && this.exit === null ? await descendants(child.pid) : [];
    const strays = async () => uniqueSeen([...seen, ...(await processesWithEnv(`${COPY_ENV}=${this.mark}`))]);
    child.killGroup('SIGTERM');
    await signalSeen(await strays(), 'SIGTERM');
    const end = Date.now() + timeoutMs;
    const ended =
      this.exit !== null ||
      (await Promise.race([child.exited.then(() => true), sleep(timeoutMs, false, { ref: false })]));
    // The rest of the time for the processes that left the group to go by themselves, then SIGKILL for all.
    await runningAfter(await strays(), Math.max(0, end - Date.now()));
    child.killGroup('SIGKILL');
    this.left = await killSeen(await strays());
    // Its exit is seen within the runner's grace even if a descendant still holds its output open.
    const gone =
      ended || (await Promise.race([child.exited.then(() => true), sleep(EXIT_SEEN_MS, false, { ref: false })]));
    if (!gone && child.pid !== undefined && !this.left.includes(child.pid)) this.left.push(child.pid);
    return ended ? 'exited' : 'killed';
  }

  /** PIDs of this copy's processes that its stop could not kill (none, normally). */
  get leftRunning(): readonly number[] {
    return this.left;
  }

  kill(): void {
    this.child?.killGroup('SIGKILL');
  }

  /** The end of its log: stderr, then its last stdout lines. */
  stderrTail(): string {
    // A model of a multi-model process: the log is its host's.
    if (this.host !== null) return this.host.stderrTail();
    const err = this.child?.stderrTail() ?? '';
    return [err.trimEnd(), ...this.lines].filter((l) => l !== '').join('\n');
  }

  /** The last lines of its log on one line, in words: why an engine crashed is most often there. */
  logEnd(): string {
    const tail = this.stderrTail().split('\n').slice(-LOG_END_LINES).join(' | ');
    return `its log ends: ${tail || '(empty)'}`;
  }

  /** How it ended, in words: its status or signal, `when`, and the hint for a server that daemonised. */
  exitText(exit: ExitInfo, when: string): string {
    if (exit.spawnError) return `could not start: ${exit.spawnError}`;
    // Status 0 while it should serve: most often a launcher that daemonised the server and returned.
    const daemon =
      exit.exitCode === 0
        ? ' (a server that daemonises, forking and leaving, cannot be stopped or measured as a copy: run it in the foreground)'
        : '';
    return `exited ${exit.signal !== null ? `on ${exit.signal}` : `with status ${exit.exitCode}`} ${when}${daemon}`;
  }
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
