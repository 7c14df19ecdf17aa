/**
 * `gpushare gate <run>`: a bench run graded by bench's gate (bench/gate/), a server run of
 * `bench --serve` compared with its baseline by serve's (serve/gate.ts). The run's kind picks.
 */
import { gateCommand as benchGate } from '../bench/gate/command.js';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { openRun } from '../record/evidence.js';
import { recordKindIn } from '../record/kinds.js';
import { serveGate, serveMismatches } from '../serve/gate.js';
import { serveGateJson, serveGateText } from '../serve/gate-text.js';
import { loadServeRun } from '../serve/record.js';

type GateArgs = ArgsOf<typeof benchGate.flags> & ArgsOf<typeof benchGate.positionals>;

/** `gpushare gate`: bench's flags and positionals; the run's kind picks the gate. */
export const gateCommand = defineCommand({
  flags: benchGate.flags,
  positionals: benchGate.positionals,
  resolve: (args) => args,
  run: async (args: GateArgs, deps: AppDeps) => {
    const dir = await openRun(args.run);
    return (await recordKindIn(dir)) === 'serve' ? gateServer(args, dir, deps) : benchGate.run(args, deps);
  },
});

async function gateServer(args: GateArgs, dir: string, deps: AppDeps): Promise<number> {
  // Flags of bench's thresholds and between-run history have no meaning for a server run.
  const benchOnly = (['config', 'history', 'junit'] as const).find((f) => args[f] !== undefined);
  if (benchOnly)
    throw new UserError(`--${benchOnly} is for bench runs; ${args.run} is a server run: drop --${benchOnly}`);
  if (!args.baseline)
    throw new UserError(
      `a server run has no thresholds of its own to grade: give --baseline <server run> to compare ${args.run} with`,
    );
  const run = await serverRun(dir, args.run);
  const baseline = await serverRun(await openRun(args.baseline), args.baseline);
  for (const [r, given] of [
    [run, args.run],
    [baseline, args.baseline],
  ] as const)
    if (r.settings.measure !== 'bench')
      throw new UserError(
        `${given} is a capacity --serve run: it has a rate search, not rounds of ratios; gate server runs of bench --serve`,
      );
  const mismatches = serveMismatches(run, baseline);
  if (mismatches.length > 0 && !args.allowMismatch)
    throw new UserError(
      `refusing to compare server runs measured differently: ${mismatches.join('; ')}; --allow-mismatch compares them anyway, listing every difference`,
    );
  const result = serveGate(run, baseline, mismatches);
  deps.out(args.json ? serveGateJson(result) : serveGateText(result));
  return result.exitCode;
}

async function serverRun(dir: string, given: string) {
  if ((await recordKindIn(dir)) !== 'serve')
    throw new UserError(`${given} is not a server run (serve.json): a server run gates against another server run`);
  const run = await loadServeRun(dir);
  if (run === null) throw new UserError(`${given}: its serve.json could not be read`);
  return run;
}
