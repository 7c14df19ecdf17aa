import os from 'node:os';

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

/** The signals a run handles like SIGINT: saved as `interrupted`, every child stopped. */
export const INTERRUPT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;
export type InterruptSignal = (typeof INTERRUPT_SIGNALS)[number];

/** The shell's convention, 128 + the signal's number: SIGHUP 129, SIGINT 130, SIGQUIT 131, SIGTERM 143. */
export function signalExitCode(signal: InterruptSignal): number {
  return 128 + os.constants.signals[signal];
}

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

/** Thrown inside a run when SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived; the run is saved as `interrupted`. */
export class Interrupted extends Error {
  constructor(readonly signal: InterruptSignal) {
    super(`interrupted by ${signal}`);
    this.name = 'Interrupted';
  }
}
