/** The one writer of a bench run's record: run.json, checked against its schema, after every trial. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { UserError } from '../../core/errors.js';
import { kindText, type RecordKind, RUN_FILE, recordKindIn } from '../../record/kinds.js';
import {
  type AtomicWriter,
  atomicWrite,
  directoryWriter,
  type RecordWriter,
  readRegularFile,
} from '../../record/store.js';
import { loadHostRun } from './host-record.js';
import { upgradeRun } from './migrate.js';
import { type Run, RunSchema } from './schema.js';

/** The file-system seam: where a run goes. */
export interface RunStore extends RecordWriter {
  /** Writes run.json, validated against the schema once the run has ended. */
  saveRun(run: Run): Promise<void>;
  /** saveRun, synchronously: for a forced exit, where process.exit follows at once. */
  saveRunSync(run: Run): void;
}

// The schema is checked on every save but those of a run still going: a check of the whole record after
// every trial grew with the run (34 ms of a 53 ms save on a 48-client sweep), and the last save checks all.
const runJson = (run: Run) => `${JSON.stringify(run.status === 'running' ? run : RunSchema.parse(run))}\n`;

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

/** Reads and validates a run directory's run.json. */
export async function loadRun(dir: string): Promise<Run> {
  const file = path.join(dir, RUN_FILE);
  const text = await readRegularFile(file).catch(async (error: NodeJS.ErrnoException) => {
    if (error instanceof UserError) throw error;
    const other = error.code === 'ENOENT' ? await recordKindIn(dir) : null;
    if (other !== null && other !== 'bench') throw await notABenchRun(dir, other);
    throw new UserError(
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

/** The refusal for a directory of another kind given where a bench run belongs: it says what the directory is. */
async function notABenchRun(dir: string, kind: RecordKind): Promise<UserError> {
  if (kind === 'host') {
    const host = await loadHostRun(dir).catch(() => null);
    const runs = host?.gpus.map((g) => path.join(dir, g.dir)).join(', ');
    return new UserError(
      `${dir} is ${kindText(kind)}, not a bench run: give one of its GPU runs${runs ? ` (${runs})` : ''}; gpushare report ${dir} writes its combined report`,
    );
  }
  return new UserError(
    `${dir} is ${kindText(kind)}, not a bench run: give a run directory made by gpushare bench; gpushare report ${dir} writes its report`,
  );
}
