/** `gpushare fleet report`: many runs merged into one report. */
import type { FleetReportArgs } from '../cli.js';
import type { AppDeps } from '../deps.js';
import { UserError } from '../errors.js';

export async function fleetReportCommand(args: FleetReportArgs, _deps: AppDeps): Promise<number> {
  throw new UserError(`fleet report is not built yet (${args.dir})`);
}
