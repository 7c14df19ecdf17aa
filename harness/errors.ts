/** Exit codes, documented in the README. */
export const ExitCode = {
  ok: 0,
  /** A measured verdict failed (used by the gate). */
  fail: 1,
  /** Bad input or an environment the harness cannot run in. */
  usage: 2,
  /** Inconclusive or invalid measurements (used by the gate). */
  inconclusive: 3,
  sigint: 130,
  sigterm: 143,
} as const;

/**
 * The one error class for problems the user can fix: bad flags, a missing nvidia-smi, an
 * unwritable output directory. `main` prints its message on one line and exits with `exitCode`.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.usage,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

/** Thrown inside a run when SIGINT/SIGTERM arrived; the run is saved as `interrupted`. */
export class Interrupted extends Error {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`interrupted by ${signal}`);
    this.name = 'Interrupted';
  }
}
