/** The one writer of a run directory: every file is written atomically (temp file, then rename). */
import { access, appendFile, constants, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { UserError } from '../errors.js';
import { samplesCsv, trialsCsv } from '../export/csv.js';
import { upgradeRun } from './migrate.js';
import { RunSchema, type Run } from './schema.js';

/** The file-system seam: where a run goes. */
export interface RunStore {
  readonly dir: string;
  /** Writes run.json (validated against the schema), trials.csv and samples.csv. */
  saveRun(run: Run): Promise<void>;
  /** Writes any other file of the run (logs), relative to the run directory. */
  writeText(relativePath: string, content: string): Promise<void>;
}

export const RUN_FILE = 'run.json';

/** Opens `dir` for a new run: creates it, and refuses one that holds another run or cannot be written. */
export async function openRunDirectory(dir: string, runId: string): Promise<RunStore> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (error) {
    throw new UserError(`cannot write the output directory ${dir} (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another with --out`);
  }
  const existing = await readFile(path.join(dir, RUN_FILE), 'utf8').catch(() => null);
  if (existing !== null) {
    const id = (() => {
      try {
        return (JSON.parse(existing) as { id?: unknown }).id;
      } catch {
        return undefined;
      }
    })();
    if (id !== runId) throw new UserError(`${dir} already holds a different run (${String(id ?? 'unreadable run.json')}): choose an empty directory with --out`);
  }
  return fsRunStore(dir);
}

export function fsRunStore(dir: string): RunStore {
  const write = async (relativePath: string, content: string) => {
    const file = path.join(dir, relativePath);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileAtomic(file, content);
  };
  return {
    dir,
    async saveRun(run) {
      const valid = RunSchema.parse(run);
      await write(RUN_FILE, `${JSON.stringify(valid)}\n`);
      await write('trials.csv', trialsCsv(valid));
      await write('samples.csv', samplesCsv(valid));
    },
    writeText: write,
  };
}

/** Reads and validates a run directory's run.json. */
export async function loadRun(dir: string): Promise<Run> {
  const file = path.join(dir, RUN_FILE);
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UserError(`cannot read ${file} (${error.code ?? error.message}): give a run directory made by gpushare bench`);
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserError(`${file} is not valid JSON: give a run directory made by gpushare bench`);
  }
  const parsed = RunSchema.safeParse(upgradeRun(json));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UserError(`${file} does not match the run schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return parsed.data;
}

/** Writes an output file outside a run directory (a JUnit report, an artifact), atomically. */
export async function writeOutputFile(file: string, content: string, options: { mode?: number } = {}): Promise<void> {
  try {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    await writeFileAtomic(file, content, options.mode === undefined ? {} : { mode: options.mode });
  } catch (error) {
    throw new UserError(`cannot write ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): choose another path`);
  }
}

/** Appends to a file that others also write to (GitHub's step summary). */
export async function appendOutputFile(file: string, content: string): Promise<void> {
  await appendFile(file, content).catch((error: NodeJS.ErrnoException) => {
    throw new UserError(`cannot append to ${file} (${error.code ?? error.message})`);
  });
}
