/**
 * Writing generated files into --out without harming what is already there: gpushare keeps a manifest
 * there (`.gpushare-files.json`: each file it wrote and a hash of what it wrote), and replaces only a
 * file the manifest lists with that content still in it. Any other file, a link or a directory in the
 * way is refused before anything is written, all of them named; `--force` replaces files and links
 * (the link itself, never what it points to). Each file is written to a temporary name in --out and
 * renamed over its own name: a rename replaces a link, it never writes through it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { readRegularFile } from '../record/store.js';

/** The manifest of what gpushare wrote in an --out directory. */
export const MANIFEST = '.gpushare-files.json';
/** A manifest is a few hundred bytes; one much larger is none of ours. */
const MAX_MANIFEST_BYTES = 1024 * 1024;
/** A file in the way is read to compare it with what gpushare wrote, up to this: a larger one is not gpushare's. */
const MAX_COMPARED_BYTES = 16 * 1024 * 1024;

export interface OutFile {
  name: string;
  content: string;
  /** File mode, e.g. 0o755 for a script. */
  mode: number;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The manifest's name → hash; empty when there is none, or it is not one gpushare wrote (a link is none). */
async function readManifest(dir: string): Promise<Record<string, string>> {
  if (!(await lstat(path.join(dir, MANIFEST)).catch(() => null))?.isFile()) return {};
  try {
    const parsed = JSON.parse(await readRegularFile(path.join(dir, MANIFEST), '', MAX_MANIFEST_BYTES)) as unknown;
    const files = (parsed as { files?: unknown } | null)?.files;
    if (typeof files !== 'object' || files === null || Array.isArray(files)) return {};
    return Object.fromEntries(Object.entries(files).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/** The folders on the way to `name` inside --out (a Triton repository's model folders), outermost first. */
function foldersOf(name: string): string[] {
  const parts = name.split('/').slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** Why `name` in `dir` may not be replaced (a link, a user's file, not a file), or null: absent, or gpushare's as written. */
async function inTheWay(
  dir: string,
  name: string,
  written: Record<string, string>,
  force: boolean,
): Promise<string | null> {
  // A folder on the way that is a link would carry the write out of --out: never followed, even with --force.
  for (const folder of foldersOf(name)) {
    const info = await lstat(path.join(dir, folder)).catch(() => null);
    if (info === null) break;
    if (!info.isDirectory())
      return `${folder} (${info.isSymbolicLink() ? 'a link' : 'not a directory'}, where gpushare writes a folder)`;
  }
  const file = path.join(dir, name);
  const info = await lstat(file).catch(() => null);
  if (info === null) return null;
  if (info.isSymbolicLink()) return force ? null : `${name} (a link)`;
  if (!info.isFile()) return `${name} (not a regular file)`;
  if (force) return null;
  const text = await readRegularFile(file, '', MAX_COMPARED_BYTES).catch(() => null);
  return text !== null && written[name] === sha256(text) ? null : `${name} (not written by gpushare, or changed since)`;
}

/** Writes `text` to `name` in `dir` through a temporary file of its own and a rename: never through a link. */
async function writeInto(dir: string, name: string, text: string, mode: number): Promise<void> {
  const target = path.join(dir, name);
  await mkdir(path.dirname(target), { recursive: true });
  const temp = path.join(path.dirname(target), `.${path.basename(name)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(text);
    await handle.chmod(mode);
  } finally {
    await handle.close();
  }
  await rename(temp, target).catch(async (error: unknown) => {
    await unlink(temp).catch(() => undefined);
    throw error;
  });
}

/**
 * Writes `files` into `dir` (made if missing) and records them in its manifest; refuses in one line,
 * before writing anything, when a file in the way is not gpushare's (or, without `force`, is a link).
 */
export async function writeOutDir(dir: string, files: readonly OutFile[], force: boolean): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw new UserError(
      `--out ${argText(dir)}: cannot make it (${(error as NodeJS.ErrnoException).code}): choose another directory`,
    );
  }
  for (const f of files)
    if (path.isAbsolute(f.name) || f.name.split('/').some((part) => part === '' || part === '.' || part === '..'))
      throw new Error(`a generated file name that leaves --out: ${JSON.stringify(f.name)}`);
  const written = await readManifest(dir);
  const blocked: string[] = [];
  for (const f of files) {
    const why = await inTheWay(dir, f.name, written, force);
    if (why !== null) blocked.push(why);
  }
  // The manifest is gpushare's own name: replaced whatever it is, but for what a rename cannot replace.
  const manifest = await lstat(path.join(dir, MANIFEST)).catch(() => null);
  if (manifest !== null && !manifest.isFile() && !manifest.isSymbolicLink())
    blocked.push(`${MANIFEST} (not a regular file)`);
  if (blocked.length > 0)
    throw new UserError(
      `--out ${argText(dir)}: refusing to replace ${[...new Set(blocked)].join(', ')}: give another --out, or --force to replace them (a link is replaced, never written through)`,
    );
  try {
    for (const f of files) {
      await writeInto(dir, f.name, f.content, f.mode);
      written[f.name] = sha256(f.content);
    }
  } catch (error) {
    throw new UserError(
      `--out ${argText(dir)}: cannot write there (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another directory`,
    );
  } finally {
    await writeInto(dir, MANIFEST, `${JSON.stringify({ files: written }, null, 2)}\n`, 0o644).catch(() => undefined);
  }
}
