/**
 * Ctrl-C and its kin, one policy for every run in the process (bench --gpus has several at once):
 * the first SIGINT, SIGTERM, SIGHUP or SIGQUIT winds every run down (its `abort` fires, it saves
 * itself as `interrupted`); a second runs every run's forced exit (kill what it started, save its
 * record synchronously) and then exits with 128 + the signal. Whatever else ends the process while
 * a run is live (a closed pipe, a bug), each run's forced exit runs too.
 */
import { setMaxListeners } from 'node:events';
import { INTERRUPT_SIGNALS, type InterruptSignal, signalExitCode } from '../core/errors.js';

/** A live run's part in the policy. */
export interface InterruptWatch {
  /** The first signal that came, or null. */
  readonly signal: InterruptSignal | null;
  /** Aborts on the first signal (its reason is the signal): the run finishes what it is doing and stops. */
  readonly abort: AbortSignal;
  /** Stops listening (call once the run has saved itself and cleaned up). */
  dispose(): void;
}

interface Watcher {
  controller: AbortController;
  /** Said once, by the run that started first, on the first signal. */
  onFirst: (signal: InterruptSignal) => void;
  /** Synchronous: kills what the run started and saves its record; `signal` null when the process exits for another reason. */
  forcedExit: (signal: InterruptSignal | null) => void;
}

/** The live runs, oldest first. */
const watchers = new Set<Watcher>();
let first: InterruptSignal | null = null;

function onSignal(signal: InterruptSignal): void {
  if (first === null) {
    first = signal;
    [...watchers][0]?.onFirst(signal);
    for (const w of watchers) w.controller.abort(signal);
    return;
  }
  forceAll(signal);
  process.exit(signalExitCode(signal));
}

function forceAll(signal: InterruptSignal | null): void {
  // Newest first: a run inside another (a GPU's run of a host run) saves before its parent.
  for (const w of [...watchers].reverse()) {
    watchers.delete(w);
    try {
      w.forcedExit(signal);
    } catch {
      // One run's failed save must not keep the others from saving theirs.
    }
  }
}

const onExit = () => forceAll(first);

/**
 * A signal after the last run stopped listening but before the process ended (it wound down after a
 * first signal, or it finished and is writing its report or waiting on a child's exit): no run is left
 * to stop or force, so it exits with 128 + the signal at once. Without it Node's default would kill the
 * process by the signal, and the exit code would not be the one the policy promises.
 */
const late = (signal: InterruptSignal) => process.exit(signalExitCode(signal));
let lateOn = false;

function listenLate(on: boolean): void {
  if (on === lateOn) return;
  lateOn = on;
  for (const s of INTERRUPT_SIGNALS) on ? process.on(s, late) : process.off(s, late);
}

/**
 * Watches for interrupts on behalf of one run. `onFirst` says what the first signal does (printed by
 * the oldest run only); `forcedExit` is the run's synchronous last word on a second signal.
 */
export function watchInterrupts(
  forcedExit: (signal: InterruptSignal | null) => void,
  onFirst: (signal: InterruptSignal) => void = () => undefined,
): InterruptWatch {
  if (watchers.size === 0) {
    listenLate(false);
    for (const s of INTERRUPT_SIGNALS) process.on(s, onSignal);
    process.on('exit', onExit);
  }
  const watcher: Watcher = { controller: new AbortController(), onFirst, forcedExit };
  // Every client waiting on its workload listens to this signal: 48 at once are no leak.
  setMaxListeners(0, watcher.controller.signal);
  watchers.add(watcher);
  // A run started after the first signal (the next GPU of a host run) starts wound down.
  if (first !== null) watcher.controller.abort(first);
  return {
    get signal() {
      return watcher.controller.signal.aborted ? (watcher.controller.signal.reason as InterruptSignal) : null;
    },
    abort: watcher.controller.signal,
    dispose() {
      watchers.delete(watcher);
      if (watchers.size > 0) return;
      for (const s of INTERRUPT_SIGNALS) process.off(s, onSignal);
      process.off('exit', onExit);
      listenLate(true);
      first = null;
    },
  };
}
