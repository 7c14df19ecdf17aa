/** `gpushare fleet job`: an Indexed Job that benches every GPU node (or GPU) of a pool. */
import path from 'node:path';
import type { FleetJobArgs } from '../cli.js';
import type { AppDeps } from '../deps.js';
import { ExitCode } from '../errors.js';
import { fleetJobYaml, jobPods } from '../artifacts/k8s-job.js';
import { resolveFleetJobOptions } from '../fleet-job-options.js';
import { writeOutputFile } from '../run/store.js';

export async function fleetJobCommand(args: FleetJobArgs, deps: AppDeps): Promise<number> {
  const { spec, out } = resolveFleetJobOptions(args);
  const manifest = fleetJobYaml(spec);
  if (out === null) {
    deps.out(manifest);
    return ExitCode.ok;
  }
  await writeOutputFile(path.resolve(deps.cwd, out), manifest);
  deps.out(`wrote ${out}: Indexed Job ${spec.name}, ${jobPods(spec)} pod(s); apply it with kubectl apply -f ${out}\n`);
  return ExitCode.ok;
}
