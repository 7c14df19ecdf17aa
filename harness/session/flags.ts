/** The flags every command that makes a run directory shares: where it runs, where it writes, how it prints, how it continues. */
import { UserError } from '../core/errors.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';

/** For a run of `kind` (probe, capacity), whose --json prints `printed`. */
export function runFlags<const Kind extends string>(kind: Kind, printed: string) {
  return {
    gpu: { type: 'number', describe: 'index of the GPU', defaultDescription: '0' },
    out: { type: 'string', describe: 'run directory', defaultDescription: `runs/results/<date>-<gpu>-${kind}-<id>` },
    python: { type: 'string', describe: 'Python interpreter with PyTorch', defaultDescription: DEFAULT_PYTHON },
    'allow-busy': { type: 'boolean', describe: 'measure even if another process uses the GPU' },
    json: { type: 'boolean', describe: `print ${printed} as JSON` },
    resume: {
      type: 'string',
      describe: `continue the interrupted or killed ${kind} run in this directory, with its own settings`,
    },
  } as const;
}

/** Flags that only say how a run prints: they may come with --resume. */
const PRINTING_FLAGS = ['json', 'quiet', 'resume'];

/**
 * Refuses, with --resume, any flag of `flags` (a command's flag definitions) that shapes what is
 * measured: a resumed run keeps its own settings. `args` are the raw arguments (camelCase keys).
 */
export function refuseSettingsWithResume(flags: Readonly<Record<string, unknown>>, args: object): void {
  const given = new Map<string, unknown>(Object.entries(args));
  const clash = Object.keys(flags).find(
    (flag) =>
      !PRINTING_FLAGS.includes(flag) &&
      given.get(flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())) !== undefined,
  );
  if (clash !== undefined) throw new UserError(`--resume continues a run with its own settings: drop --${clash}`);
  const rest = given.get('rest');
  if (Array.isArray(rest) && rest.length > 0)
    throw new UserError('--resume continues a run with its own settings: drop the command after --');
}
