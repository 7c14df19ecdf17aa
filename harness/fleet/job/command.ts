/** `gpushare fleet job`: an Indexed Job that benches every GPU node (or GPU) of a pool. */
import path from 'node:path';
import { defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { ExitCode } from '../../core/errors.js';
import { writeOutputFile } from '../../record/store.js';
import { fleetJobYaml, jobPods } from './manifest.js';
import { FLEET_JOB_FLAGS, type FleetJobOptions, resolveFleetJobOptions } from './options.js';

/** `gpushare fleet job`: flags, options, run. */
export const fleetJobCommand = defineCommand({
  flags: FLEET_JOB_FLAGS,
  resolve: resolveFleetJobOptions,
  // Without --out the manifest itself is printed, for kubectl: never folded.
  printsData: (args) => args.out === undefined,
  run: fleetJob,
});

async function fleetJob({ spec, out }: FleetJobOptions, deps: AppDeps): Promise<number> {
  const manifest = fleetJobYaml(spec);
  if (out === null) {
    deps.out(manifest);
    return ExitCode.ok;
  }
  await writeOutputFile(path.resolve(deps.cwd, out), manifest);
  deps.out(`wrote ${out}: Indexed Job ${spec.name}, ${jobPods(spec)} pod(s); apply it with kubectl apply -f ${out}\n`);
  return ExitCode.ok;
}
