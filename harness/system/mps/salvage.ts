/**
 * The forced exit's (second Ctrl-C) rescue of an MPS daemon's logs: synchronous, because
 * process.exit follows at once. Copies them into the run directory and removes the private root,
 * only when the root is provably this run's (see ownership.ts).
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMpsRootPath, MPS_MARKER, type MpsMarker } from './ownership.js';

/**
 * Copies control.log and server.log to `<runDir>/<logDirectory>/`, removes the root, and returns the
 * copied paths (relative); null when the root is not provably this run's or the copy failed, and the
 * root, with its logs, stays where it is.
 */
export function salvageMpsLogsSync(
  pipeDirectory: string,
  runId: string,
  runDir: string,
  logDirectory = 'mps',
  tempRoot = os.tmpdir(),
): string[] | null {
  const root = path.dirname(pipeDirectory);
  if (path.basename(pipeDirectory) !== 'pipe' || !isMpsRootPath(root, tempRoot)) return null;
  try {
    if (!lstatSync(root).isDirectory()) return null;
    const marker = JSON.parse(readFileSync(path.join(root, MPS_MARKER), 'utf8')) as MpsMarker;
    if (marker.runId !== runId) return null;
    const copied: string[] = [];
    mkdirSync(path.join(runDir, logDirectory), { recursive: true });
    for (const name of ['control.log', 'server.log']) {
      const file = path.join(root, 'log', name);
      if (!existsSync(file)) continue;
      copyFileSync(file, path.join(runDir, logDirectory, name));
      copied.push(`${logDirectory}/${name}`);
    }
    rmSync(root, { recursive: true, force: true });
    return copied;
  } catch {
    // A failed copy keeps the root, and its logs, where they are.
    return null;
  }
}
