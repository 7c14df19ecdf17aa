/** Run directories and output files: opened and locked, written atomically (temp file, then rename), read without blocking. */

import { constants as fsConstants, mkdirSync } from 'node:fs';
import { access, appendFile, constants, mkdir, open, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { UserError } from '../core/errors.js';
import { kindText, RECORD_KINDS, type RecordKind, recordKindIn } from './kinds.js';
import { acquireRunLock, LOCK_FILE, type RunLock } from './lock.js';

/** Write errors the user can fix (space, quota, a read-only or failing disk, permissions): not bugs. */
const USER_WRITE_ERRORS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO', 'EACCES', 'EPERM']);

/** The atomic file writer: a seam, so tests can make writes fail. */
export type AtomicWriter = (file: string, content: string) => Promise<void>;

/** The default atomic writer: a temp file beside the target, then rename. */
export const atomicWrite: AtomicWriter = (file, content) => writeFileAtomic(file, content);

/** The file-system seam of one run directory: writes any file of it, relative to the directory. */
export interface RecordWriter {
  readonly dir: string;
  writeText(relativePath: string, content: string): Promise<void>;
}

/** The writer of `dir`, a run directory of `kind`; `writer` is the atomic writer (a seam for tests). */
export function directoryWriter(
  dir: string,
  writer: AtomicWriter = atomicWrite,
  kind: RecordKind = 'bench',
): RecordWriter {
  return {
    dir,
    async writeText(relativePath, content) {
      const file = path.join(dir, relativePath);
      try {
        await mkdir(path.dirname(file), { recursive: true });
        await writer(file, content);
      } catch (error) {
        throw writeError(file, dir, kind, error);
      }
    },
  };
}

/** A run's JSON record (probe.json, capacity.json, host.json), written atomically after every step. */
export interface JsonRecordStore<R> {
  save(record: R): Promise<void>;
  /** save, synchronously: for a forced exit, where process.exit follows at once. */
  saveSync(record: R): void;
}

/** The record store of `kind` in `dir`: JSON, indented by `indent` spaces (0: one line). */
export function jsonRecordStore<R>(
  dir: string,
  kind: RecordKind,
  indent: number,
  writer: AtomicWriter = atomicWrite,
): JsonRecordStore<R> {
  const { file } = RECORD_KINDS[kind];
  const files = directoryWriter(dir, writer, kind);
  const text = (record: R) => `${JSON.stringify(record, null, indent || undefined)}\n`;
  return {
    save: (record) => files.writeText(file, text(record)),
    saveSync(record) {
      mkdirSync(dir, { recursive: true });
      writeFileAtomic.sync(path.join(dir, file), text(record));
    },
  };
}

/**
 * Opens `dir` for a new run of `kind` and locks it: creates it, and refuses one that another harness
 * holds, that holds another run (of this kind or another, named), that holds files of the user's, or
 * that cannot be written. Every kind of run directory is opened here, so the refusals are the same.
 */
export async function openRunDirectory(dir: string, runId: string, kind: RecordKind): Promise<RunLock> {
  if (dir.trim() === '') throw new UserError('--out is empty: give the directory the run should go to');
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (error) {
    throw new UserError(
      `cannot write the output directory ${dir} (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another with --out`,
    );
  }
  // Locked before looking: a second harness that started at the same moment must not pass the checks too.
  const lock = await acquireRunLock(dir);
  try {
    await refuseContents(dir, runId, kind);
  } catch (error) {
    lock.release();
    throw error;
  }
  return lock;
}

/**
 * What openRunDirectory would refuse in `dir` for a new run of `kind`, checked without creating or
 * locking anything (bench --dry-run): a directory that holds a run, or files of the user's.
 */
export async function checkNewRunDirectory(dir: string, kind: RecordKind): Promise<void> {
  if (dir.trim() === '') throw new UserError('--out is empty: give the directory the run should go to');
  const exists = await access(dir).then(
    () => true,
    () => false,
  );
  if (exists) await refuseContents(dir, null, kind);
}

/** Refuses `dir` unless it is empty or holds the run `runId` of `kind` (null: a run not made yet). */
async function refuseContents(dir: string, runId: string | null, kind: RecordKind): Promise<void> {
  const found = await recordKindIn(dir);
  if (found !== null && found !== kind)
    throw new UserError(
      `${dir} holds ${kindText(found)}, not a ${RECORD_KINDS[kind].noun}: choose an empty or new directory with --out`,
    );
  if (found === kind) {
    const file = path.join(dir, RECORD_KINDS[kind].file);
    const existing = await readRegularFile(file, 'choose an empty or new directory with --out');
    const { id, status } = (() => {
      try {
        return JSON.parse(existing) as { id?: unknown; status?: unknown };
      } catch {
        return { id: undefined, status: undefined };
      }
    })();
    // One cut short (interrupted, or killed while running) is continued, not replaced: say how.
    const unfinished = status === 'running' || status === 'interrupted';
    const resume = unfinished ? `continue it with ${RECORD_KINDS[kind].command} --resume ${dir}, or ` : '';
    if (id !== runId)
      throw new UserError(
        `${dir} already holds a different run (${String(id ?? `unreadable ${RECORD_KINDS[kind].file}`)}${unfinished ? `, ${status}` : ''}): ${resume}choose an empty directory with --out`,
      );
    return;
  }
  // Not a run: whatever is there is the user's, and a run would overwrite its files.
  const entries = (await readdir(dir)).filter((name) => name !== LOCK_FILE);
  if (entries.length > 0)
    throw new UserError(
      `${dir} is not empty and holds no gpushare run (it has ${entries[0]}${entries.length > 1 ? ` and ${entries.length - 1} more` : ''}): choose an empty or new directory with --out`,
    );
}

/** Removes the temp files (`run.json.<n>`, `probe.json.<n>`, …) that a harness killed mid-write left; only the lock holder may. */
export async function removeStaleTempFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const written = [...Object.values(RECORD_KINDS).map((k) => k.file), 'trials.csv', 'samples.csv'];
  const stale = names.filter((name) => written.includes(/^(.+)\.\d+$/.exec(name)?.[1] ?? ''));
  for (const name of stale) await unlink(path.join(dir, name)).catch(() => undefined);
  return stale;
}

