/**
 * The load generator as a pool of worker processes, so that no one core sends a whole run's load: each
 * load (a copy's window, a ceiling step) is dealt over the workers round-robin (load/run.ts splitLoad:
 * open loop, the arrival times the harness computed; closed loop, the resident slots), each worker sends
 * its part from one start time on the clock every process shares (monotonicMs), and their records are
 * merged into one LoadResult (summarize: the same histograms, counts and lag as one process would give),
 * with each worker's own send lag and CPU time beside it.
 *
 * Workers are started through the ProcessRunner seam (node on dist/harness/load/worker-main.js), not
 * a forked Node child: each runs in its own process group, is killed with the harness by the runner's
 * watchdog even on kill -9, and exits when its stdin closes. A worker that dies fails the loads it was
 * sending at once (LoadGeneratorFailed), never a hang; the next load starts a new one.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PACKAGE_ROOT } from '../core/paths.js';
import type { ChildHandle, ProcessRunner } from '../core/process.js';
import type { KillRegistry } from '../workload/group.js';
import type { PoolJob, WorkerLine } from './pool-protocol.js';
import type { RequestRecord } from './request.js';
import {
  type LoadResult,
  type LoadRunOptions,
  monotonicMs,
  percentiles,
  runLoad,
  splitLoad,
  summarize,
} from './run.js';

export { MAX_LOAD_WORKERS } from './pool-protocol.js';

export const WORKER_MAIN = path.join(PACKAGE_ROOT, 'dist', 'harness', 'load', 'worker-main.js');
/** A record's line may carry a long output's gaps (one number a token). */
const MAX_LINE_BYTES = 64 * 1024 * 1024;
const READY_MS = 20_000;

/** What sends a load: a pool of workers, or this process (inProcess). */
export interface LoadGenerator {
  /** Gets ready to send (a pool's workers started and ready): why it cannot, or null. */
  start(): Promise<string | null>;
  /** `startMs` on monotonicMs' clock: when the load starts (now when absent). */
  run(options: LoadRunOptions, startMs?: number): Promise<LoadResult>;
}

/** The load sent by this process alone, as before the pool. */
export const inProcess: LoadGenerator = {
  start: async () => null,
  run: async (options, startMs) => {
    if (startMs !== undefined) await sleep(Math.max(0, startMs - monotonicMs()));
    return runLoad(options);
  },
};

/** A generator worker died or could not start: the window it was sending is lost, not measured. */
export class LoadGeneratorFailed extends Error {}

interface Job {
  records: RequestRecord[];
  cpuMs: number | null;
  done: () => void;
  fail: (why: string) => void;
}

class Worker {
  readonly jobs = new Map<number, Job>();
  gone: string | null = null;

  constructor(
    readonly index: number,
    readonly child: ChildHandle,
    readonly ready: Promise<boolean>,
  ) {}
}

export class LoadPool implements LoadGenerator {
  /** By index; a hole where a worker died, filled by the next load. */
  private readonly workers: Array<Worker | undefined> = [];
  private nextJob = 1;
  private forget: Array<() => void> = [];

  constructor(
    private readonly runner: ProcessRunner,
    readonly size: number,
    /** Cores for the workers (taskset -c), or null. */
    private readonly cpus: string | null,
    private readonly reaper?: KillRegistry,
  ) {}

  /** The workers' process IDs (those running). */
  get pids(): number[] {
    return this.workers.flatMap((w) => (w?.child.pid !== undefined && w.gone === null ? [w.child.pid] : []));
  }

  /** Starts every worker and waits until each is ready; why one could not start, or null. */
  async start(): Promise<string | null> {
    for (let i = 0; i < this.size; i++) this.workers[i] ??= this.spawn(i);
    const problems = await Promise.all(this.workers.map((w) => (w === undefined ? 'no worker' : this.readyProblem(w))));
    return problems.find((p) => p !== null) ?? null;
  }

