/** The one writer of a bench run's record: run.json, checked against its schema, after every trial. */
import { mkdirSync } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { UserError } from '../../core/errors.js';
import { RUN_FILE } from '../../record/kinds.js';
import {
  type AtomicWriter,
  atomicWrite,
  directoryWriter,
  type RecordWriter,
  readRegularFile,
} from '../../record/store.js';
import { upgradeRun } from './migrate.js';
import { type Run, RunSchema } from './schema.js';

/** The file-system seam: where a run goes. */
export interface RunStore extends RecordWriter {
  /** Writes run.json, validated against the schema. */
  saveRun(run: Run): Promise<void>;
  /** saveRun, synchronously: for a forced exit, where process.exit follows at once. */
  saveRunSync(run: Run): void;
}

const runJson = (run: Run) => `${JSON.stringify(RunSchema.parse(run))}\n`;

/** The run store of `dir`; `writer` is the atomic writer (a seam for tests). */
export function fsRunStore(dir: string, writer: AtomicWriter = atomicWrite): RunStore {
  const files = directoryWriter(dir, writer);
  return {
    ...files,
    saveRun: (run) => files.writeText(RUN_FILE, runJson(run)),
    saveRunSync(run) {
      mkdirSync(dir, { recursive: true });
      writeFileAtomic.sync(path.join(dir, RUN_FILE), runJson(run));
    },
  };
}

/** Removes temp files (`run.json.<n>`) that a harness killed mid-write left; only the lock holder may. */
export async function removeStaleTempFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const stale = names.filter((name) => /^(run\.json|trials\.csv|samples\.csv)\.\d+$/.test(name));
  for (const name of stale) await unlink(path.join(dir, name)).catch(() => undefined);
  return stale;
}

/** Reads and validates a run directory's run.json. */
export async function loadRun(dir: string): Promise<Run> {
  const file = path.join(dir, RUN_FILE);
  const text = await readRegularFile(file).catch((error: NodeJS.ErrnoException) => {
    throw error instanceof UserError
      ? error
      : new UserError(
          `cannot read ${file} (${error.code ?? error.message}): give a run directory made by gpushare bench`,
        );
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
    throw new UserError(
      `${file} does not match the run schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}
