/**
 * The evidence store: every GPU run the project measured, one brotli-compressed tar a run
 * (`evidence/<run id>.tar.br`, its directory inside named by its id), without what gpushare writes again
 * from the record (CSVs, reports, charts). Every command that reads a run takes such a file where it takes
 * a run directory: the file is unpacked once into a cache named by its content, and read from there.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, constants as fsConstants, fstatSync, openSync, readFileSync } from 'node:fs';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync, constants as zlibConstants } from 'node:zlib';
import * as tar from 'tar';
import { UserError } from '../core/errors.js';
import { type Fingerprint, isSimulated } from '../system/nvidia/schema.js';
import { RECORD_KINDS, REQUESTS_FILE, recordKindIn } from './kinds.js';
import { RunIdSchema } from './record-file.js';
import { readRegularBytes, readRegularFile } from './store.js';

/** A stored run's file name ends so: a tar compressed with brotli (Node.js reads it without another program). */
export const STORED_RUN_SUFFIX = '.tar.br';
/** The store's folder in the repository. */
export const STORE_DIR = 'evidence';

/**
 * A server run's requests file as the store holds it: the plain lines, so brotli compresses them across the
 * whole file (a 16-server run's 70,923 requests: 1.60 MB, against 2.71 MB for the gzip members inside), and
 * opening the run writes REQUESTS_FILE again. Runs stored before it hold REQUESTS_FILE itself.
 */
export const STORED_REQUESTS_FILE = 'requests.jsonl';

/** Whether `file` names a stored run (by its name: the file itself is read by openRun). */
export const isStoredRunName = (file: string): boolean => path.basename(file).endsWith(STORED_RUN_SUFFIX);

/** The run id a stored run's file is named by. */
export const storedRunId = (file: string): string => path.basename(file, STORED_RUN_SUFFIX);

/**
 * What the store leaves out of a run directory (a path relative to it, `/`-separated): gpushare writes
 * each again from the record (`trials.csv`, `samples.csv`, `gpushare report`'s markdown, HTML and charts).
 */
export function isRegenerable(relative: string): boolean {
  const parts = relative.split('/');
  const name = parts.at(-1) ?? '';
  return (
    parts.includes('report') ||
    name.endsWith('.csv') ||
    name === 'report.md' ||
    name === 'report.html' ||
    name.endsWith('.svg')
  );
}

/**
 * Where stored runs are unpacked: one folder per archive's content, so an archive replaced is unpacked anew.
 * GPUSHARE_CACHE_DIR, or a folder of this user's in the temporary directory, which must be this user's
 * alone: a run found there is read as the archive's, so nobody else may have put it there.
 */
async function cacheRoot(): Promise<string> {
  const chosen = process.env.GPUSHARE_CACHE_DIR;
  if (chosen !== undefined) return chosen;
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  const base = path.join(os.tmpdir(), `gpushare-${uid ?? os.userInfo().username}`);
  await mkdir(base, { recursive: true, mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    throw cacheError(base, error);
  });
  const info = await lstat(base);
  if (!info.isDirectory() || (uid !== null && info.uid !== uid) || (info.mode & 0o022) !== 0)
    throw new UserError(
      `${base} is not a folder of this user's alone (owner ${info.uid}, mode ${(info.mode & 0o777).toString(8)}): stored runs are unpacked there, so set GPUSHARE_CACHE_DIR to a folder of yours`,
    );
  return path.join(base, 'evidence');
}

/** A file-system error while unpacking into the cache: the cache's to fix, not the archive's. */
function cacheError(where: string, error: NodeJS.ErrnoException): UserError {
  return new UserError(
    `cannot unpack stored runs into ${where} (${error.code ?? error.message}): set GPUSHARE_CACHE_DIR to a folder of yours`,
  );
}

/** An error the file system raised (it names its system call), as opposed to one of a damaged archive. */
const isSystemError = (error: unknown): error is NodeJS.ErrnoException =>
  typeof (error as NodeJS.ErrnoException).syscall === 'string';

/** The archive's bytes, read without blocking (a FIFO is refused), or a one-line refusal. */
function archiveBytes(file: string): Promise<Buffer> {
  return readRegularBytes(file, 'give a stored run').catch((error: NodeJS.ErrnoException) => {
    if (error instanceof UserError) throw error;
    throw new UserError(
      error.code === 'ENOENT'
        ? `${file}: no such stored run; the store's runs are listed in ${STORE_DIR}/README.md`
        : `cannot read ${file} (${error.code ?? error.message})`,
    );
  });
}

