/**
 * The harness's watchdog: a small process of its own session that outlives a `kill -9` of the
 * harness and then kills every process group the harness started. A workload exits by itself when
 * its stdin closes only once it reads stdin: one still importing (prestarted, or a custom command that
 * never loads gpushare's helper), stopped (SIGSTOP) or busy switching does not, and would be left
 * behind for good. The watchdog needs nothing of the child.
 *
 * The harness writes "+<pgid>" on the watchdog's stdin for each group it starts; the kernel closes
 * that pipe however the harness ends. On EOF the watchdog sends SIGKILL to every group still there
 * (a stopped process dies of SIGKILL too), and to every process that carries the harness's mark in its
 * environment (GPUSHARE_HARNESS, see left-workloads.ts: one whose group it never read, spawned as the
 * harness died), then exits. A registered group is killed only while its leader's PID is the process
 * registered (the same start time) or gone: a reused PID is not ours.
 */
import { execa } from 'execa';
import { harnessMark } from './left-workloads.js';

/** Runs as `node -e`: CommonJS, no dependencies, reads /proc itself. */
const WATCHDOG_SCRIPT = `/* gpushare watchdog */
const fs = require('fs');
const startTicks = (pid) => {
  try {
    const stat = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch { return null; }
};
const groups = new Map();
let pending = '';
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGPIPE']) process.on(s, () => {});
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let nl = pending.indexOf('\\n'); nl !== -1; nl = pending.indexOf('\\n')) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 1) continue;
    const t = line[0] === '+' ? startTicks(pid) : null;
    if (t !== null) groups.set(pid, t);
  }
});
// The harness's mark (its children carry it as GPUSHARE_HARNESS): a child whose group never reached
// this pipe (spawned as the harness died, or before this process read its line) is found by it.
const mark = process.argv[1] || '';
const marked = () => {
  const found = [];
  if (!mark) return found;
  let entries = [];
  try { entries = fs.readdirSync('/proc'); } catch { return found; }
  for (const entry of entries) {
    if (!/^[0-9]+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync('/proc/' + entry + '/environ', 'latin1').split(String.fromCharCode(0)).includes('GPUSHARE_HARNESS=' + mark))
        found.push(Number(entry));
    } catch {}
  }
  return found;
};
const killAll = () => {
  for (const [pid, ticks] of groups) {
    const now = startTicks(pid);
    if (now !== null && now !== ticks) continue;
    try { process.kill(-pid, 'SIGKILL'); } catch {}
  }
  for (const pid of marked()) {
    try { process.kill(-pid, 'SIGKILL'); } catch {}
    try { process.kill(pid, 'SIGKILL'); } catch {}
  }
  process.exit(0);
};
process.stdin.on('end', killAll);
process.stdin.on('error', killAll);
`;

/** What the runner needs of the watchdog: a group to kill should the harness die. */
export interface Watchdog {
  /** Registers a process group (its leader's PID); false where no watchdog could be started. */
  watch(pgid: number): boolean;
}

interface Pipe {
  write(text: string): boolean;
}

let pipe: Pipe | null | undefined;

/** This process's watchdog, started on first use (one per harness process, shared by every runner). */
export const watchdog: Watchdog = {
  watch(pgid) {
    pipe ??= startWatchdog();
    if (pipe === null) return false;
    return pipe.write(`+${pgid}\n`);
  },
};

function startWatchdog(): Pipe | null {
  try {
    const child = execa(process.execPath, ['-e', WATCHDOG_SCRIPT, harnessMark()], {
      reject: false,
      // Its own session: a Ctrl-C to the harness's terminal or a kill of its group does not reach it.
      detached: true,
      cleanup: false,
      stdin: 'pipe',
      stdout: 'ignore',
      stderr: 'ignore',
      buffer: false,
    });
    child.catch(() => undefined);
    const stdin = child.stdin;
    if (child.pid === undefined || stdin === null) return null;
    stdin.on('error', () => undefined); // it died: nothing to tell it any more
    // Neither it nor the pipe keeps the harness alive: the pipe closes when the harness exits.
    child.unref();
    (stdin as unknown as { unref?: () => void }).unref?.();
    return {
      write: (text) => {
        if (stdin.destroyed || !stdin.writable) return false;
        stdin.write(text);
        return true;
      },
    };
  } catch {
    return null;
  }
}
