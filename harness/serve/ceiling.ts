/**
 * The load generator's own ceiling on this host: open-loop Poisson load at doubling rates against a
 * null server (gpushare's simulated OpenAI server with no delay, each token its own write after a turn
 * of its event loop, so the generator parses tokens one by one as a real stream makes it), once the
 * run's first copy has come up and before any load reaches it. What the null server's latency is at a
 * rate is what the generator and the loopback add to every request at that rate; analysis.ts sets it
 * against the run's own latencies.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PACKAGE_ROOT } from '../core/paths.js';
import type { ProcessRunner } from '../core/process.js';
import { type LoadResult, runLoad } from '../load/run.js';
import type { CeilingStep } from './record.js';
import { promptLength } from './server-member.js';
import type { Slo } from './verdicts.js';
import { windowStats } from './window.js';

export const NULL_SERVER = path.join(PACKAGE_ROOT, 'simulator', 'openai-server.cjs');
/** The rates tried, requests/s, after a warm-up step at the first: doubling until the generator falls behind (p99 lag over LAG_LIMIT_MS). */
export const CEILING_RATES = [25, 50, 100, 200, 400, 800, 1600, 3200];
const LAG_LIMIT_MS = 5;
const STEP_MS = 2000;

export interface CeilingOptions {
  inputTokens: number;
  /** The run's prompt length range, drawn as its servers' loads draw it. */
  inputTokensMax: number | null;
  outputTokens: number;
  api: 'completions' | 'chat';
  slo: Slo;
  /** Cores for the null server (those of the servers), or null. */
  cpus: string | null;
  stepMs?: number;
  rates?: readonly number[];
  /** Each step's load run as it ends (the first, unkept, too): the run's requests file keeps its requests. */
  onResult?(ratePerS: number, result: LoadResult, kept: boolean): void;
}

/** The sweep's steps, or why there are none (the null server did not start). */
export async function measureCeiling(
  runner: ProcessRunner,
  options: CeilingOptions,
): Promise<{ steps: CeilingStep[]; problem: string | null }> {
  const argv = [process.execPath, NULL_SERVER, '--port', '0', '--ttft-ms', '0', '--itl-ms', '0'];
  const child = runner.spawn(options.cpus !== null ? ['taskset', '-c', options.cpus, ...argv] : argv);
  try {
    const port = await new Promise<number | null>((resolve) => {
      child.onLine((line) => {
        const m = /^port (\d+)$/.exec(line);
        if (m) resolve(Number(m[1]));
      });
      void child.exited.then(() => resolve(null));
      void sleep(10_000, null, { ref: false }).then(resolve);
    });
    if (port === null) return { steps: [], problem: `the null server did not start: ${child.stderrTail().trim()}` };
    const hi = options.inputTokensMax;
    const rates = options.rates ?? CEILING_RATES;
    const load = (ratePerS: number) =>
      runLoad({
        request: {
          baseUrl: `http://127.0.0.1:${port}`,
          api: options.api,
          model: 'null',
          inputTokens: options.inputTokens,
          maxTokens: options.outputTokens,
          timeoutMs: 10_000,
        },
        schedule: { kind: 'poisson', ratePerS, seed: ratePerS },
        durationMs: options.stepMs ?? STEP_MS,
        inputTokensOf: hi === null ? undefined : (i) => promptLength(options.inputTokens, hi, i),
      });
    // A step at the first rate, not kept: cold (JIT, first sockets), the first step's e2e p50 ran 1.5× the
    // second's on an H200 host and ended the sweep at its first rate.
    options.onResult?.(rates[0] ?? 1, await load(rates[0] ?? 1), false);
    const steps: CeilingStep[] = [];
    for (const ratePerS of rates) {
      const cpuBefore = process.cpuUsage();
      const result = await load(ratePerS);
      const cpu = process.cpuUsage(cpuBefore);
      options.onResult?.(ratePerS, result, true);
      const window = windowStats(
        [result],
        options.slo,
        { concurrency: null, ratePerS },
        (cpu.user + cpu.system) / 1000,
      );
      steps.push({ ratePerS, window });
      if (window.lagP99Ms > LAG_LIMIT_MS || window.ok < window.requests) break;
    }
    return { steps, problem: null };
  } finally {
    child.killGroup('SIGKILL');
    await child.exited;
  }
}
