#!/usr/bin/env node
/** gpushare's entry: parse, run one command, and turn every error into one line and an exit code. */
import { hideBin } from 'yargs/helpers';
import { parseCli } from './cli.js';
import { bench } from './commands/bench.js';
import { artifactsCommand, planCommand } from './commands/artifacts.js';
import { doctor } from './commands/doctor.js';
import { gateCommand } from './commands/gate.js';
import { reportCommand } from './commands/report.js';
import { capacityCommand } from './commands/capacity.js';
import { probeCommand } from './commands/probe.js';
import { showCommand } from './commands/show.js';
import { fleetJobCommand } from './commands/fleet-job.js';
import { fleetReportCommand } from './commands/fleet-report.js';
import { systemDeps } from './deps.js';
import { ExitCode, Interrupted, signalExitCode, UserError } from './errors.js';
import { resolveArtifactsOptions, resolveBenchOptions, resolveCapacityOptions, resolvePlanOptions, resolveProbeOptions } from './options.js';
import { loadThresholds } from './thresholds.js';

async function main(argv: readonly string[]): Promise<number> {
  const command = await parseCli(argv);
  if (command === null) return ExitCode.ok; // --help or --version, already printed
  const deps = systemDeps({ fakeGpu: 'fakeGpu' in command.args ? (command.args.fakeGpu ?? false) : false });
  switch (command.name) {
    case 'bench':
      return bench(resolveBenchOptions(command.args, await loadThresholds(command.args.config)), deps);
    case 'capacity':
      return capacityCommand(resolveCapacityOptions(command.args), deps);
    case 'probe':
      return probeCommand(resolveProbeOptions(command.args), deps);
    case 'doctor':
      return doctor(command.args, deps);
    case 'gate':
      return gateCommand(command.args, deps);
    case 'report':
      return reportCommand({ ...command.args, runs: [command.args.run, ...(command.args.other ? [command.args.other] : [])] }, deps);
    case 'show':
      return showCommand(command.args, deps);
    case 'artifacts':
      return artifactsCommand(resolveArtifactsOptions(command.args), deps);
    case 'plan':
      return planCommand(resolvePlanOptions(command.args), deps);
    case 'fleet job':
      return fleetJobCommand(command.args, deps);
    case 'fleet report':
      return fleetReportCommand(command.args, deps);
  }
}

main(hideBin(process.argv)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UserError) {
      process.stderr.write(`gpushare: ${error.message}\n`);
      process.exitCode = error.exitCode;
    } else if (error instanceof Interrupted) {
      process.exitCode = signalExitCode(error.signal);
    } else {
      // Not the user's fault: a bug, so the stack is worth showing.
      process.stderr.write(`gpushare: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 70;
    }
  },
);
