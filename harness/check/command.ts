/** `gpushare check -- <cmd>`: a smoke test of a workload command, one line saying what is wrong (the logic: workload/check.ts). */
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { integer, number } from '../core/flags.js';
import { runCheck } from '../session/workload-check.js';
import { type CheckSettings, checkText } from '../workload/check.js';
import { HELPER_DIR, READY_TIMEOUT_S } from '../workload/client.js';

const CHECK_FLAGS = {
  'print-helper-path': {
    type: 'boolean',
    describe:
      "print the directory that holds gpushare's Python helper (the package gpushare_protocol) and exit: put it on PYTHONPATH to run a workload yourself",
  },
  gpu: { type: 'number', describe: 'index of the GPU (nvidia-smi order)', defaultDescription: '0' },
  'ready-timeout-s': {
    type: 'number',
    describe: 'how long the workload may take to become ready, s',
    defaultDescription: String(READY_TIMEOUT_S),
  },
  'exit-timeout-s': {
    type: 'number',
    describe: 'how long it may take to exit when asked, s',
    defaultDescription: '10',
  },
  json: { type: 'boolean', describe: 'print the outcome as JSON' },
} as const;

/** What `gpushare check` does: print the helper's directory, or check a command. */
export type CheckOptions = { kind: 'helper-path' } | { kind: 'check'; settings: CheckSettings; json: boolean };

/** `gpushare check`: flags, options, run. */
export const checkCommand = defineCommand({
  flags: CHECK_FLAGS,
  rest: true,
  epilogue:
    'Starts the command after -- once and takes it through a run: ready, a 200 ms window, fixed work on 2 streams, an open-loop window, exit. exit 0: it passed; 1: it failed (the line says where and why); 2: a usage error',
  resolve: resolveCheckOptions,
  run: check,
});

export function resolveCheckOptions(args: ArgsOf<typeof CHECK_FLAGS> & { rest: string[] }): CheckOptions {
  if (args.printHelperPath) return { kind: 'helper-path' };
  if (args.rest.length === 0)
    throw new UserError('check needs the workload command after --, e.g. gpushare check -- python3 my_model.py');
  const gpu = integer(args.gpu, '--gpu', 0, 0, 1023);
  return {
    kind: 'check',
    json: args.json ?? false,
    settings: {
      argv: args.rest,
      // nvidia-smi's order, as --gpu means everywhere else (CUDA's own default order is fastest first).
      env: { CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: String(gpu), GPUSHARE_CLIENT_INDEX: '0' },
      readyTimeoutMs: number(args.readyTimeoutS, '--ready-timeout-s', READY_TIMEOUT_S, 0.1, 86_400) * 1000,
      trialTimeoutMs: 60_000,
      exitTimeoutMs: number(args.exitTimeoutS, '--exit-timeout-s', 10, 0.1, 3600) * 1000,
    },
  };
}

async function check(options: CheckOptions, deps: AppDeps): Promise<number> {
  if (options.kind === 'helper-path') {
    deps.out(`${HELPER_DIR}\n`);
    return ExitCode.ok;
  }
  const outcome = await runCheck(options.settings, deps);
  deps.out(options.json ? `${JSON.stringify(outcome)}\n` : `${checkText(outcome)}\n`);
  return outcome.status === 'passed' ? ExitCode.ok : ExitCode.fail;
}