/** A failed write of a run file: the user's to fix (one line) where the disk refused it, else a bug. */
function writeError(file: string, dir: string, kind: RecordKind, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === undefined || !USER_WRITE_ERRORS.has(code)) return error;
  const { unit, command } = RECORD_KINDS[kind];
  return new UserError(
    `cannot write ${file} (${code}): the ${unit}s finished before it are kept in ${dir}; fix the disk and continue with ${command} --resume ${dir}`,
  );
}

/**
 * Reads a file that must be a regular file: a FIFO or device would block the read forever (or, as
 * /dev/zero, never end). `fix` says what to give instead; a file over `maxBytes` is refused too. A
 * missing file rejects with its ENOENT, for the caller to word.
 */
export async function readRegularFile(
  file: string,
  fix = 'give a run directory made by gpushare bench',
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<string> {
  return (await readRegularBytes(file, fix, maxBytes)).toString('utf8');
}

/** readRegularFile's bytes, for a file that is no text (a stored run's archive). */
export async function readRegularBytes(
  file: string,
  fix: string,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Buffer> {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
  const handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new UserError(`${file} is not a regular file: ${fix}`);
    if (info.size > maxBytes) throw new UserError(`${file} is ${info.size} bytes, more than ${maxBytes}: ${fix}`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Writes an output file outside a run directory (a JUnit report, an artifact), atomically. */
export async function writeOutputFile(file: string, content: string, options: { mode?: number } = {}): Promise<void> {
  try {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    await writeFileAtomic(file, content, options.mode === undefined ? {} : { mode: options.mode });
  } catch (error) {
    throw new UserError(
      `cannot write ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another path`,
    );
  }
}

/** Appends to a file that others also write to (GitHub's step summary). */
export async function appendOutputFile(file: string, content: string): Promise<void> {
  await appendFile(file, content).catch((error: NodeJS.ErrnoException) => {
    throw new UserError(`cannot append to ${file} (${error.code ?? error.message})`);
  });
}
