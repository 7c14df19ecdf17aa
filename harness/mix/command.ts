/**
 * `gpushare mix`: a latency-critical victim driven open-loop at a share of its capacity beside
 * aggressors running flat out, per sharing mode; the interference matrix, the protection each cap
 * gives, and the claims about mixed tenants graded.
 */
import { clockText } from '../core/clock-text.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { notARunOf } from '../record/record-file.js';
import { simulatedLine } from '../record/simulated.js';
import { jsonBinding, runAndReport, type Session } from '../session/lifecycle.js';
import { defineRunCommand, runJson, whereLines } from '../session/run-command.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { mixCells, protections } from './analysis.js';
import { estimateMs, roundArms } from './arms.js';
import { measureMode, victimCapacity } from './measure.js';
import { MIX_EPILOGUE, MIX_FLAGS, type MixOptions, resolveMixOptions } from './options.js';
import { loadMixRun, MIX_SCHEMA_ID, type MixRun } from './record.js';
import { mixSummary, writeMixReport } from './report.js';

/** `gpushare mix`: flags, options, run; --resume continues one with its own settings. */
export const mixCommand = defineRunCommand({
  flags: MIX_FLAGS,
  epilogue: MIX_EPILOGUE,
  kind: 'mix',
  schema: MIX_SCHEMA_ID,
  verb: 'measure unlike tenants',
  resolve: resolveMixOptions,
  dryRun: (options, deps) => {
    const estimate = estimateMs(options.settings);
    deps.out(
      `gpushare mix --dry-run: ${estimate.windows} windows, about ${clockText(estimate.totalMs)} on an H100\n${estimate.lines.map((l) => `  ${l}\n`).join('')}`,
    );
    return ExitCode.ok;
  },
  binding: (dir) =>
    jsonBinding<MixRun>(dir, 'mix', 0, {
      daemons: (run) => run.daemons,
      done: (run) => run.windows.length,
      windDown: 'stopping after the window under way (--resume measures its round again)',
    }),
  create: (header, options): MixRun => ({
    ...header,
    settings: options.settings,
    capacitySteps: [],
    windows: [],
    outcomes: [],
    warnings: [],
    daemons: [],
    current: null,
    resumes: [],
  }),
  /** The round under way when it stopped is measured again. */
  resume: {
    // A directory of no mix run is refused as not one, even where a kill left it empty.
    load: async (dir) => (await loadMixRun(dir)) ?? Promise.reject(await notARunOf(dir, 'mix')),
    resumed: (run, deps) => {
      const cut = run.current;
      if (cut) run.windows = run.windows.filter((w) => w.mode !== cut.mode || w.round !== cut.round);
      run.outcomes = run.outcomes.filter((o) => o.status !== 'interrupted');
      run.current = null;
      run.resumes.push({ at: deps.clock.nowIso(), windowsKept: run.windows.length });
    },
    options: (run, given): MixOptions => ({
      ...given,
      settings: run.settings,
      readyTimeoutMs: READY_TIMEOUT_S * 1000,
      dryRun: false,
    }),
  },
  measure: mixRun,
});

async function mixRun(session: Session<MixRun>, options: MixOptions, deps: AppDeps): Promise<number> {
  const run = session.record;
  const { settings } = run;
  const visible = visibleDevice(run.fingerprint, run.gpuIndex);
  const total = settings.modes.reduce((n, m) => n + roundArms(settings, m, 0).length * settings.rounds, 0);
  let capacityQps: number | null = null;
  const loop = async () => {
    deps.err(
      `gpushare mix ${run.id}: victim ${settings.victim.name} at ${settings.loads.map((l) => `${l * 100}%`).join(', ')} of its capacity beside ${settings.aggressors.map((a) => a.name).join(', ')}; ${settings.modes.join(', ')}; about ${clockText(estimateMs(settings).totalMs)} on an H100\n`,
    );
    capacityQps = await victimCapacity(session, options, deps, visible);
    if (capacityQps === null) {
      run.status = 'failed';
      run.warnings.push(
        "the victim's capacity alone was not found: no rate passed its p99 target (give --victim-qps, or a larger --slo-p99-ms)",
      );
      return;
    }
    for (const mode of settings.modes) {
      if (session.abort.aborted) throw session.interrupted();
      if (run.outcomes.some((o) => o.mode === mode)) continue;
      await measureMode(session, mode, capacityQps, options, deps, { windowsLeft: () => total - run.windows.length });
    }
  };
  const report = async () => {
    const file = await writeMixReport(session.reportFile(), run);
    const cells = mixCells(run);
    deps.out(
      options.json
        ? runJson(session, file, { status: run.status, cells, protections: protections(run, cells) })
        : `${simulatedLine(run.fingerprint)}${mixSummary(run, cells)}${whereLines(session.dir, file)}`,
    );
    const failed = run.status === 'failed' || run.outcomes.some((o) => o.status === 'failed');
    const nothing = cells.length > 0 && cells.every((c) => c.status === 'invalid');
    return failed || nothing ? ExitCode.inconclusive : ExitCode.ok;
  };
  return runAndReport(session, loop, report);
}
