/** The flags every command that makes a run directory shares: where it runs, where it writes, how it prints. */
import { DEFAULT_PYTHON } from '../workload/registry.js';

/** For a run of `kind` (probe, capacity), whose --json prints `printed`. */
export function runFlags<const Kind extends string>(kind: Kind, printed: string) {
  return {
    gpu: { type: 'number', describe: 'index of the GPU', defaultDescription: '0' },
    out: { type: 'string', describe: 'run directory', defaultDescription: `results/<date>-<gpu>-${kind}-<id>` },
    python: { type: 'string', describe: 'Python interpreter with PyTorch', defaultDescription: DEFAULT_PYTHON },
    'allow-busy': { type: 'boolean', describe: 'measure even if another process uses the GPU' },
    json: { type: 'boolean', describe: `print ${printed} as JSON` },
  } as const;
}
