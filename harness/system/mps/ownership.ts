/**
 * What proves an MPS directory or process is gpushare's own: the private root gpushare made under
 * the temp directory, the marker file it wrote there, and processes whose environment (or start
 * time, in this boot) ties them to that root. --resume acts only on what this proves.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bootId, processStartedAtMs, readEnviron, readProcess } from '../proc/process-table.js';

/** The prefix of every private MPS root's name. */
export const MPS_ROOT_PREFIX = 'gpushare-mps-';
/** The marker file gpushare writes in every MPS root it creates. */
export const MPS_MARKER = '.gpushare-mps';
/** The kernel's 15-character command name of both MPS binaries. */
export const MPS_COMM_PREFIX = 'nvidia-cuda-mps';

/** What the marker file holds. */
export interface MpsMarker {
  runId: string;
  harnessPid: number;
  bootId: string;
  createdAtMs: number;
  /** The run directory (absolute) whose record lists this daemon: where doctor sends the user. Absent in older markers. */
  runDir?: string;
}

/** A private MPS root's paths, chosen before it is made so that a run can record them first. */
export interface MpsPaths {
  root: string;
  pipeDirectory: string;
  logDirectory: string;
}

/** A private MPS root made before the daemon starts. */
export interface PreparedMps extends MpsPaths {
  marker: MpsMarker;
}

const NAME_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh root's paths, `<temp>/gpushare-mps-XXXXXX` (as mkdtemp names it), not made yet. */
export function chooseMpsDirectory(tempRoot = os.tmpdir()): MpsPaths {
  const suffix = [...randomBytes(6)].map((b) => NAME_CHARACTERS[b % NAME_CHARACTERS.length]).join('');
  const root = path.join(path.resolve(tempRoot), `${MPS_ROOT_PREFIX}${suffix}`);
  return { root, pipeDirectory: path.join(root, 'pipe'), logDirectory: path.join(root, 'log') };
}

/**
 * Makes the chosen root (0700, refused if anything is there already), writes the marker that proves
 * it is the run's in `runDir` first, then pipe/ and log/: a harness killed in between leaves a root
 * its marker proves, or an empty remnant (see removeRecordedMpsRootSync).
 */
export async function makeMpsDirectory(paths: MpsPaths, runId: string, runDir: string | null): Promise<PreparedMps> {
  const marker: MpsMarker = {
    runId,
    harnessPid: process.pid,
    bootId: await bootId(),
    createdAtMs: Date.now(),
    ...(runDir !== null ? { runDir: path.resolve(runDir) } : {}),
  };
  // Not recursive: a directory already there (another's) is refused, never taken over.
  await mkdir(paths.root, { mode: 0o700 });
  try {
    await writeFile(path.join(paths.root, MPS_MARKER), `${JSON.stringify(marker)}\n`, { mode: 0o600, flag: 'wx' });
    await chmod(paths.root, 0o700);
    await mkdir(paths.pipeDirectory, { mode: 0o700 });
    await mkdir(paths.logDirectory, { mode: 0o700 });
    return { ...paths, marker };
  } catch (error) {
    removeMpsRootSync(paths.root);
    throw error;
  }
}

/**
 * Removes a root proven to be the run's: all but the marker, then the marker, then the root. Synchronous,
 * so that a signal's forced exit never runs halfway through it, and in that order, so that a harness
 * killed halfway leaves a root its marker still proves, or an empty remnant.
 */
export function removeMpsRootSync(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) if (name !== MPS_MARKER) rmSync(path.join(root, name), { recursive: true, force: true });
  rmSync(path.join(root, MPS_MARKER), { force: true });
  rmSync(root, { recursive: true, force: true });
}

/**
 * Removes what a run recorded at `pipeDirectory` when it is provably the run's root (its marker names
 * `runId`), or the remnant a harness killed while making or removing one leaves: a real directory of
 * this user's at a path of gpushare's shape holding nothing but empty pipe/ and log/ directories and an
 * empty marker, whose removal loses nothing. Anything else stays. Says what it did.
 */
export function removeRecordedMpsRootSync(
  pipeDirectory: string,
  runId: string,
  tempRoot = os.tmpdir(),
): 'removed' | 'remnant removed' | 'missing' | 'not ours' {
  const checked = checkMpsRootSync(pipeDirectory, runId, tempRoot);
  if (checked.ok) {
    removeMpsRootSync(checked.root);
    return 'removed';
  }
  if (checked.missing) return 'missing';
  return removeMpsRemnantSync(pipeDirectory, tempRoot) ? 'remnant removed' : 'not ours';
}

/**
 * Removes the root of `pipeDirectory` when it is the empty remnant a harness killed while making or
 * removing a root leaves (see removeRecordedMpsRootSync), at a path of gpushare's shape; true when it did.
 */
export function removeMpsRemnantSync(pipeDirectory: string, tempRoot = os.tmpdir()): boolean {
  const root = rootOfPipe(pipeDirectory, tempRoot);
  if (root === null || !isEmptyRemnantSync(root)) return false;
  for (const name of readdirSync(root)) {
    const entry = path.join(root, name);
    if (name === MPS_MARKER) rmSync(entry);
    else rmdirSync(entry);
  }
  rmdirSync(root);
  return true;
}