  async run(options: LoadRunOptions, startAt?: number): Promise<LoadResult> {
    const problem = await this.start();
    if (problem !== null) throw new LoadGeneratorFailed(problem);
    const startMs = startAt ?? monotonicMs();
    const parts = splitLoad(options.schedule, options.durationMs, this.size);
    const { request, schedule, durationMs, inputTokensMax } = options;
    const jobs = (this.workers as Worker[]).map((w, i) => {
      const job = this.nextJob++;
      const line: PoolJob = {
        job,
        options: { request, schedule, durationMs, inputTokensMax },
        part: parts[i] as PoolJob['part'],
        startMs,
      };
      return { w, job, result: this.send(w, line) };
    });
    const onAbort = () => {
      for (const { w, job } of jobs) w.child.writeLine(JSON.stringify({ abort: job }));
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // One worker gone: the others stop sending too, and the load fails as a whole.
      const done = await Promise.all(jobs.map((j) => j.result)).catch((error: unknown) => {
        onAbort();
        throw error;
      });
      const records = done.flatMap((d) => d.records);
      return {
        ...summarize(schedule, durationMs, monotonicMs() - startMs, records),
        startMs,
        workers: done.map((d) => ({
          requests: d.records.length,
          lagP99Ms: percentiles(d.records.map((r) => r.sentMs - r.scheduledMs)).p99Ms || 0,
          cpuMs: d.cpuMs ?? 0,
        })),
      };
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Ends every worker (closing its stdin, then SIGKILL for what is left). */
  async stop(): Promise<void> {
    for (const forget of this.forget.splice(0)) forget();
    const all = this.workers.splice(0).filter((w) => w !== undefined);
    for (const w of all) w.child.closeStdin();
    await Promise.all(
      all.map(async (w) => {
        const exited = await Promise.race([w.child.exited.then(() => true), sleep(2000, false, { ref: false })]);
        if (!exited) w.child.killGroup('SIGKILL');
        await w.child.exited;
      }),
    );
  }

  private spawn(index: number): Worker {
    const argv = [process.execPath, WORKER_MAIN];
    const child = this.runner.spawn(this.cpus !== null ? ['taskset', '-c', this.cpus, ...argv] : argv, {
      maxLineBytes: MAX_LINE_BYTES,
    });
    let isReady: (ok: boolean) => void = () => undefined;
    const ready = new Promise<boolean>((resolve) => {
      isReady = resolve;
    });
    const w = new Worker(index, child, ready);
    child.onLine((line) => this.onLine(w, line, isReady));
    if (this.reaper) this.forget.push(this.reaper.add(() => child.killGroup('SIGKILL')));
    void child.exited.then((exit) => {
      const how = exit.spawnError ?? (exit.signal !== null ? `on ${exit.signal}` : `with status ${exit.exitCode}`);
      w.gone = `the load generator's worker ${index + 1} of ${this.size} exited ${how}${this.tail(child)}`;
      isReady(false);
      for (const job of w.jobs.values()) job.fail(w.gone);
      w.jobs.clear();
      // The next load starts a new worker in its place.
      if (this.workers[index] === w) delete this.workers[index];
    });
    return w;
  }

  private tail(child: ChildHandle): string {
    const text = child.stderrTail().trim().split('\n').slice(-3).join(' | ');
    return text === '' ? '' : `: ${text}`;
  }

  private async readyProblem(w: Worker): Promise<string | null> {
    const ok = await Promise.race([w.ready, sleep(READY_MS, false, { ref: false })]);
    if (ok) return null;
    return w.gone ?? `the load generator's worker ${w.index + 1} was not ready within ${READY_MS / 1000} s`;
  }

  private send(w: Worker, line: PoolJob): Promise<{ records: RequestRecord[]; cpuMs: number | null }> {
    return new Promise((resolve, reject) => {
      const job: Job = {
        records: [],
        cpuMs: null,
        done: () => resolve({ records: job.records, cpuMs: job.cpuMs }),
        fail: (why) => reject(new LoadGeneratorFailed(why)),
      };
      if (w.gone !== null) job.fail(w.gone);
      else {
        w.jobs.set(line.job, job);
        if (!w.child.writeLine(JSON.stringify(line))) job.fail(`the load generator's worker ${w.index + 1} is gone`);
      }
    });
  }

  private onLine(w: Worker, text: string, isReady: (ok: boolean) => void): void {
    let line: WorkerLine;
    try {
      line = JSON.parse(text) as WorkerLine;
    } catch {
      return; // a stray line (a warning of node's): not the protocol
    }
    if ('ready' in line) {
      isReady(true);
      return;
    }
    const job = w.jobs.get(line.job);
    if (job === undefined) return;
    if ('record' in line) job.records.push(line.record);
    else {
      job.cpuMs = line.cpuMs;
      w.jobs.delete(line.job);
      job.done();
    }
  }
}
