/**
 * `gpushare demo`: gpushare tried without a GPU. A short bench of the default suite on the simulator
 * shipped in the package (simulator/): a run directory and a report like a real run's, each marked
 * SIMULATED, then what to try next. A command of its own, not a flag, so that it is the first thing
 * `gpushare --help` offers and a real command can never produce a simulated run by a forgotten flag.
 */
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { SIMULATE_ENV, simulatedRunner } from '../system/simulator.js';

const DEMO_FLAGS = {
  out: { type: 'string', describe: 'run directory', defaultDescription: 'runs/results/<date>-simulated-<gpu>-<id>' },
  quiet: { type: 'boolean', describe: 'no progress lines' },
  json: { type: 'boolean', describe: 'progress and summary as JSON lines on stdout' },
  resume: { type: 'string', describe: 'continue an interrupted demo run: its directory' },
} as const;

/** bench's settings for the demo: every mode, the fewest rounds with a 95% interval, short windows (about 20 s). */
const DEMO_BENCH_ARGS = { rounds: '6', maxRounds: '6', windowMs: '50' } as const;

/** `gpushare demo`: flags, options, run. */
export const demoCommand = defineCommand({
  flags: DEMO_FLAGS,
  epilogue: `Every other command runs on the simulator too with ${SIMULATE_ENV}=1 in its environment (see docs/install.md). exit codes: as gpushare bench`,
  resolve: (args: ArgsOf<typeof DEMO_FLAGS>) => args,
  run: demo,
});

async function demo(args: ArgsOf<typeof DEMO_FLAGS>, deps: AppDeps): Promise<number> {
  const [{ benchCommand }, { resolveBenchOptions }] = await Promise.all([
    import('../bench/command.js'),
    import('../bench/options.js'),
  ]);
  // A resumed run keeps the settings it was made with, as bench --resume does.
  const options = resolveBenchOptions({ ...(args.resume === undefined ? DEMO_BENCH_ARGS : {}), ...args, rest: [] });
  const code = await benchCommand.run(options, { ...deps, runner: simulatedRunner(deps.runner) });
  if (!args.json)
    deps.err(
      [
        "gpushare demo: that run was made on gpushare's simulator (no GPU); its numbers are the simulator's arithmetic.",
        `  Try any command the same way: ${SIMULATE_ENV}=1 npx gpushare doctor, ${SIMULATE_ENV}=1 npx gpushare capacity --slo-p99-ms 10`,
        '  Your own model: docs/bring-your-own-workload.md in the gpushare package, then npx gpushare check -- python3 my_model.py on a GPU machine',
        '',
      ].join('\n'),
    );
  return code;
}
