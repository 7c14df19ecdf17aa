/**
 * The load generator's own ceiling on this host: open-loop Poisson load at doubling rates against null
 * servers (gpushare's simulated OpenAI server with no delay, each token its own write after a turn of
 * its event loop, so the generator parses tokens one by one as a real stream makes it), once the run's
 * first copy has come up and before any load reaches it. What the null servers' latency is at a rate is
 * what the generator and the loopback add to every request at that rate; analysis.ts sets it against
 * the run's own latencies. At thousands of requests/s one null server (one Node process, one core) is
 * itself the bottleneck: several run, one per port, the load split over them as over copies, so the
 * sweep measures the generator.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PACKAGE_ROOT } from '../core/paths.js';
import type { ChildHandle, ProcessRunner } from '../core/process.js';
import { inProcess, type LoadGenerator, LoadGeneratorFailed } from '../load/pool.js';
import { type LoadResult, monotonicMs } from '../load/run.js';
import type { CeilingStep, ServeSettings } from './record.js';
import type { Slo } from './verdicts.js';
import { windowStats } from './window.js';

export const NULL_SERVER = path.join(PACKAGE_ROOT, 'simulator', 'openai-server.cjs');
/** The rates tried, requests/s, after a warm-up step at the first: doubling until the generator falls behind (p99 lag over LAG_LIMIT_MS). */
export const CEILING_RATES = [25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800];
const LAG_LIMIT_MS = 5;
const STEP_MS = 2000;
/** The most null servers a sweep starts. */
export const MAX_NULL_SERVERS = 16;

/** --ceiling-step-s' default: seconds of load at each rate of the sweep. */
export const CEILING_STEP_S = 2;
/** How long the harness waits for the loads to start, ms: every worker sends from one start time. */
const START_LEAD_MS = 50;

export interface CeilingOptions {
  inputTokens: number;
  /** The run's prompt length range, drawn as its servers' loads draw it. */
  inputTokensMax: number | null;
  outputTokens: number;
  api: 'completions' | 'chat';
  slo: Slo;
  /** Cores for the null servers (those of the servers), or null. */
  cpus: string | null;
  /** How many null servers (one process and port each); 1 by default. */
  nullServers?: number;
  /** What sends the load: the run's generator workers, or this process. */
  generator?: LoadGenerator;
  stepMs?: number;
  rates?: readonly number[];
  /** Each step's load runs (one per null server) as it ends (the first, unkept, too): the run's requests file keeps their requests. */
  onResult?(ratePerS: number, results: LoadResult[], kept: boolean): void;
}

/** The null servers one would start for `cpus` (one a core, at most MAX_NULL_SERVERS), or for `fallback` cores when not pinned. */
function nullServersFor(cpus: string | null, fallback: number): number {
  const cores = cpus === null ? fallback : cpus.split(',').length;
  return Math.max(1, Math.min(MAX_NULL_SERVERS, cores));
}

/** A run's ceiling options from its settings: its requests, the servers' cores and as many null servers. */
export function runCeilingOptions(
  s: Pick<
    ServeSettings,
    'inputTokens' | 'inputTokensMax' | 'outputTokens' | 'api' | 'serverCpus' | 'ceilingStepMs' | 'loadWorkers'
  >,
  slo: Slo,
  generator: LoadGenerator | undefined,
): CeilingOptions {
  return {
    inputTokens: s.inputTokens,
    inputTokensMax: s.inputTokensMax,
    outputTokens: s.outputTokens,
    api: s.api,
    slo,
    cpus: s.serverCpus,
    stepMs: s.ceilingStepMs,
    generator,
    nullServers: nullServersFor(s.serverCpus, availableParallelism() - (s.loadWorkers ?? 1)),
  };
}

/** Starts a null server and resolves with its port, or null (it exited, or printed none within 10 s). */
function startNullServer(
  runner: ProcessRunner,
  cpus: string | null,
): { child: ChildHandle; port: Promise<number | null> } {
  const argv = [process.execPath, NULL_SERVER, '--port', '0', '--ttft-ms', '0', '--itl-ms', '0'];
  const child = runner.spawn(cpus !== null ? ['taskset', '-c', cpus, ...argv] : argv);
  const port = new Promise<number | null>((resolve) => {
    child.onLine((line) => {
      const m = /^port (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
    void child.exited.then(() => resolve(null));
    void sleep(10_000, null, { ref: false }).then(resolve);
  });
  return { child, port };
}

/** The sweep's steps, or why there are none (a null server did not start). */
export async function measureCeiling(
  runner: ProcessRunner,
  options: CeilingOptions,
): Promise<{ steps: CeilingStep[]; problem: string | null }> {
  const servers = Array.from({ length: Math.max(1, options.nullServers ?? 1) }, () =>
    startNullServer(runner, options.cpus),
  );
  const generator = options.generator ?? inProcess;
  try {
    // Workers started before the first start time is set: a cold one would send its first requests late.
    const cold = await generator.start();
    if (cold !== null) return { steps: [], problem: `the generator's ceiling was not measured: ${cold}` };
    const ports = await Promise.all(servers.map((s) => s.port));
    const down = ports.indexOf(null);
    if (down !== -1)
      return {
        steps: [],
        problem: `the null server did not start: ${servers[down]?.child.stderrTail().trim()}`,
      };
    const rates = options.rates ?? CEILING_RATES;
    // The rate split evenly over the null servers, each its own seed, all from one start time.
    const load = (ratePerS: number): Promise<LoadResult[]> => {
      const startMs = monotonicMs() + START_LEAD_MS;
      return Promise.all(
        ports.map((port, k) =>
          generator.run(
            {
              request: {
                baseUrl: `http://127.0.0.1:${port}`,
                api: options.api,
                model: 'null',
                inputTokens: options.inputTokens,
                maxTokens: options.outputTokens,
                timeoutMs: 10_000,
              },
              schedule: { kind: 'poisson', ratePerS: ratePerS / ports.length, seed: ratePerS + 1000 * k },
              durationMs: options.stepMs ?? STEP_MS,
              inputTokensMax: options.inputTokensMax,
            },
            startMs,
          ),
        ),
      );
    };
    // A step at the first rate, not kept: cold (JIT, first sockets), the first step's e2e p50 ran 1.5× the
    // second's on an H200 host and ended the sweep at its first rate.
    const steps: CeilingStep[] = [];
    try {
      options.onResult?.(rates[0] ?? 1, await load(rates[0] ?? 1), false);
      for (const ratePerS of rates) {
        const cpuBefore = process.cpuUsage();
        const results = await load(ratePerS);
        const cpu = process.cpuUsage(cpuBefore);
        options.onResult?.(ratePerS, results, true);
        const load1 = { concurrency: null, ratePerS };
        const window = windowStats(results, options.slo, load1, (cpu.user + cpu.system) / 1000);
        steps.push({ ratePerS, window });
        if (window.lagP99Ms > LAG_LIMIT_MS || window.ok < window.requests) break;
      }
    } catch (error) {
      // A generator worker that died ends the sweep where it was: the steps before it stand.
      if (!(error instanceof LoadGeneratorFailed)) throw error;
      return { steps, problem: `the generator's ceiling sweep stopped: ${error.message}` };
    }
    return { steps, problem: null };
  } finally {
    for (const s of servers) s.child.killGroup('SIGKILL');
    await Promise.all(servers.map((s) => s.child.exited));
  }
}
