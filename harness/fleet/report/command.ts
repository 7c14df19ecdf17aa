/**
 * `gpushare fleet report <dir>`: every bench run under a directory (at any depth; a multi-GPU host as
 * a directory of one run per GPU beside a host.json), each analysed once, merged into one fleet
 * analysis, written as markdown with a chart, JUnit and JSON. Exit 0: no node fails; 1: an outlier,
 * a failing node or something unread; 2: nothing to report on.
 */
import path from 'node:path';
import { fingerprintMismatches, settingMismatches } from '../../bench/gate/gate.js';
import { runFile } from '../../bench/outputs/write.js';
import type { Run } from '../../bench/record/schema.js';
import { renderSvg } from '../../core/chart-svg.js';
import { type ArgsOf, defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { reportsDir } from '../../core/paths.js';
import { VERSION } from '../../core/version.js';
import { refuseSimulatedBesideReal, simulatedLine, simulatedMarkdown } from '../../record/simulated.js';
import { writeOutputFile } from '../../record/store.js';
import { isSimulated } from '../../system/nvidia/schema.js';
import { dirToken, readBenchRuns } from '../runs.js';
import { analyzeFleet, type FleetRules } from './analyze.js';
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

/** The report's name as a file-name token: --name as given (checked), else the directory's name made safe. */
const reportName = (args: FleetReportArgs) => args.name ?? dirToken(args.dir, 'fleet');

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
  const name = reportName(args);
  const file = runFile(args.out ?? reportsDir(deps.cwd), `fleet-${name}`, '.md');
  const { members, notCompared } = await readBenchRuns(root, 'fleet report');
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
  if (args.junit) await writeOutputFile(args.junit, fleetJunit(fleet, name, simulated.simulated));
  deps.out(
    args.json ? fleetJson(fleet, simulated.simulated) : `${simulatedLine(simulated)}${fleetText(fleet, written)}`,
  );
  return fleetExitCode(fleet);
}
