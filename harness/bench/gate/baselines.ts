/**
 * What `gate --baseline` and `--history` name: one run directory, a directory of run directories, or
 * a glob of them (`*` and `?` in any path segment, expanded here so a quoted pattern works in CI).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../../core/errors.js';
import { isStoredRunName, openRun } from '../../record/evidence.js';
import { RUN_FILE } from '../../record/kinds.js';
import type { Run } from '../record/schema.js';
import { loadRun } from '../record/store.js';

/** The runs a baseline argument names; `single` when it named one run directory. */
export interface BaselineRuns {
  runs: Run[];
  single: boolean;
  /** Directories that looked like runs but could not be read, each "<dir>: why". */
  unreadable: string[];
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
/** A stored run (evidence/<id>.tar.br): what it holds is known once it is opened. */
const isStoredRun = (p: string) => isStoredRunName(p) && existsSync(p) && !isDir(p);
/** A candidate baseline: a directory holding run.json, or a stored run (opened when loaded). */
const isRunDir = (p: string) => isStoredRun(p) || (isDir(p) && existsSync(path.join(p, RUN_FILE)));

/**
 * The bench run `dir` names, or null for a stored run of another kind (a server run, a verify run: no
 * baseline, as a directory without run.json is none). A damaged stored run is a UserError, as any unreadable run.
 */
async function loadCandidate(dir: string): Promise<Run | null> {
  const opened = await openRun(dir);
  if (isStoredRun(dir) && !existsSync(path.join(opened, RUN_FILE))) return null;
  return loadRun(opened);
}

/** Expands `*` and `?` segment by segment; directories only, sorted. */
export function expandPattern(pattern: string): string[] {
  const absolute = path.isAbsolute(pattern);
  const segments = pattern.split(/[/\\]+/).filter((s) => s.length > 0);
  let found = [absolute ? path.parse(path.resolve(pattern)).root : '.'];
  for (const segment of segments) {
    if (!/[*?]/.test(segment)) {
      found = found.map((p) => path.join(p, segment)).filter(isDir);
      continue;
    }
    const re = new RegExp(
      `^${segment
        .split('')
        .map((ch) => (ch === '*' ? '[^/]*' : ch === '?' ? '[^/]' : ch.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
        .join('')}$`,
    );
    found = found.flatMap((p) =>
      readdirSync(p)
        .filter((name) => re.test(name))
        .map((name) => path.join(p, name))
        .filter((q) => isDir(q) || isStoredRun(q))
        .sort(),
    );
  }
  return found.map((p) => (absolute ? p : path.normalize(p)));
}

/**
 * Loads what `spec` names (`flag` names the flag in errors): one run, every run directory inside a
 * directory, or every run directory a glob matches. Names nothing: a one-line error, exit 2.
 */
export async function loadBaselineRuns(spec: string, flag: string): Promise<BaselineRuns> {
  if (isRunDir(spec)) return { runs: [await loadRun(await openRun(spec))], single: true, unreadable: [] };
  let dirs: string[];
  if (/[*?]/.test(spec)) dirs = expandPattern(spec).filter(isRunDir);
  else if (isDir(spec))
    dirs = readdirSync(spec)
      .sort()
      .map((name) => path.join(spec, name))
      .filter(isRunDir);
  else throw new UserError(`${flag} ${spec}: no such run directory, directory of runs or pattern`);
  const none = new UserError(
    `${flag} ${spec}: no run directories there (each holds a ${RUN_FILE}); give a run, a directory of runs or a pattern such as 'baselines/*'`,
  );
  if (dirs.length === 0) throw none;
  const runs: Run[] = [];
  const unreadable: string[] = [];
  for (const dir of dirs) {
    try {
      const run = await loadCandidate(dir);
      if (run !== null) runs.push(run);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      unreadable.push(`${dir}: ${error.message}`);
    }
  }
  if (runs.length === 0 && unreadable.length === 0) throw none; // only stored runs of other kinds
  return { runs, single: false, unreadable };
}
