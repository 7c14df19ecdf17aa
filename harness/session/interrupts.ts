/** Ctrl-C and its kin for a command that starts processes: wind down on the first, kill at once on the second. */
import { INTERRUPT_SIGNALS, type InterruptSignal, signalExitCode } from '../core/errors.js';
import type { Reaper } from '../system/proc/reaper.js';

export interface Interrupts {
  /** The first signal that came, or null. */
  readonly signal: InterruptSignal | null;
  /** Aborts on the first signal: the command finishes what it is doing and stops. */
  readonly abort: AbortSignal;
  /** Stops listening (call once the command has cleaned up). */
  dispose(): void;
}

/**
 * First SIGINT, SIGTERM, SIGHUP or SIGQUIT: `onFirst` says so and `abort` fires. A second: every
 * killer the reaper holds runs, then `atForcedExit`, then the process exits with the signal's code.
 * Whatever else ends the process (a closed pipe, a bug), the reaper's killers run too.
 */
export function watchInterrupts(
  reaper: Reaper,
  atForcedExit: () => void,
  onFirst: (signal: InterruptSignal) => void = () => undefined,
): Interrupts {
  const controller = new AbortController();
  let first: InterruptSignal | null = null;
  const onSignal = (signal: InterruptSignal) => {
    if (first === null) {
      first = signal;
      onFirst(signal);
      controller.abort(signal);
      return;
    }
    reaper.killAll();
    atForcedExit();
    process.exit(signalExitCode(signal));
  };
  const onExit = () => {
    reaper.killAll();
    atForcedExit();
  };
  for (const s of INTERRUPT_SIGNALS) process.on(s, onSignal);
  process.on('exit', onExit);
  return {
    get signal() {
      return first;
    },
    abort: controller.signal,
    dispose() {
      for (const s of INTERRUPT_SIGNALS) process.off(s, onSignal);
      process.off('exit', onExit);
    },
  };
}