/**
 * The run directory `run` names: itself, or, for a stored run (`<id>.tar.br`), the directory it unpacks to
 * (once per archive content; later calls find it there). A damaged archive is one line, never a stack.
 */
export async function openRun(run: string): Promise<string> {
  if (!isStoredRunName(run)) return run;
  const id = storedRunId(run);
  if (!RunIdSchema.safeParse(id).success)
    throw new UserError(`${run}: a stored run is named <run id>${STORED_RUN_SUFFIX}, and ${id} is no run id`);
  const bytes = await archiveBytes(run);
  const root = path.join(await cacheRoot(), createHash('sha256').update(bytes).digest('hex').slice(0, 16));
  const dir = path.join(root, id);
  if ((await lstat(dir).catch(() => null))?.isDirectory()) return dir;
  const scratch = await mkdir(root, { recursive: true })
    .then(() => mkdtemp(path.join(root, '.unpack-')))
    .catch((error: NodeJS.ErrnoException) => {
      throw cacheError(root, error);
    });
  try {
    // Only the run's own folder is unpacked; node-tar refuses absolute paths and "..".
    const unpack = tar.x({ cwd: scratch, strict: true, filter: (p) => p === id || p.startsWith(`${id}/`) });
    await new Promise((resolve, reject) => {
      unpack.on('close', resolve).on('error', reject);
      unpack.end(unbrotli(bytes));
    });
    if (!(await lstat(path.join(scratch, id)).catch(() => null))?.isDirectory())
      throw new UserError(`${run} holds no folder ${id}/: it is not a run stored by gpushare evidence add`);
    await restoreRequests(path.join(scratch, id));
    // Another process may have unpacked the same archive meanwhile: its copy is the same bytes.
    await rename(path.join(scratch, id), dir).catch((error: NodeJS.ErrnoException) => {
      if (!['EEXIST', 'ENOTEMPTY'].includes(error.code ?? '')) throw error;
    });
  } catch (error) {
    if (error instanceof UserError) throw error;
    if (isSystemError(error)) throw cacheError(root, error);
    throw new UserError(
      `${run} could not be unpacked (${(error as Error).message}): it is damaged; take it again from git`,
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return dir;
}

/** A run unpacked: its requests' plain lines (STORED_REQUESTS_FILE) as REQUESTS_FILE again, as the run wrote it. */
async function restoreRequests(dir: string): Promise<void> {
  const plain = path.join(dir, STORED_REQUESTS_FILE);
  if (!(await lstat(plain).catch(() => null))?.isFile()) return;
  await writeFile(path.join(dir, REQUESTS_FILE), gzipSync(await readFile(plain)));
  await rm(plain);
}

/**
 * Whether run `run` (a directory or a stored run) holds a file `name` at its top: a stored run's is read
 * from its archive's listing, synchronously, for the option checks that must know a run's kind.
 */
export function runHolds(run: string, name: string): boolean {
  if (!isStoredRunName(run)) return existsSync(path.join(run, name));
  const wanted = `${storedRunId(run)}/${name}`;
  let found = false;
  try {
    // The parser reads a whole buffer synchronously: every entry is seen before end() returns.
    // Each entry's body is skipped (resume), or the parser would wait at the first one for a reader.
    const onReadEntry = (entry: tar.ReadEntry) => {
      found ||= entry.path === wanted;
      entry.resume();
    };
    const bytes = regularFileSync(run);
    if (bytes === null) return false;
    new tar.Parser({ strict: true, onReadEntry }).end(unbrotli(bytes));
  } catch {
    return false; // openRun says what is wrong with it, in one line, when the command reads it.
  }
  return found;
}

/** A regular file's bytes, read without blocking; null for anything else (a FIFO would block for ever) or what cannot be read. */
function regularFileSync(file: string): Buffer | null {
  let fd: number | undefined;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    return fstatSync(fd).isFile() ? readFileSync(fd) : null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The tar inside a stored run. Decompressed here, not by node-tar: its own brotli reader misread one valid
 * archive of the store (a checksum failure where GNU tar and the same bytes decompressed first read it whole).
 */
function unbrotli(bytes: Buffer): Buffer {
  return brotliDecompressSync(bytes);
}

/** Every run `dir` holds directly: its subdirectories and stored runs, by name (not opened yet). */
export async function runEntries(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory() || (e.isFile() && isStoredRunName(e.name)))
    .map((e) => path.join(dir, e.name))
    .sort();
}

/** Files and folders of `dir` to store, relative and sorted (what isRegenerable names left out). */
async function storedPaths(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(path.join(dir, prefix), { withFileTypes: true })).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (isRegenerable(relative)) continue;
    if (entry.isDirectory()) out.push(`${relative}/`, ...(await storedPaths(dir, relative)));
    else if (entry.isFile()) out.push(relative);
    else
      throw new UserError(`${path.join(dir, relative)} is not a regular file or folder: a stored run holds only those`);
  }
  return out;
}

