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
  const walk = new RunWalk(root);
  await walk.walk(root);
  return walk.found;
}

/** One walk of findRuns: what it found, the directories walked and the stored runs unpacked so far. */
class RunWalk {
  readonly found: Found;
  /** Where each stored run was unpacked, and the file it came from (relative to the root). */
  private readonly unpacked = new Map<string, string>();
  /** Each directory walked (by device and inode) and where it was first. */
  private readonly walked = new Map<string, string>();

  constructor(private readonly root: string) {
    this.found = { runs: [], others: [], shown: (dir) => this.shown(dir) };
  }

  private shown(dir: string): string {
    for (const [at, file] of this.unpacked)
      if (dir === at || dir.startsWith(`${at}${path.sep}`))
        return path.join(path.dirname(file), storedRunId(file), path.relative(at, dir));
    return path.relative(this.root, dir);
  }

  private unread(where: string, reason: string): void {
    this.found.others.push({ path: where, reason, fails: true });
  }

  private other(where: string, reason: string): void {
    this.found.others.push({ path: where, reason, fails: false });
  }

  async walk(dir: string): Promise<void> {
    const where = this.shown(dir) || path.basename(path.resolve(this.root));
    const entries = await this.entries(dir, where);
    if (entries === null) return;
    const names = new Set(entries.map((e) => e.name));
    if (names.has(RUN_FILE)) {
      this.found.runs.push(dir);
      return;
    }
    if (names.has(PROBE_FILE)) this.other(where, 'a probe record (what breaks): it has no ratios to compare');
    if (names.has(CAPACITY_FILE))
      this.other(
        where,
        'a capacity record (a rate search at a latency target): not a bench run, it has no ratios to compare',
      );
    const subdirs: string[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const sub = await this.subdir(path.join(dir, entry.name), entry);
      if (sub !== null) subdirs.push(sub);
    }
    for (const sub of subdirs) await this.walk(sub);
  }

  /** dir's entries; null where it was walked already (noted) or cannot be read (listed as unread; the root: refused). */
  private async entries(dir: string, where: string): Promise<Dirent[] | null> {
    try {
      const id = await stat(dir);
      const first = this.walked.get(`${id.dev}:${id.ino}`);
      if (first !== undefined) {
        this.other(where, `the same directory as ${first} (through a symbolic link): its runs are read once, there`);
        return null;
      }
      this.walked.set(`${id.dev}:${id.ino}`, where);
      return await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (dir === this.root)
        throw new UserError(
          `cannot read ${this.root} (${errorCode(error)}): give a directory holding run directories made by gpushare bench`,
        );
      this.unread(where, `a directory that cannot be read (${errorCode(error)})`);
      return null;
    }
  }

  /** The directory to walk that the entry `full` leads to (a link followed, a stored run unpacked); null: none (what cannot be read is listed). */
  private async subdir(full: string, entry: Dirent): Promise<string | null> {
    // A stored run (evidence/<id>.tar.br) is read where it lies: walked as the directory it unpacks to.
    if (entry.isFile()) return isStoredRunName(entry.name) ? this.unpack(full) : null;
    const kind = entry.isSymbolicLink() ? await stat(full).catch((error: unknown) => errorCode(error)) : entry;
    if (typeof kind === 'string') this.unread(this.shown(full), `a symbolic link that cannot be followed (${kind})`);
    else if (kind.isDirectory()) return full;
    else if (!kind.isFile())
      this.unread(this.shown(full), 'not a directory or a regular file (a FIFO, socket or device)');
    return null;
  }

  /** The directory the stored run `full` unpacks to; null where it cannot be read (listed as unread: it fails the fleet). */
  private async unpack(full: string): Promise<string | null> {
    const opened = await openRun(full).catch((error: unknown) => {
      if (!(error instanceof UserError)) throw error;
      this.unread(this.shown(full), error.message);
      return null;
    });
    if (opened !== null) this.unpacked.set(opened, path.relative(this.root, full));
    return opened;
  }
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
