/** The first comparison's clients, started before the run begins (a warm start the pool then waits on). */
import type { Clock } from '../../core/clock.js';
import type { ProcessRunner } from '../../core/process.js';
import { gpuAt, visibleDevice } from '../../system/nvidia/schema.js';
import type { Comparison, Run } from '../record/schema.js';
import { startClients, UNREGISTERED } from './processes.js';
import type { Prestarted } from './types.js';

/**
 * The first comparison's clients, started while the run's preamble (the Python probe, which imports
 * PyTorch) goes on: nothing measures yet, so they go through their whole start (CUDA, build, warm-up)
 * beside it. The sampler must be running already: their memory is measured from the idle GPU before
 * them. Null where that comparison may not start so (see startsFirstEarly).
 */
export function prestartFirst(
  config: Run['config'],
  plan: readonly Comparison[],
  fingerprint: Run['fingerprint'],
  runner: ProcessRunner,
  clock: Clock,
): Prestarted | null {
  const first = plan[0];
  if (first === undefined || !startsFirstEarly(config, plan, fingerprint)) return null;
  return {
    comparisonId: first.id,
    startedUs: clock.monotonicUs(),
    // Registered with the reaper by the pool that takes them.
    clients: startClients(
      { runner, clock, reaper: UNREGISTERED },
      first,
      visibleDevice(fingerprint, config.gpuIndex),
      {},
      {},
    ).clients,
  };
}

/**
 * Whether prestartFirst starts the first comparison's clients (the run's sampler must start before
 * them): not with --fresh-clients, nor for an MPS comparison (its daemon is not up) or where there is
 * no such GPU. A custom command is checked on the GPU before the run: where it is the run's only one
 * and the first comparison's, one process per client, it is checked on that comparison's client 0
 * (see refuseFailingCommands); any other waits for its check, and so do the clients.
 */
export function startsFirstEarly(
  config: Run['config'],
  plan: readonly Comparison[],
  fingerprint: Run['fingerprint'],
): boolean {
  const first = plan[0];
  if (first === undefined || gpuAt(fingerprint, config.gpuIndex) === undefined) return false;
  if (config.freshClients === true || first.mode === 'mps') return false;
  const custom = [...config.streamsWorkloads, ...config.contentionWorkloads].filter((w) => !w.builtin);
  const checkedOnFirst = (argv: readonly string[]) =>
    !first.workload.builtin &&
    first.tenants === undefined &&
    JSON.stringify(argv) === JSON.stringify(first.workload.argv);
  return custom.every((w) => checkedOnFirst(w.argv));
}