/**
 * The folder to pack: `dir` itself, or, where it holds REQUESTS_FILE, a copy in which that file is
 * STORED_REQUESTS_FILE's plain lines (removed by `done`).
 */
async function stagedRun(dir: string): Promise<{ dir: string; done: () => Promise<void> }> {
  const requests = path.join(dir, REQUESTS_FILE);
  if (!(await lstat(requests).catch(() => null))?.isFile()) return { dir, done: async () => {} };
  const copy = await mkdtemp(path.join(os.tmpdir(), 'gpushare-store-'));
  const done = () => rm(copy, { recursive: true, force: true });
  try {
    await cp(dir, copy, { recursive: true, filter: (from) => from !== requests });
    const lines = gunzipSync(await readRegularBytes(requests, 'give the run directory a gpushare command wrote'), {
      finishFlush: zlibConstants.Z_SYNC_FLUSH,
    });
    await writeFile(path.join(copy, STORED_REQUESTS_FILE), lines);
  } catch (error) {
    await done();
    if (error instanceof UserError || isSystemError(error)) throw error;
    throw new UserError(`${requests} is not gzip (${(error as Error).message}): the store keeps only runs as written`);
  }
  return { dir: copy, done };
}

/** The run id `dir`'s record names. */
async function recordedId(dir: string): Promise<string> {
  const kind = await recordKindIn(dir);
  if (kind === null)
    throw new UserError(`${dir} holds no gpushare record (run.json, serve.json, …): give a run directory`);
  const file = path.join(dir, RECORD_KINDS[kind].file);
  const text = await readRegularFile(file, 'give the run directory a gpushare command wrote');
  let record: { id?: unknown; fingerprint?: Pick<Fingerprint, 'simulated'> };
  try {
    record = JSON.parse(text) as typeof record;
  } catch {
    throw new UserError(`${file} is not JSON: it was cut short or edited, and the store keeps only runs as written`);
  }
  const parsed = RunIdSchema.safeParse(record.id);
  if (!parsed.success) throw new UserError(`${file} names no run id: it is not a run gpushare wrote`);
  // The store is evidence of real GPUs: a simulated run beside them would make fleet report refuse it all.
  if ((record.fingerprint !== undefined && isSimulated(record.fingerprint)) || parsed.data.includes('-simulated-'))
    throw new UserError(`${dir} was made on gpushare's simulator: the store keeps runs measured on real GPUs`);
  return parsed.data;
}

/**
 * Stores run directory `dir` as `<store>/<id>.tar.br`, the same bytes for the same files (sorted, the
 * epoch as every time, no owners), and returns its path. A run stored already is left as it is when the
 * bytes agree, and refused when they do not: a stored run is never replaced.
 */
export async function storeRun(dir: string, store: string): Promise<{ file: string; added: boolean }> {
  const id = await recordedId(dir);
  const file = path.join(store, `${id}${STORED_RUN_SUFFIX}`);
  const staged = await stagedRun(dir);
  let plain: Buffer;
  try {
    plain = await tar
      .c({ cwd: staged.dir, prefix: id, portable: true, mtime: new Date(0), noDirRecurse: true }, [
        './',
        ...(await storedPaths(staged.dir)),
      ])
      .concat();
  } finally {
    await staged.done();
  }
  const packed = brotliCompressSync(plain);
  const existing = await readFile(file).catch(() => null);
  if (existing !== null) {
    if (existing.equals(packed)) return { file, added: false };
    throw new UserError(`${file} already holds run ${id}, with other bytes: a stored run is never replaced`);
  }
  await mkdir(store, { recursive: true });
  const temp = `${file}.${process.pid}`;
  await writeFile(temp, packed);
  await rename(temp, file);
  return { file, added: true };
}
