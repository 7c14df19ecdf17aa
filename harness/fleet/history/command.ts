/**
 * `gpushare fleet history <dir>`: every bench run under a directory (run directories at any depth,
 * stored runs of the evidence store where they lie), grouped like with like and ordered by creation;
 * for each headline ratio, the runs where its series changed. Console text, JSON, markdown with a
 * chart per group. Exit 0: no change; 1: a change; 2: a usage error; 3: no series to test.
 */
import path from 'node:path';
import { runFile } from '../../bench/outputs/write.js';
import { renderSvg } from '../../core/chart-svg.js';
import { type ArgsOf, defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { UserError } from '../../core/errors.js';
import { argText } from '../../core/escape/terminal.js';
import { number } from '../../core/flags.js';
import { reportsDir } from '../../core/paths.js';
import { VERSION } from '../../core/version.js';
import { refuseSimulatedBesideReal, SIMULATED_TEXT } from '../../record/simulated.js';
import { writeOutputFile } from '../../record/store.js';
import { DEFAULT_CHANGE_LEVEL } from '../../stats/change-points.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { dirToken, readBenchRuns } from '../runs.js';
import { analyzeHistory, historyExitCode } from './analyze.js';
import { historyChart } from './chart.js';
import { historyMarkdown } from './markdown.js';
import { historyJson, historyText } from './outputs.js';

const POSITIONALS = {
  dir: {
    type: 'string',
    demandOption: true,
    describe: 'directory holding bench runs: run directories at any depth, or stored runs (<id>.tar.br)',
  },
} as const;
const FLAGS = {
  p: {
    type: 'number',
    describe: "keep a change only when Welch's p between the runs either side is below this",
    defaultDescription: String(DEFAULT_CHANGE_LEVEL),
  },
  out: { type: 'string', describe: 'directory for the markdown report', defaultDescription: 'runs/reports/' },
  json: {
    type: 'boolean',
    describe: 'print the history as JSON (the markdown is then written only with --out)',
  },
  name: {
    type: 'string',
    describe: 'report name: <out>/history-<name>.md',
    defaultDescription: "the directory's name",
  },
} as const;
type HistoryArgs = ArgsOf<typeof FLAGS> & ArgsOf<typeof POSITIONALS>;

interface HistoryOptions {
  dir: string;
  level: number;
  out: string | undefined;
  json: boolean;
  name: string;
}

function resolveHistory(args: HistoryArgs): HistoryOptions {
  const level = number(args.p, '--p', DEFAULT_CHANGE_LEVEL, 0, 1);
  if (level === 0 || level === 1)
    throw new UserError(`--p ${argText(args.p ?? '')}: needs a level between 0 and 1, both excluded (e.g. --p 0.001)`);
  const name = args.name ?? dirToken(args.dir, 'history');
  return { dir: args.dir, level, out: args.out, json: args.json === true, name };
}

/** `gpushare fleet history`: flags, options, run. */
export const fleetHistoryCommand = defineCommand({
  flags: FLAGS,
  positionals: POSITIONALS,
  epilogue:
    "exit 0: no headline series changed; 1: a series changed (a change at Welch p below --p and at least the headline's floor), for CI; 2: a usage error, or no bench run under <dir>; 3: no series had the 6 runs (3 either side of a change) a test needs",
  resolve: resolveHistory,
  run: fleetHistory,
});

async function fleetHistory(options: HistoryOptions, deps: AppDeps): Promise<number> {
  const file = runFile(options.out ?? reportsDir(deps.cwd), `history-${options.name}`, '.md');
  const { members, notCompared } = await readBenchRuns(options.dir, 'fleet history');
  refuseSimulatedBesideReal(
    members.map((m) => m.run),
    'set simulated and real runs in one history',
  );
  const history = analyzeHistory(members, notCompared, options.level);

  // Simulated runs are never beside real ones (refused above): all of them are, or none.
  const simulated = members.some((m) => isSimulated(m.run.fingerprint));
  let written: string | null = null;
  if (!options.json || options.out !== undefined) {
    const charts = new Map<string, string>();
    for (const g of history.groups) {
      const spec = historyChart(g);
      if (!spec) continue;
      const relative = path.join(`history-${options.name}`, `${g.id}.svg`);
      await writeOutputFile(path.join(path.dirname(file), relative), await renderSvg(spec, { simulated }));
      charts.set(g.id, relative);
    }
    await writeOutputFile(
      file,
      historyMarkdown(history, { name: options.name, dir: options.dir, version: VERSION, simulated }, charts),
    );
    written = file;
  }
  deps.out(
    options.json ? historyJson(history) : `${simulated ? `${SIMULATED_TEXT}\n` : ''}${historyText(history, written)}`,
  );
  return historyExitCode(history);
}
