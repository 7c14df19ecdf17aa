/** The subprocess seam: what the harness asks of a child process, and what it gets back. The real one is system/proc/runner.ts. */

/** What a one-shot command did. `not-found`: the executable is not on PATH. */
export type ExecResult =
  | { status: 'exited'; exitCode: number; stdout: string; stderr: string }
  | { status: 'not-found'; command: string }
  | { status: 'timeout'; stdout: string; stderr: string }
  | { status: 'error'; message: string };

/** How a long-lived child ended. */
export interface ExitInfo {
  exitCode: number | null;
  signal: string | null;
  /** The executable could not be started (e.g. not on PATH). */
  spawnError?: string;
}

export interface ExecOptions {
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
}

export interface SpawnOptions {
  env?: Record<string, string>;
  /** Longest stdout line delivered whole, in bytes; longer lines arrive cut, flagged `tooLong`. */
  maxLineBytes?: number;
}

/** A long-lived child in its own process group, spoken to by lines. */
export interface ChildHandle {
  readonly pid: number | undefined;
  onLine(listener: (line: string, tooLong: boolean) => void): void;
  /** Writes one line to stdin; false when stdin is already closed. */
  writeLine(line: string): boolean;
  closeStdin(): void;
  /** The last bytes the child wrote to stderr (at most 64 KiB). */
  stderrTail(): string;
  /** Signals the child's whole process group, so grandchildren go too. */
  killGroup(signal: NodeJS.Signals): void;
  /**
   * How it exited, once its output is read: at most STDIO_GRACE_MS after it exited, even when a
   * descendant it left behind keeps its stdout or stderr open (that output is then no longer read).
   */
  readonly exited: Promise<ExitInfo>;
}

/** How long a child's stdout and stderr may stay open after it exited before it counts as exited anyway. */
export const STDIO_GRACE_MS = 1000;

/** The seam for every subprocess the harness starts. Tests use the real one with fake executables on PATH. */
export interface ProcessRunner {
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  spawn(argv: readonly string[], options?: SpawnOptions): ChildHandle;
  /** The absolute path of an executable on PATH, or null. */
  which(command: string): Promise<string | null>;
}
