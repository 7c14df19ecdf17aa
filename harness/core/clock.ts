import { setTimeout as sleep } from 'node:timers/promises';

/** Time, behind one seam so tests can control it. */
export interface Clock {
  /** CLOCK_MONOTONIC in microseconds: the clock workloads report their windows in. */
  monotonicUs(): number;
  /** Wall-clock time as an ISO-8601 string. */
  nowIso(): string;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  // process.hrtime is CLOCK_MONOTONIC on Linux, the same clock as Python's time.monotonic_ns().
  monotonicUs: () => Number(process.hrtime.bigint() / 1000n),
  nowIso: () => new Date().toISOString(),
  sleep: async (ms, signal) => {
    await sleep(ms, undefined, signal ? { signal } : {}).catch(() => undefined);
  },
};
