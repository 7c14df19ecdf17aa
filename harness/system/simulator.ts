/**
 * gpushare's simulated GPU machine (simulator/ in the package): the runner that puts it first on the
 * PATH of everything a command starts, and how a fingerprint knows it was taken from it.
 */
import { constants, realpathSync } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { SIMULATOR_BIN } from '../core/paths.js';
import type { ProcessRunner } from '../core/process.js';

/** `GPUSHARE_SIMULATE=1` runs any command on the simulator. */
export const SIMULATE_ENV = 'GPUSHARE_SIMULATE';

/** Whether `env` asks for the simulator. */
export function simulateRequested(env: NodeJS.ProcessEnv): boolean {
  return env[SIMULATE_ENV] === '1';
}

/**
 * `runner` with the simulator's executables first on the PATH of every process it starts and of
 * every lookup: nvidia-smi, the MPS daemon and python3 are the simulator's, the rest stays real.
 */
export function simulatedRunner(runner: ProcessRunner): ProcessRunner {
  const withSimulator = (env: Record<string, string> | undefined) => ({
    ...env,
    PATH: [SIMULATOR_BIN, env?.PATH ?? process.env.PATH ?? ''].join(path.delimiter),
  });
  return {
    exec: (argv, options = {}) => runner.exec(argv, { ...options, env: withSimulator(options.env) }),
    spawn: (argv, options = {}) => runner.spawn(argv, { ...options, env: withSimulator(options.env) }),
    async which(command) {
      if (command.includes('/')) return runner.which(command);
      const candidate = path.join(SIMULATOR_BIN, command);
      const found = await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      );
      return found ? candidate : runner.which(command);
    },
  };
}

/** Whether the nvidia-smi at `smiPath` is the simulator's (through any link to it). */
export function isSimulator(smiPath: string): boolean {
  try {
    return realpathSync(path.dirname(smiPath)) === realpathSync(SIMULATOR_BIN);
  } catch {
    return false;
  }
}
