/**
 * `gpushare show <run>`: a saved run's results as its command ended with, for every kind of run: a
 * bench run's summary (bench/show.ts), a probe run's claims, a capacity run's table, a mix run's cells.
 * Writes nothing.
 */
import { showCommand as benchShow } from '../bench/show.js';
import { loadCapacityRun } from '../capacity/record.js';
import { capacitySummary, capacityTable } from '../capacity/table.js';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode, UserError } from '../core/errors.js';
import { mixCells } from '../mix/analysis.js';
import { loadMixRun } from '../mix/record.js';
import { mixSummary } from '../mix/report.js';
import { loadProbeRun } from '../probe/record.js';
import { probeSummary } from '../probe/summary.js';
import { openRun } from '../record/evidence.js';
import { kindText, RECORD_KINDS, recordKindIn } from '../record/kinds.js';
import { simulatedLine } from '../record/simulated.js';
import { analyzeServe } from '../serve/analysis.js';
import { serveSummary } from '../serve/markdown.js';
import { loadServeRun } from '../serve/record.js';
import { timeAccountText } from '../session/time-account.js';
import { loadVerifyRun } from '../verify/record.js';
import { verifySummary } from '../verify/summary.js';

type ShowArgs = ArgsOf<typeof benchShow.flags> & ArgsOf<typeof benchShow.positionals>;

/** `gpushare show`: bench's flags and positionals; the run's kind picks what is shown. */
export const showCommand = defineCommand({
  flags: benchShow.flags,
  positionals: benchShow.positionals,
  resolve: (args) => args,
  run: show,
});

async function show(args: ShowArgs, deps: AppDeps): Promise<number> {
  const dir = await openRun(args.run);
  const kind = await recordKindIn(dir);
  if (kind === null || kind === 'bench' || kind === 'host') return benchShow.run(args, deps);
  // Their flags describe a bench run's ratios; another kind's JSON is report's.
  const benchOnly = (['json', 'all', 'config'] as const).filter((f) => args[f] !== undefined && args[f] !== false);
  if (benchOnly.length > 0)
    throw new UserError(
      `--${benchOnly[0]} describes a bench run's ratios, and ${args.run} is ${kindText(kind)}: drop it${benchOnly[0] === 'json' ? `, or use gpushare report ${args.run} --json` : ''}`,
    );
  deps.out(`${RECORD_KINDS[kind].noun} ${await summaryOf(kind, dir)}`);
  return ExitCode.ok;
}

/** The run's id and status, then what its command printed at its end. */
async function summaryOf(kind: 'probe' | 'capacity' | 'mix' | 'verify' | 'serve', dir: string): Promise<string> {
  const head = (run: { id: string; status: string; fingerprint: Parameters<typeof simulatedLine>[0] }) =>
    `${run.id} (${run.status})\n${simulatedLine(run.fingerprint)}`;
  const none = new UserError(`${dir}: its ${RECORD_KINDS[kind].file} could not be read`);
  switch (kind) {
    case 'probe': {
      const run = await loadProbeRun(dir);
      if (run === null) throw none;
      return `${head(run)}${probeSummary(run)}`;
    }
    case 'capacity': {
      const run = await loadCapacityRun(dir);
      if (run === null) throw none;
      return `${head(run)}${capacitySummary(capacityTable(run))}${run.timeAccount ? `${timeAccountText(run.timeAccount)}\n` : ''}`;
    }
    case 'mix': {
      const run = await loadMixRun(dir);
      if (run === null) throw none;
      return `${head(run)}${mixSummary(run, mixCells(run))}`;
    }
    case 'serve': {
      const run = await loadServeRun(dir);
      if (run === null) throw none;
      return `${head(run)}${serveSummary(run, analyzeServe(run))}`;
    }
    case 'verify': {
      const run = await loadVerifyRun(dir);
      if (run === null) throw none;
      return `${head(run)}${verifySummary(run)}\n`;
    }
  }
}
