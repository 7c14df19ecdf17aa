/** This process's standing on its host, as bench's prestarting ahead needs it (see bench/plan.ts aheadPolicy). */
import { readFileSync } from 'node:fs';
import { freemem } from 'node:os';
import type { HostResources } from '../core/deps.js';

/** The capability that lets a process leave SCHED_IDLE again: root in a container may lack it. */
const CAP_SYS_NICE = 23n;

/** Read once per command: whether its workloads may leave idle priority, and the memory they may use (a cgroup's limit where one is set). */
export function hostResources(): HostResources {
  return { leavesIdle: capabilityInEffect(CAP_SYS_NICE), freeMemoryBytes: process.availableMemory?.() ?? freemem() };
}

function capabilityInEffect(bit: bigint): boolean {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('CapEff:'));
    return line !== undefined && ((BigInt(`0x${line.split(/\s+/)[1]}`) >> bit) & 1n) === 1n;
  } catch {
    return false; // not Linux, or no /proc: nothing is prestarted ahead
  }
}
