/**
 * `gpushare fleet report <dir>`: every bench run under a directory (at any depth; a multi-GPU host as
 * a directory of one run per GPU beside a host.json), each analysed once, merged into one fleet
 * analysis, written as markdown with a chart, JUnit and JSON. Exit 0: no node fails; 1: an outlier,
 * a failing node or something unread; 2: nothing to report on.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { analyze } from '../../bench/analysis/analyze.js';
import { fingerprintMismatches, settingMismatches } from '../../bench/gate/gate.js';
import { runFile } from '../../bench/outputs/write.js';
import type { Run } from '../../bench/record/schema.js';
import { loadRun } from '../../bench/record/store.js';
import { renderSvg } from '../../core/chart-svg.js';
import { type ArgsOf, defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { UserError } from '../../core/errors.js';
import { reportsDir } from '../../core/paths.js';
import { VERSION } from '../../core/version.js';
import { isStoredRunName, openRun, storedRunId } from '../../record/evidence.js';
import { CAPACITY_FILE, PROBE_FILE, RUN_FILE } from '../../record/kinds.js';
import { refuseSimulatedBesideReal, simulatedLine, simulatedMarkdown } from '../../record/simulated.js';
import { writeOutputFile } from '../../record/store.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { analyzeFleet, type FleetMember, type FleetRules, type NotCompared } from './analyze.js';
import { fleetChart } from './chart.js';
import { fleetMarkdown } from './markdown.js';
import { fleetExitCode, fleetJson, fleetJunit, fleetText } from './outputs.js';

/** The gate's comparisons of two runs: the fleet groups and flags by exactly what the gate refuses to compare across. */
const GATE_RULES: FleetRules = {
  machineDifferences: (now: Run, before: Run) =>
    fingerprintMismatches(
      { fingerprint: now.fingerprint, gpuIndex: now.config.gpuIndex },
      { fingerprint: before.fingerprint, gpuIndex: before.config.gpuIndex },
    ),
  settingDifferences: settingMismatches,
};

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
  // Where each stored run was unpacked, and the file it came from (relative to the root).
  const unpacked = new Map<string, string>();
  const shown = (dir: string) => {
    for (const [at, file] of unpacked)
      if (dir === at || dir.startsWith(`${at}${path.sep}`))
        return path.join(path.dirname(file), storedRunId(file), path.relative(at, dir));
    return path.relative(root, dir);
  };
  const found: Found = { runs: [], others: [], shown };
  const walked = new Map<string, string>();
  const unread = (where: string, reason: string) => void found.others.push({ path: where, reason, fails: true });
  const walk = async (dir: string): Promise<void> => {
    const where = shown(dir) || path.basename(path.resolve(root));
    let entries: Dirent[];
    try {
      const id = await stat(dir);
      const first = walked.get(`${id.dev}:${id.ino}`);
      if (first !== undefined) {
        found.others.push({
          path: where,
          reason: `the same directory as ${first} (through a symbolic link): its runs are read once, there`,
          fails: false,
        });
        return;
      }
      walked.set(`${id.dev}:${id.ino}`, where);
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (dir === root)
        throw new UserError(
          `cannot read ${root} (${errorCode(error)}): give a directory holding run directories made by gpushare bench`,
        );
      unread(where, `a directory that cannot be read (${errorCode(error)})`);
      return;
    }
    const names = new Set(entries.map((e) => e.name));
    if (names.has(RUN_FILE)) {
      found.runs.push(dir);
      return;
    }
    if (names.has(PROBE_FILE))
      found.others.push({
        path: where,
        reason: 'a probe record (what breaks): it has no ratios to compare',
        fails: false,
      });
    if (names.has(CAPACITY_FILE))
      found.others.push({
        path: where,
        reason: 'a capacity record (a rate search at a latency target): fleet report merges bench runs',
        fails: false,
      });
    const subdirs: string[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const full = path.join(dir, entry.name);
      // A stored run (evidence/<id>.tar.br) is read where it lies: walked as the directory it unpacks to.
      if (entry.isFile()) {
        if (!isStoredRunName(entry.name)) continue;
        const opened = await openRun(full);
        unpacked.set(opened, path.relative(root, full));
        subdirs.push(opened);
        continue;
      }
      const kind = entry.isSymbolicLink() ? await stat(full).catch((error: unknown) => errorCode(error)) : entry;
      if (typeof kind === 'string') unread(shown(full), `a symbolic link that cannot be followed (${kind})`);
      else if (kind.isDirectory()) subdirs.push(full);
      else if (!kind.isFile()) unread(shown(full), 'not a directory or a regular file (a FIFO, socket or device)');
    }
    for (const sub of subdirs) await walk(sub);
  };
  await walk(root);
  return found;
}

