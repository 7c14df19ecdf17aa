import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { type ExitInfo, type ProcessRunner, STDIO_GRACE_MS } from '../../core/process.js';
import { HARNESS_ENV, harnessMark } from './left-workloads.js';
import { watchdog } from './watchdog.js';

const STDERR_TAIL_BYTES = 64 * 1024;
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

function splitArgv(argv: readonly string[]): [string, string[]] {
  const [file, ...args] = argv;
  if (file === undefined) throw new Error('empty argv');
  return [file, args];
}

/**
 * A runner whose children see `baseEnv` (with each call's env on top) in place of this process's
 * environment, and whose `which` searches baseEnv.PATH: in-process tests give each CLI run its own
 * PATH this way, without touching process.env. Without baseEnv, this process's environment.
 */
export const createRunner = (baseEnv?: NodeJS.ProcessEnv): ProcessRunner => ({
  async exec(argv, options = {}) {
    const [file, args] = splitArgv(argv);
    const result = await execa(file, args, {
      reject: false,
      ...childEnv(baseEnv, options.env),
      input: options.input,
      timeout: options.timeoutMs,
      stripFinalNewline: false,
    });
    if (result.timedOut) return { status: 'timeout', stdout: String(result.stdout), stderr: String(result.stderr) };
    if (result.exitCode === undefined) {
      const code = (result.cause as NodeJS.ErrnoException | undefined)?.code;
      if (code === 'ENOENT') return { status: 'not-found', command: file };
      return { status: 'error', message: result.shortMessage ?? 'failed to start' };
    }
    return {
      status: 'exited',
      exitCode: result.exitCode,
      stdout: String(result.stdout),
      stderr: String(result.stderr),
    };
  },

  spawn(argv, options = {}) {
    const [file, args] = splitArgv(argv);
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const child = execa(file, args, {
      reject: false,
      // Its harness's mark: doctor and --resume find it should it outlive this harness.
      ...childEnv(baseEnv, { ...options.env, [HARNESS_ENV]: harnessMark() }),
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      // Own process group: killGroup reaches the workload's children too.
      detached: true,
      cleanup: true,
    });
    // Killed with the harness even if it never reads its stdin again (see watchdog.ts).
    if (child.pid !== undefined) watchdog.watch(child.pid);
    const listeners: Array<(line: string, tooLong: boolean) => void> = [];
    let partial = '';
    let dropping = false;
    const deliver = (line: string, tooLong: boolean) => {
      for (const listener of listeners) listener(line, tooLong);
    };
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      let rest = chunk;
      for (let nl = rest.indexOf('\n'); nl !== -1; nl = rest.indexOf('\n')) {
        const piece = partial + rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        partial = '';
        if (dropping) dropping = false;
        else deliver(piece.replace(/\r$/, ''), false);
      }
      if (dropping) return;
      partial += rest;
      if (Buffer.byteLength(partial) > maxLineBytes) {
        // Deliver the head once and drop the rest of this line: a runaway line must not eat memory.
        deliver(partial.slice(0, 200), true);
        partial = '';
        dropping = true;
      }
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL_BYTES);
    });
    child.stdin?.on('error', () => undefined); // EPIPE when the child died: its exit says why
    const read: Promise<ExitInfo> = child.then((result) => {
      if (partial && !dropping) deliver(partial, false);
      partial = '';
      const code = (result.cause as NodeJS.ErrnoException | undefined)?.code;
      return {
        exitCode: result.exitCode ?? null,
        signal: result.signal ?? null,
        ...(result.exitCode === undefined && result.signal === undefined
          ? { spawnError: code === 'ENOENT' ? `${file}: not found` : (result.shortMessage ?? 'failed to start') }
          : {}),
      };
    });
    // execa settles once the child has exited and its stdout and stderr have closed. A descendant that
    // kept them (a server that daemonised: forked, setsid(), its leader gone) holds them open for as
    // long as it lives: the child has exited all the same, said once what it wrote is read or the grace is over.
    const exited = new Promise<ExitInfo>((resolve) => {
      let grace: NodeJS.Timeout | undefined;
      void read.then((info) => {
        clearTimeout(grace);
        resolve(info);
      });
      child.once('exit', (exitCode, signal) => {
        grace = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          resolve({ exitCode, signal });
        }, STDIO_GRACE_MS);
      });
    });
    return {
      pid: child.pid,
      onLine: (listener) => listeners.push(listener),
      writeLine: (line) => {
        if (!child.stdin || child.stdin.destroyed || !child.stdin.writable) return false;
        child.stdin.write(`${line}\n`);
        return true;
      },
      closeStdin: () => child.stdin?.end(),
      stderrTail: () => stderr,
      killGroup: (signal) => {
        if (child.pid === undefined) return;
        try {
          process.kill(-child.pid, signal);
        } catch {
          // Already gone.
        }
      },
      exited,
    };
  },

  async which(command) {
    if (command.includes('/')) return (await isExecutable(command)) ? path.resolve(command) : null;
    for (const dir of ((baseEnv ?? process.env).PATH ?? '').split(path.delimiter)) {
      if (!dir) continue;
      const candidate = path.join(dir, command);
      if (await isExecutable(candidate)) return candidate;
    }
    return null;
  },
});

/** The runner of this process: its children inherit its environment. */
export const execaRunner: ProcessRunner = createRunner();

function childEnv(baseEnv: NodeJS.ProcessEnv | undefined, env: Record<string, string> | undefined) {
  return baseEnv === undefined ? { env } : { env: { ...baseEnv, ...env }, extendEnv: false };
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
