/**
 * The bench runs under a directory, for the commands that read many (`fleet report`, `fleet history`):
 * run directories at any depth and stored runs of the evidence store (`evidence/<id>.tar.br`, read
 * where they lie), each loaded and analysed once by bench's analysis. What is not a bench run is noted,
 * and what cannot be read is listed as unread.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { analyze } from '../bench/analysis/analyze.js';
import type { Run } from '../bench/record/schema.js';
import { loadRun } from '../bench/record/store.js';
import { UserError } from '../core/errors.js';
import { isStoredRunName, openRun, storedRunId } from '../record/evidence.js';
import { CAPACITY_FILE, PROBE_FILE, RUN_FILE } from '../record/kinds.js';
import type { FleetMember, NotCompared } from './report/analyze.js';

interface Found {
  runs: string[];
  others: NotCompared[];
  /** `dir` as the report names it: relative to the root, a stored run by its file's path. */
  shown(dir: string): string;
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Every run directory under `root`: a directory with an entry named run.json, of whatever kind, is a
 * run (not searched further; loadRun refuses a run.json that is not a regular file, without blocking
 * on a FIFO). Probe and capacity records are noted. Symbolic links to directories are followed, each
 * directory walked once (by device and inode), so a link back up the tree ends; what cannot be read
 * (a directory, a broken link, a FIFO, socket or device where a node's results could be) is listed as
 * unread, and fails the fleet.
 */
async function findRuns(root: string): Promise<Found> {
  // Where each stored run was unpacked, and the file it came from (relative to the root).
  const unpacked = new Map<string, string>();
  const shown = (dir: string) => {
    for (const [at, file] of unpacked)
      if (dir === at || dir.startsWith(`${at}${path.sep}`))
        return path.join(path.dirname(file), storedRunId(file), path.relative(at, dir));
    return path.relative(root, dir);
  };
  const found: Found = { runs: [], others: [], shown };
  const walked = new Map<string, string>();
  const unread = (where: string, reason: string) => void found.others.push({ path: where, reason, fails: true });
  const walk = async (dir: string): Promise<void> => {
    const where = shown(dir) || path.basename(path.resolve(root));
    let entries: Dirent[];
    try {
      const id = await stat(dir);
      const first = walked.get(`${id.dev}:${id.ino}`);
      if (first !== undefined) {
        found.others.push({
          path: where,
          reason: `the same directory as ${first} (through a symbolic link): its runs are read once, there`,
          fails: false,
        });
        return;
      }
      walked.set(`${id.dev}:${id.ino}`, where);
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (dir === root)
        throw new UserError(
          `cannot read ${root} (${errorCode(error)}): give a directory holding run directories made by gpushare bench`,
        );
      unread(where, `a directory that cannot be read (${errorCode(error)})`);
      return;
    }
    const names = new Set(entries.map((e) => e.name));
    if (names.has(RUN_FILE)) {
      found.runs.push(dir);
      return;
    }
    if (names.has(PROBE_FILE))
      found.others.push({
        path: where,
        reason: 'a probe record (what breaks): it has no ratios to compare',
        fails: false,
      });
    if (names.has(CAPACITY_FILE))
      found.others.push({
        path: where,
        reason: 'a capacity record (a rate search at a latency target): not a bench run, it has no ratios to compare',
        fails: false,
      });
    const subdirs: string[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      // A stored run (evidence/<id>.tar.br) is read where it lies: walked as the directory it unpacks to.
      if (entry.isFile()) {
        if (!isStoredRunName(entry.name)) continue;
        const opened = await openRun(full).catch((error: unknown) => {
          if (!(error instanceof UserError)) throw error;
          unread(shown(full), error.message); // a damaged one fails the fleet, as a run that cannot be read
          return null;
        });
        if (opened === null) continue;
        unpacked.set(opened, path.relative(root, full));
        subdirs.push(opened);
        continue;
      }
      const kind = entry.isSymbolicLink() ? await stat(full).catch((error: unknown) => errorCode(error)) : entry;
      if (typeof kind === 'string') unread(shown(full), `a symbolic link that cannot be followed (${kind})`);
      else if (kind.isDirectory()) subdirs.push(full);
      else if (!kind.isFile()) unread(shown(full), 'not a directory or a regular file (a FIFO, socket or device)');
    }
    for (const sub of subdirs) await walk(sub);
  };
  await walk(root);
  return found;
}

/** A cross-GPU check (bench --gpus) measures how a host's GPUs disturb each other, not one GPU's sharing costs. */
const isCrossCheck = (run: Run) => run.plan.some((c) => c.crossGpu !== undefined);

/** The bench runs under a directory, analysed, and what else is there. */
export interface BenchRuns {
  members: FleetMember[];
  /** Other records (not compared) and what cannot be read (fails). */
  notCompared: NotCompared[];
}

/**
 * Every bench run under `root` (a directory, else a one-line refusal), each loaded and analysed; a
 * cross-GPU check and every other record is noted as not compared, a run.json that cannot be read as
 * unread. Refuses a directory that holds no bench run and nothing unread, naming `command`.
 */
export async function readBenchRuns(root: string, command: string): Promise<BenchRuns> {
  if (!(await stat(root).catch(() => null))?.isDirectory())
    throw new UserError(
      `${root} is not a directory: give a directory holding run directories made by gpushare bench (each with a run.json, at any depth)`,
    );
  const found = await findRuns(root);
  const members: FleetMember[] = [];
  const notCompared = [...found.others];
  for (const dir of found.runs) {
    const where = found.shown(dir);
    try {
      const run = await loadRun(dir);
      if (isCrossCheck(run)) {
        notCompared.push({
          path: where,
          reason: "a cross-GPU check of a multi-GPU host (how its GPUs disturb each other), not one GPU's bench",
          fails: false,
        });
        continue;
      }
      // The host's name as the run recorded it (runs before 2026-11-23 did not): the path names the node either way.
      members.push({ path: where, host: run.fingerprint.host.hostname ?? null, run, analysis: analyze(run) });
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      notCompared.push({ path: where || path.basename(path.resolve(dir)), reason: error.message, fails: true });
    }
  }
  if (members.length === 0 && notCompared.every((x) => !x.fails)) {
    const others =
      found.others.length > 0
        ? ` (it holds ${found.others.map((x) => x.path).join(', ')}, which are not bench runs)`
        : '';
    throw new UserError(
      `no bench runs under ${root}${others}: ${command} expects run directories made by gpushare bench, each with a run.json, at any depth`,
    );
  }
  return { members, notCompared };
}

/** A directory's name as a file-name token (a report's default name), or `fallback` when nothing of it is safe. */
export function dirToken(dir: string, fallback: string): string {
  return (
    path
      .basename(path.resolve(dir))
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .replace(/\.\.+/g, '.') || fallback
  );
}
