/**
 * Processes a gpushare harness started that outlived it: each child the runner spawns carries its
 * harness's identity (GPUSHARE_HARNESS=<pid>:<start ticks>) in its environment, so that doctor and
 * --resume find one whose harness is gone even where the watchdog (watchdog.ts) could not kill it
 * (the watchdog killed too, a child that left its process group).
 */
import { readFileSync } from 'node:fs';
import { findProcesses, processStartTicks, readEnviron } from './process-table.js';

export const HARNESS_ENV = 'GPUSHARE_HARNESS';

let mark: string | null = null;
/** This harness's mark, `<pid>:<start ticks>`: a reused PID does not match it. */
export function harnessMark(): string {
  if (mark === null) {
    const stat = (() => {
      try {
        return readFileSync('/proc/self/stat', 'utf8');
      } catch {
        return '';
      }
    })();
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '?';
    mark = `${process.pid}:${ticks}`;
  }
  return mark;
}

/** A process a gone harness left: its PID, its process group and the harness's PID. */
export interface LeftWorkload {
  pid: number;
  pgid: number;
  harnessPid: number;
  argv: string[];
}

/** Every live process whose harness (its mark) is gone; `harness` (`<pid>:<ticks>`): only that one's. */
export async function findLeftWorkloads(harness?: string): Promise<LeftWorkload[]> {
  const left: LeftWorkload[] = [];
  const alive = new Map<string, boolean>();
  for (const p of await findProcesses('')) {
    if (p.pid === process.pid) continue;
    const value = (await readEnviron(p.pid))
      ?.find((v) => v.startsWith(`${HARNESS_ENV}=`))
      ?.slice(HARNESS_ENV.length + 1);
    if (value === undefined || (harness !== undefined && value !== harness)) continue;
    const [pidText, ticks] = value.split(':');
    const harnessPid = Number(pidText);
    if (!Number.isInteger(harnessPid) || harnessPid <= 0) continue;
    if (!alive.has(value)) alive.set(value, String(await processStartTicks(harnessPid)) === ticks);
    if (alive.get(value)) continue;
    const pgid = processGroup(p.pid);
    if (pgid !== null) left.push({ pid: p.pid, pgid, harnessPid, argv: p.argv });
  }
  return left;
}

function processGroup(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return Number.isInteger(pgid) ? pgid : null;
  } catch {
    return null;
  }
}

/** Kills what a gone harness left (each process, and its group where it leads one); returns the PIDs. */
export function killLeftWorkloads(left: readonly LeftWorkload[]): number[] {
  for (const p of left) {
    for (const target of p.pgid === p.pid ? [-p.pid, p.pid] : [p.pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
  return left.map((p) => p.pid);
}