/** A cross-GPU check (bench --gpus) measures how a host's GPUs disturb each other, not one GPU's sharing costs. */
const isCrossCheck = (run: Run) => run.plan.some((c) => c.crossGpu !== undefined);

/** The report's name as a file-name token: --name as given (checked), else the directory's name made safe. */
function reportName(args: FleetReportArgs): string {
  if (args.name !== undefined) return args.name;
  return (
    path
      .basename(path.resolve(args.dir))
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .replace(/\.\.+/g, '.') || 'fleet'
  );
}

const FLEET_REPORT_POSITIONALS = {
  dir: { type: 'string', demandOption: true, describe: 'directory holding run directories (searched recursively)' },
} as const;
const FLEET_REPORT_FLAGS = {
  out: { type: 'string', describe: 'directory for the markdown report', defaultDescription: 'runs/reports/' },
  junit: { type: 'string', describe: 'write a JUnit XML report here: one testcase per node and ratio' },
  json: {
    type: 'boolean',
    describe: 'print the fleet analysis as JSON (the markdown is then written only with --out)',
  },
  name: {
    type: 'string',
    describe: 'name of the report: <out>/fleet-<name>.md',
    defaultDescription: "the directory's name",
  },
} as const;
type FleetReportArgs = ArgsOf<typeof FLEET_REPORT_FLAGS> & ArgsOf<typeof FLEET_REPORT_POSITIONALS>;

/** `gpushare fleet report`: flags, options, run. */
export const fleetReportCommand = defineCommand({
  flags: FLEET_REPORT_FLAGS,
  positionals: FLEET_REPORT_POSITIONALS,
  epilogue:
    'exit 0: no outlier and no failing node; 1: a node is an outlier, or fails (contaminated, throttled, incomplete, different software or settings, a failing or invalid verdict), or something under <dir> cannot be read (a run.json, a directory, a broken symbolic link, a FIFO); 2: no bench run under <dir>, or a usage error',
  resolve: (args) => args,
  run: fleetReport,
});

async function fleetReport(args: FleetReportArgs, deps: AppDeps): Promise<number> {
  const root = args.dir;
  if (!(await stat(root).catch(() => null))?.isDirectory())
    throw new UserError(
      `${root} is not a directory: give a directory holding run directories made by gpushare bench (each with a run.json, at any depth)`,
    );
  const name = reportName(args);
  const file = runFile(args.out ?? reportsDir(deps.cwd), `fleet-${name}`, '.md');
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
      `no bench runs under ${root}${others}: fleet report expects run directories made by gpushare bench, each with a run.json, at any depth`,
    );
  }
  refuseSimulatedBesideReal(
    members.map((m) => m.run),
    'merge simulated and real runs into one fleet report',
  );
  const fleet = analyzeFleet(members, notCompared, GATE_RULES);
  // Runs of one kind only (refused above otherwise): simulated, every output says so.
  const simulated = { simulated: members.some((m) => isSimulated(m.run.fingerprint)) };

  let written: string | null = null;
  if (!args.json || args.out !== undefined) {
    const spec = fleetChart(fleet);
    const chartFile = spec ? path.join(path.dirname(file), `fleet-${name}`, 'ratios.svg') : null;
    if (spec && chartFile) await writeOutputFile(chartFile, await renderSvg(spec, simulated));
    await writeOutputFile(
      file,
      [
        ...simulatedMarkdown(simulated),
        fleetMarkdown(fleet, { name, dir: root, version: VERSION }, chartFile ? `fleet-${name}/ratios.svg` : null),
      ].join('\n'),
    );
    written = file;
  }
  if (args.junit) await writeOutputFile(args.junit, fleetJunit(fleet, name));
  deps.out(args.json ? fleetJson(fleet) : `${simulatedLine(simulated)}${fleetText(fleet, written)}`);
  return fleetExitCode(fleet);
}
