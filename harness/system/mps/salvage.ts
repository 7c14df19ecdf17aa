/**
 * The forced exit's (second Ctrl-C) rescue of an MPS daemon's logs: synchronous, because
 * process.exit follows at once. Copies them into the run directory and removes the private root,
 * only when the root is provably this run's (see ownership.ts).
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkMpsRootSync, removeMpsRemnantSync, removeMpsRootSync } from './ownership.js';

/**
 * Copies control.log and server.log to `<runDir>/<logDirectory>/`, removes the root, and returns the
 * copied paths (relative); null when the root is not provably this run's or the copy failed, and the
 * root, with its logs, stays where it is. An empty remnant (see removeRecordedMpsRootSync) is removed.
 */
export function salvageMpsLogsSync(
  pipeDirectory: string,
  runId: string,
  runDir: string,
  logDirectory = 'mps',
  tempRoot = os.tmpdir(),
): string[] | null {
  const checked = checkMpsRootSync(pipeDirectory, runId, tempRoot);
  // A root cut short while being made holds no logs: its empty remnant goes, and nothing is left to save.
  if (!checked.ok) return !checked.missing && removeMpsRemnantSync(pipeDirectory, tempRoot) ? [] : null;
  const root = checked.root;
  try {
    const copied: string[] = [];
    mkdirSync(path.join(runDir, logDirectory), { recursive: true });
    for (const name of ['control.log', 'server.log']) {
      const file = path.join(root, 'log', name);
      if (!existsSync(file)) continue;
      try {
        copyFileSync(file, path.join(runDir, logDirectory, name));
      } catch (error) {
        // Gone between the check and the copy: the run's own shutdown was removing the root when the
        // second signal came. Nothing left to save; the root still goes.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(file)) continue;
        throw error;
      }
      copied.push(`${logDirectory}/${name}`);
    }
    removeMpsRootSync(root);
    return copied;
  } catch {
    // A failed copy keeps the root, and its logs, where they are.
    return null;
  }
}
