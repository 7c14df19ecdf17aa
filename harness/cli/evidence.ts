/**
 * `gpushare evidence add <run>…` and `gpushare evidence extract <run>…`: the evidence store (`evidence/`,
 * record/evidence.ts). Every command that reads a run reads a stored one where it lies; extract is for
 * reading its files by hand or with other tools.
 */
import { cp, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { writeTables } from '../bench/outputs/csv.js';
import { loadRun } from '../bench/record/store.js';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { argText } from '../core/escape/terminal.js';
import { DEFAULT_OUTPUT_DIR } from '../core/paths.js';
import { isStoredRunName, openRun, STORE_DIR, STORED_RUN_SUFFIX, storedRunId, storeRun } from '../record/evidence.js';
import { RUN_FILE } from '../record/kinds.js';
import { directoryWriter } from '../record/store.js';

/** A path as the user would type it: relative inside the working directory, absolute outside it. */
function shown(cwd: string, file: string): string {
  const relative = path.relative(cwd, file);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

const RUNS = {
  runs: { type: 'string', array: true, demandOption: true, describe: 'run directories' },
} as const;

/** `gpushare evidence add`: run directories into the store, one compressed file each. */
export const evidenceAddCommand = defineCommand({
  flags: {
    store: { type: 'string', default: STORE_DIR, describe: "the store's folder" },
  } as const,
  positionals: RUNS,
  resolve: (args) => ({ runs: args.runs as unknown as string[], store: args.store }),
  run: async (options, deps: AppDeps) => {
    for (const run of options.runs) {
      if (!(await lstat(run).catch(() => null))?.isDirectory())
        throw new UserError(`${argText(run)} is not a run directory: give the directory a gpushare command wrote`);
      const { file, added } = await storeRun(run, path.resolve(deps.cwd, options.store));
      deps.out(`${added ? 'stored' : 'already stored, the same bytes'}: ${shown(deps.cwd, file)}\n`);
    }
    return ExitCode.ok;
  },
});

/** `gpushare evidence extract`: stored runs unpacked as run directories under --to. */
export const evidenceExtractCommand = defineCommand({
  flags: {
    to: {
      type: 'string',
      describe: 'folder to write each run directory into',
      defaultDescription: `${DEFAULT_OUTPUT_DIR}/evidence/`,
    },
  } as const,
  positionals: {
    runs: { ...RUNS.runs, describe: `stored runs (${STORE_DIR}/<run id>${STORED_RUN_SUFFIX})` },
  },
  resolve: (args) => {
    const runs = args.runs as unknown as string[];
    const bad = runs.find((run) => !isStoredRunName(run));
    if (bad !== undefined)
      throw new UserError(
        `${argText(bad)} is not a stored run: give files named <run id>${STORED_RUN_SUFFIX} from ${STORE_DIR}/`,
      );
    return { runs, to: args.to };
  },
  run: async (options, deps: AppDeps) => {
    const to = path.resolve(deps.cwd, options.to ?? path.join(DEFAULT_OUTPUT_DIR, 'evidence'));
    for (const run of options.runs) {
      const target = path.join(to, storedRunId(run));
      if (await lstat(target).catch(() => null))
        throw new UserError(`${target} exists already: remove it, or give another folder with --to`);
      await cp(await openRun(path.resolve(deps.cwd, run)), target, { recursive: true });
      await writeTablesUnder(target);
      deps.out(`${shown(deps.cwd, target)}\n`);
    }
    return ExitCode.ok;
  },
});

/**
 * The CSVs the store leaves out, written again from each bench run's run.json under `dir` (a multi-GPU run's
 * GPUs one level down): the same bytes bench wrote (checked on all 99 runs restored from main's history).
 */
async function writeTablesUnder(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  if (entries.some((e) => e.isFile() && e.name === RUN_FILE)) {
    await writeTables(await loadRun(dir), directoryWriter(dir));
    return;
  }
  for (const e of entries) if (e.isDirectory()) await writeTablesUnder(path.join(dir, e.name));
}
