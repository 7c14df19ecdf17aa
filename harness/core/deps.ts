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
}
