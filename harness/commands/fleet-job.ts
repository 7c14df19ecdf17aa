/** `gpushare fleet job`: an Indexed Job that benches every GPU node (or GPU) of a pool. */
import type { FleetJobArgs } from '../cli.js';
import type { AppDeps } from '../deps.js';
import { UserError } from '../errors.js';

export async function fleetJobCommand(args: FleetJobArgs, _deps: AppDeps): Promise<number> {
  throw new UserError(`fleet job is not built yet (${args.nodes})`);
}
