/**
 * `gpushare mix`: a latency-critical victim driven open-loop at a share of its capacity beside
 * aggressors running flat out, per sharing mode; the interference matrix, the protection each cap
 * gives, and the claims about mixed tenants graded.
 */
import { clockText } from '../core/clock-text.js';
import { defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { termJson, termText } from '../core/escape/terminal.js';
import { notARunOf } from '../record/record-file.js';
import { simulatedJson, simulatedLine } from '../record/simulated.js';
import { refuseSettingsWithResume } from '../session/flags.js';
import {
  jsonBinding,
  newSession,
  type RecordBinding,
  resumeOnThisMachine,
  runAndReport,
  type Session,
} from '../session/lifecycle.js';
import { newRun } from '../session/preflight.js';
import { visibleDevice } from '../system/nvidia/schema.js';
import { READY_TIMEOUT_S } from '../workload/client.js';
import { mixCells, protections } from './analysis.js';
import { measureMode, victimCapacity } from './measure.js';
import { MIX_EPILOGUE, MIX_FLAGS, type MixOptions, resolveMixOptions } from './options.js';
import { estimateMs, roundArms } from './plan.js';
import { loadMixRun, MIX_SCHEMA_ID, type MixRun } from './record.js';
import { mixSummary, writeMixReport } from './report.js';

type MixCommandOptions = ({ resume: null } & MixOptions) | { resume: string; json: boolean };

/** `gpushare mix`: flags, options, run. */
export const mixCommand = defineCommand({
  flags: MIX_FLAGS,
  epilogue: MIX_EPILOGUE,
  resolve: (args): MixCommandOptions => {
    if (args.resume === undefined) return { resume: null, ...resolveMixOptions(args) };
    refuseSettingsWithResume(MIX_FLAGS, args);
    return { resume: args.resume, json: args.json ?? false };
  },
  run: mix,
});

async function mix(options: MixCommandOptions, deps: AppDeps): Promise<number> {
  if (options.resume !== null) return resumeMix(options.resume, options.json, deps);
  if (options.dryRun) {
    const estimate = estimateMs(options.settings);
    deps.out(
      `gpushare mix --dry-run: ${estimate.windows} windows, about ${clockText(estimate.totalMs)} on an H100\n${estimate.lines.map((l) => `  ${l}\n`).join('')}`,
    );
    return ExitCode.ok;
  }
  const { fingerprint, createdAt, id, dir } = await newRun(deps, options, 'mix', 'measure unlike tenants');
  const run: MixRun = {
    schema: MIX_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    settings: options.settings,
    capacitySteps: [],
    windows: [],
    outcomes: [],
    warnings: [],
    daemons: [],
    current: null,
    resumes: [],
  };
  return mixRun(await newSession(mixBinding(dir), dir, run, deps), options, deps);
}

/** Continues a mix run with its own settings: the round under way when it stopped is measured again. */
async function resumeMix(dir: string, json: boolean, deps: AppDeps): Promise<number> {
  const session = await resumeOnThisMachine(mixBinding(dir), dir, deps, {
    load: async (from) => (await loadMixRun(from)) ?? Promise.reject(await notARunOf(from, 'mix')),
    resumed: (run) => {
      const cut = run.current;
      if (cut) run.windows = run.windows.filter((w) => w.mode !== cut.mode || w.round !== cut.round);
      run.outcomes = run.outcomes.filter((o) => o.status !== 'interrupted');
      run.current = null;
      run.resumes.push({ at: deps.clock.nowIso(), windowsKept: run.windows.length });
    },
    verb: 'measure unlike tenants',
  });
  const run = session.record;
  const options: MixOptions = {
    settings: run.settings,
    gpuIndex: run.gpuIndex,
    out: dir,
    python: run.fingerprint.python.executable,
    readyTimeoutMs: READY_TIMEOUT_S * 1000,
    allowBusy: false,
    json,
    dryRun: false,
  };
  return mixRun(session, options, deps);
}

function mixBinding(dir: string): RecordBinding<MixRun> {
  return jsonBinding<MixRun>(dir, 'mix', 0, {
    daemons: (run) => run.daemons,
    done: (run) => run.windows.length,
    windDown: 'stopping after the window under way (--resume measures its round again)',
  });
}

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
    if (options.json)
      deps.out(
        termJson({
          ...simulatedJson(run.fingerprint),
          runId: run.id,
          dir: session.dir,
          report: file,
          status: run.status,
          cells,
          protections: protections(run, cells),
        }),
      );
    else
      deps.out(
        `${simulatedLine(run.fingerprint)}${mixSummary(run, cells)}run: ${termText(session.dir)}\nreport: ${termText(file)}\n`,
      );
    const failed = run.status === 'failed' || run.outcomes.some((o) => o.status === 'failed');
    const nothing = cells.length > 0 && cells.every((c) => c.status === 'invalid');
    return failed || nothing ? ExitCode.inconclusive : ExitCode.ok;
  };
  return runAndReport(session, loop, report);
}