/** A directory of this user's whose entries are only empty pipe/ and log/ directories and an empty marker file. */
function isEmptyRemnantSync(root: string): boolean {
  try {
    const info = lstatSync(root);
    if (!info.isDirectory() || info.uid !== process.getuid?.()) return false;
    return readdirSync(root).every((name) => {
      const entry = lstatSync(path.join(root, name));
      if (name === MPS_MARKER) return entry.isFile() && entry.size === 0;
      return (
        (name === 'pipe' || name === 'log') && entry.isDirectory() && readdirSync(path.join(root, name)).length === 0
      );
    });
  } catch {
    return false;
  }
}

/** Chooses and makes a fresh root at once: for a daemon no record needs to know of first. */
export function prepareMpsDirectory(
  runId: string,
  runDir: string | null = null,
  tempRoot = os.tmpdir(),
): Promise<PreparedMps> {
  return makeMpsDirectory(chooseMpsDirectory(tempRoot), runId, runDir);
}

/** True when `root` has the shape of a root prepareMpsDirectory makes: `<temp>/gpushare-mps-XXXXXX`. */
export function isMpsRootPath(root: string, tempRoot = os.tmpdir()): boolean {
  return path.dirname(root) === path.resolve(tempRoot) && /^gpushare-mps-[A-Za-z0-9]{6}$/.test(path.basename(root));
}

/** A recorded pipe directory, checked: the root gpushare made for this run, or why not. */
export type RootCheck =
  | { ok: true; root: string; logDirectory: string; marker: MpsMarker }
  | { ok: false; reason: string; missing?: true };

/** The root of `pipeDirectory` when it has the shape gpushare gives one, `<temp>/gpushare-mps-XXXXXX/pipe`; else null. */
function rootOfPipe(pipeDirectory: string, tempRoot: string): string | null {
  const root = path.dirname(pipeDirectory);
  return path.basename(pipeDirectory) === 'pipe' && isMpsRootPath(root, tempRoot) ? root : null;
}

/**
 * Checks that `pipeDirectory` is `<temp>/gpushare-mps-XXXXXX/pipe`, that the root is a real
 * directory owned by this user, and that it holds this run's marker. Anything else is not ours.
 * Synchronous: the forced exit checks with it too.
 */
export function checkMpsRootSync(pipeDirectory: string, runId: string, tempRoot = os.tmpdir()): RootCheck {
  const root = rootOfPipe(pipeDirectory, tempRoot);
  if (root === null)
    return {
      ok: false,
      reason: `${pipeDirectory} is not under gpushare's ${path.join(tempRoot, `${MPS_ROOT_PREFIX}XXXXXX`)}/pipe`,
    };
  // Recorded, then never made (or already removed): nothing of it is there to act on.
  if (lstatSync(root, { throwIfNoEntry: false }) === undefined)
    return { ok: false, reason: `${root} does not exist`, missing: true };
  const marker = readMpsMarkerSync(root);
  if (typeof marker === 'string') return { ok: false, reason: marker };
  if (marker.runId !== runId)
    return {
      ok: false,
      reason: `${path.join(root, MPS_MARKER)} belongs to run ${String(marker.runId)}, not ${runId}`,
    };
  return { ok: true, root, logDirectory: path.join(root, 'log'), marker };
}

/** The marker of `root`, a real directory of this user's holding gpushare's marker file; else why not. */
export function readMpsMarkerSync(root: string): MpsMarker | string {
  try {
    const info = lstatSync(root, { throwIfNoEntry: false });
    if (info === undefined) return `${root} does not exist`;
    if (!info.isDirectory()) return `${root} is not a directory`;
    if (info.uid !== process.getuid?.()) return `${root} is owned by uid ${info.uid}, not this user`;
    const markerFile = path.join(root, MPS_MARKER);
    const markerInfo = lstatSync(markerFile, { throwIfNoEntry: false });
    if (markerInfo === undefined || !markerInfo.isFile())
      return `${root} holds no ${MPS_MARKER} marker written by gpushare`;
    const marker = JSON.parse(readFileSync(markerFile, 'utf8')) as MpsMarker;
    if (typeof marker.runId === 'string') return marker;
  } catch {
    // Unreadable: below.
  }
  return `${path.join(root, MPS_MARKER)} is unreadable`;
}

/**
 * Whether `pid` is an MPS process started for `pipeDirectory`: an nvidia-cuda-mps* command in the
 * boot the marker was written in, whose environment names the pipe directory or, where the
 * environment cannot be read, which started after the marker was written. Null means proven.
 */
export async function whyNotOurMpsProcess(
  pid: number,
  pipeDirectory: string,
  marker: MpsMarker,
): Promise<string | null> {
  const info = await readProcess(pid);
  if (info === null || info.state === 'Z') return 'not running';
  if (!info.comm.startsWith(MPS_COMM_PREFIX)) return `it is ${info.comm}, not an MPS process`;
  if ((await bootId()) !== marker.bootId) return 'the machine has rebooted since gpushare started its daemon';
  const environ = await readEnviron(pid);
  if (environ !== null) {
    return environ.includes(`CUDA_MPS_PIPE_DIRECTORY=${pipeDirectory}`)
      ? null
      : `its environment does not name ${pipeDirectory}`;
  }
  const startedAt = await processStartedAtMs(pid);
  // The boot time is whole seconds: allow one second either way.
  return startedAt !== null && startedAt + 1000 >= marker.createdAtMs
    ? null
    : 'it started before gpushare made its directory';
}
