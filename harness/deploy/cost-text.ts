/** The prose of the plan's costs: what a run measured of a mode, why a mode has no measured cost, where the costs come from. */

import type { Measured, MeasuredMode } from '../bench/analysis/which-mode.js';
import { termText } from '../core/escape/terminal.js';
import { MODE_TEXT, type ShareMode } from './plan-types.js';

const ratio = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(2)}×`);
const mibText = (x: number) => `${x.toFixed(0)} MiB`;

/** What a run measured of one mode, as the plan quotes it: who ran, the ratios, memory per process and host time. */
export function measuredText(
  m: MeasuredMode | null | undefined,
  source: string,
  inProcess: boolean,
  models: number,
): string | null {
  if (!m) return null;
  const who = inProcess
    ? `${m.clients} ${termText(m.workload)} tenants in one process`
    : `${m.clients} ${termText(m.workload)} clients`;
  const memory =
    m.risePerProcessMiB != null && m.reservedPerProcessMiB != null
      ? `; memory per process: nvidia-smi rose ${mibText(m.risePerProcessMiB)}, the workload's allocator held ${mibText(m.reservedPerProcessMiB)}, overhead ${m.risePerProcessMiB >= m.reservedPerProcessMiB ? mibText(m.risePerProcessMiB - m.reservedPerProcessMiB) : 'not separable'}`
      : m.memoryPerClientMiB != null
        ? `, ${m.memoryPerClientMiB.toFixed(0)} MiB of GPU memory per client`
        : '';
  const host =
    m.stepHostSoloUs != null && m.stepHostContendedUs != null
      ? `; host time per request ${m.stepHostSoloUs.toFixed(1)} µs alone, ${m.stepHostContendedUs.toFixed(1)} µs with all ${m.clients} (${inProcess ? "Python's GIL" : 'each its own process'})`
      : '';
  const p99 = m.contendedP99Ms !== null ? ` (${m.contendedP99Ms.toFixed(2)} ms)` : '';
  // The run's own text (its GPU's name, driver, workload), shown escaped: the plan is printed and quoted in a README.
  return `measured on ${termText(source)} with ${who}${m.extrapolated ? ` (the most measured, fewer than the ${models} asked: more cost more)` : ''}: slowdown ${ratio(m.slowdown)}, together ${ratio(m.aggregate)} the work of one alone, p99 latency ${ratio(m.p99Ratio)}${p99}${memory}${host}`;
}

/** Why a mode has no measured cost: no run was given, or the run did not measure that mode. */
export function notMeasured(measured: Measured | null, mode: ShareMode): string {
  const how =
    mode === 'streams' || mode === 'green'
      ? 'tenants of one process (bench --modes streams,green --clients N)'
      : 'a contention workload';
  return measured
    ? `${measured.source} did not measure ${MODE_TEXT[mode]} on ${how}: cost not measured`
    : 'no run given: cost not measured';
}

/** Where the plan's costs come from: the client count they were measured at, or why there are none. */
export function costAssumption(measured: Measured | null, models: number): string {
  if (!measured) return 'without --run, costs are not measured';
  const modes = [measured.mps, measured.timeslice, measured.streams, measured.green];
  const clients = modes.find((m) => m)?.clients;
  if (clients === undefined)
    return `${measured.source} measured neither time-slicing nor MPS on a contention workload: costs not measured`;
  const named: Array<[string, MeasuredMode | null | undefined]> = [
    [MODE_TEXT.mps, measured.mps],
    [MODE_TEXT.timeslice, measured.timeslice],
    [MODE_TEXT.streams, measured.streams],
    [MODE_TEXT.green, measured.green],
  ];
  const extrapolated = named.flatMap(([name, m]) => (m?.extrapolated ? [`${name} at ${m.clients}`] : []));
  if (extrapolated.length > 0)
    return `costs are those measured at the most clients the run has for each option, quoted as measured, never extrapolated; fewer than ${models} for ${extrapolated.join(', ')}: with more clients they grow`;
  return `costs are those measured at ${clients} clients${(measured.mps?.clients ?? measured.timeslice?.clients ?? 0) >= models ? `, the fewest measured at or above ${models}` : ''}`;
}
