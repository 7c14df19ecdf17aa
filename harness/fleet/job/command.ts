/** `gpushare fleet job`: an Indexed Job that benches every GPU node (or GPU) of a pool, or with --slurm an sbatch --array script. */
import path from 'node:path';
import { defineCommand } from '../../core/command.js';
import type { AppDeps } from '../../core/deps.js';
import { ExitCode } from '../../core/errors.js';
import { writeOutputFile } from '../../record/store.js';
import { fleetJobYaml, jobPods } from './manifest.js';
import { FLEET_JOB_FLAGS, type FleetJobCommandOptions, resolveFleetJobCommand } from './options.js';
import { slurmScript, slurmTasks } from './slurm.js';

/** `gpushare fleet job`: flags, options, run. */
export const fleetJobCommand = defineCommand({
  flags: FLEET_JOB_FLAGS,
  resolve: resolveFleetJobCommand,
  // Without --out the manifest (or Slurm script) itself is printed: never folded.
  printsData: (args) => args.out === undefined,
  run: fleetJob,
});

async function fleetJob(options: FleetJobCommandOptions, deps: AppDeps): Promise<number> {
  const { out, slurm } = options;
  if (slurm) {
    const script = slurmScript(slurm);
    if (out === null) deps.out(script);
    else {
      await writeOutputFile(path.resolve(deps.cwd, out), script, { mode: 0o755 });
      deps.out(`wrote ${out}: sbatch --array of ${slurmTasks(slurm)} task(s); submit it with sbatch ${out}\n`);
    }
    return ExitCode.ok;
  }
  const { spec } = options;
  const manifest = fleetJobYaml(spec);
  if (out === null) {
    deps.out(manifest);
    return ExitCode.ok;
  }
  await writeOutputFile(path.resolve(deps.cwd, out), manifest);
  deps.out(`wrote ${out}: Indexed Job ${spec.name}, ${jobPods(spec)} pod(s); apply it with kubectl apply -f ${out}\n`);
  return ExitCode.ok;
}
