import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root (where package.json and workloads/ are), from source or from dist/. */
export const PACKAGE_ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above harness/');
    dir = parent;
  }
  return dir;
})();

export const WORKLOADS_DIR = path.join(PACKAGE_ROOT, 'workloads');
/** The simulated GPU machine's executables (nvidia-smi, nvidia-cuda-mps-control, python3), shipped in the package. */
export const SIMULATOR_BIN = path.join(PACKAGE_ROOT, 'simulator', 'bin');

/**
 * Default output goes under runs/ in the working directory, which the repository's .gitignore names: a
 * run made in a clone (the README's demo) never mixes with the committed reference runs under results/.
 */
export const DEFAULT_OUTPUT_DIR = 'runs';
/** Where a run goes without --out: runs/results/<id> under the working directory. */
export const resultsDir = (cwd: string) => path.join(cwd, DEFAULT_OUTPUT_DIR, 'results');
/** Where reports go without --out: runs/reports/ under the working directory. */
export const reportsDir = (cwd: string) => path.join(cwd, DEFAULT_OUTPUT_DIR, 'reports');
