/** The side effects the commands use, gathered so main can give the real ones and tests fakes, in one place. */
import type { Clock } from './clock.js';
import type { ProcessRunner } from './process.js';

/** Where output is drawn: a bar on a terminal, plain lines elsewhere. */
export interface Terminal {
  isTty: boolean;
  columns: number;
  /** Milliseconds on a monotonic clock, for elapsed time and the ETA. */
  nowMs: () => number;
}

export interface AppDeps {
  runner: ProcessRunner;
  clock: Clock;
  out: (text: string) => void;
  err: (text: string) => void;
  /** The working directory: default output goes under it (runs/results/, runs/reports/), never into the package. */
  cwd: string;
  /** Where progress is drawn: a bar on a terminal, plain lines elsewhere. */
  terminal: Terminal;
  /** What bench may prestart with (see bench/plan.ts aheadPolicy); absent: nothing beyond the next comparison. */
  host?: HostResources;
}

/** This process's standing on its host, read once per command. */
export interface HostResources {
  /** Whether its workloads may leave SCHED_IDLE again (CAP_SYS_NICE in effect; root in a container may lack it). */
  leavesIdle: boolean;
  /** Memory its workloads may use now, bytes: the host's free memory, or what a cgroup limit leaves. */
  freeMemoryBytes: number;
}
