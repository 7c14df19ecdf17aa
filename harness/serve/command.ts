/**
 * `gpushare bench --serve` and `gpushare capacity --serve`: copies of the user's own inference server
 * under each sharing mode, driven by gpushare's load generator. Fingerprint and preflight → a run
 * directory (serve.json, the lifecycle's lock, interrupts, MPS daemons recorded before they start,
 * every copy in its own process group, killed with the harness) → the first copy up, then the
 * generator's ceiling → a group per mode and number of copies → report. --resume measures the groups not finished.
 */
import { availableParallelism, cpus } from 'node:os';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { termText } from '../core/escape/terminal.js';
import { VERSION } from '../core/version.js';
import { LoadPool } from '../load/pool.js';
import type { MachineRecordHeader } from '../record/record-file.js';
import { writeOutputFile } from '../record/store.js';
import { jsonBinding, runAndReport, type Session } from '../session/lifecycle.js';
import type { NewRun } from '../session/preflight.js';
import { defineRunCommand, runJson, whereLines } from '../session/run-command.js';
import { gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { analyzeServe } from './analysis.js';
import { dryRunText } from './dry-run.js';
import { measureFleetCapacity } from './fleet/fleet-capacity.js';
import { fleetCapacitySummary } from './fleet/fleet-capacity-markdown.js';
import { fleetDryRunText } from './fleet/fleet-dry-run.js';
import { fleetSummary } from './fleet/fleet-markdown.js';
import { measureFleet } from './fleet/fleet-measure.js';
import { fleetRunReport } from './fleet/fleet-report.js';
import { fleetStart } from './fleet/fleet-run.js';
import { serveMarkdown, serveSummary } from './markdown.js';
import { measureServe } from './measure.js';
import { resolveServeOptions, SERVE_FLAGS, type ServeOptions } from './options.js';
import { loadServeRun, SERVE_SCHEMA_ID, type ServeGroup, type ServeRun, type ServeSettings } from './record.js';
import { RequestsLog } from './requests-log.js';
import { shortStepWarning } from './steps.js';

const ABOUT = {
  bench:
    'bench --serve: N copies of your own OpenAI-compatible server under each mode against one dedicated copy, at equal requests resident per GPU (docs/serving.md).',
  capacity:
    'capacity --serve: per mode and number of copies, the highest request rate at which TTFT p99 holds --slo-ttft-p99-ms (docs/serving.md).',
} as const;

const EPILOGUE = `Exit codes: 0 every group measured, 3 a group failed or was skipped, 2 bad input, 130 interrupted.
Each copy runs in its own process group and dies with gpushare (kill -9 included); --resume measures the groups not finished.`;

function serveCommandOf(measure: ServeSettings['measure']) {
  return defineRunCommand({
    flags: SERVE_FLAGS,
    epilogue: `${ABOUT[measure]}\n${EPILOGUE}`,
    kind: 'serve',
    schema: SERVE_SCHEMA_ID,
    verb: 'measure servers',
    resolve: (args) => resolveServeOptions(args, measure),
    dryRun: async (options, deps) => {
      // A fleet's groups are its modes, each with all its servers: the copies' groups do not apply.
      if (options.settings.fleet !== undefined) {
        deps.out(await fleetDryRun(options, deps));
        return 0;
      }
      deps.out(
        dryRunText(
          options.settings,
          plannedGroups({ ...options.settings, serverCpus: null, generatorCpu: null, generatorCpus: null }),
        ),
      );
      return 0;
    },
    binding: (dir) =>
      jsonBinding<ServeRun>(dir, 'serve', 2, {
        command: `gpushare ${measure}`,
        daemons: (run) => run.daemons,
        done: (run) => run.groups.filter((g) => g.status !== 'pending').length,
        windDown: 'stopping the copies (--resume measures the group under way again)',
      }),
    create: newServeRun,
    resume: {
      load: async (dir) => {
        const run = await loadServeRun(dir);
        const made = run?.settings.measure ?? measure;
        if (made !== measure)
          throw new UserError(`${dir} is a ${made} --serve run: continue it with gpushare ${made} --resume ${dir}`);
        return run;
      },
      resumed: (run, deps) => {
        (run.resumes ??= []).push({
          at: deps.clock.nowIso(),
          groupsKept: run.groups.filter((g) => g.status !== 'pending').length,
        });
      },
      options: (run, given): ServeOptions => ({ ...given, settings: run.settings, dryRun: false }),
    },
    measure: serveRun,
  });
}

/** `gpushare bench --serve`: shared ÷ dedicated at equal requests resident per GPU. */
export const serveBenchCommand = serveCommandOf('bench');
/** `gpushare capacity --serve`: the highest rate at the TTFT p99 SLO per mode and number of copies. */
export const serveCapacityCommand = serveCommandOf('capacity');

/** The most worker processes a default --load-workers gives. */
export const DEFAULT_LOAD_WORKERS_MAX = 16;

/**
 * The generator's worker processes by default: with the cores split, one a generator core; else half
 * the host's cores, at least 1, at most DEFAULT_LOAD_WORKERS_MAX.
 */
export function defaultLoadWorkers(cores: number, split: { generatorCpus: string } | null): number {
  const n = split !== null ? split.generatorCpus.split(',').length : Math.floor(cores / 2);
  return Math.max(1, Math.min(DEFAULT_LOAD_WORKERS_MAX, n));
}

/**
 * The cores this process may use (its affinity, as the fingerprint read it), split: the first
 * `workers` (by default half, at most DEFAULT_LOAD_WORKERS_MAX) for the harness and its generator
 * workers, the rest, at least 2, for the servers; null (not pinned) with fewer than 4, or without
 * taskset. Half, not a core: one Node process sends a few hundred streamed requests/s (177 on an H100
 * host, 402 on an H200), and a 16-core host must send 2,000 with the null servers of the ceiling on the
 * other half.
 */
export function cpuSplit(
  allowed: readonly number[],
  hasTaskset: boolean,
  workers?: number,
): { generatorCpu: number; generatorCpus: string; serverCpus: string } | null {
  const [first] = allowed;
  if (first === undefined || allowed.length < 4 || !hasTaskset) return null;
  const wanted = workers ?? Math.min(DEFAULT_LOAD_WORKERS_MAX, Math.floor(allowed.length / 2));
  const n = Math.max(1, Math.min(allowed.length - 2, wanted));
  return {
    generatorCpu: first,
    generatorCpus: allowed.slice(0, n).join(','),
    serverCpus: allowed.slice(n).join(','),
  };
}

/** The groups a run measures, in order: bench, each mode at each number of copies; capacity, a dedicated copy first. */
export function plannedGroups(settings: ServeSettings): ServeGroup[] {
  const group = (mode: ServeGroup['mode'], copies: number): ServeGroup => ({
    mode,
    copies,
    status: 'pending',
    reason: null,
    rounds: [],
    steps: [],
    env: {},
  });
  const shared = settings.copies.flatMap((copies) => settings.modes.map((mode) => group(mode, copies)));
  return settings.measure === 'capacity' ? [group('dedicated', 1), ...shared] : shared;
}

/** A new server run's first record: the servers kept off the generator's core (where taskset can), every group pending. */
async function newServeRun(
  header: MachineRecordHeader<typeof SERVE_SCHEMA_ID>,
  options: ServeOptions,
  { fingerprint, busy }: NewRun,
  deps: AppDeps,
): Promise<ServeRun> {
  const allowed = fingerprint.host?.allowedCpus ?? [];
  const given = options.settings.loadWorkers;
  const split = cpuSplit(allowed, (await deps.runner.which('taskset')) !== null, given);
  const settings: ServeSettings = {
    ...options.settings,
    serverCpus: split?.serverCpus ?? null,
    generatorCpu: split?.generatorCpu ?? null,
    generatorCpus: split?.generatorCpus ?? null,
    loadWorkers: given ?? defaultLoadWorkers(allowed.length || availableParallelism(), split),
  };
  const fleet = settings.fleet === undefined ? null : await fleetStart(settings.fleet, settings);
  if (fleet !== null && settings.measure === 'capacity' && fleet.fleet.traffic.source === 'trace')
    throw new UserError(
      `${settings.fleet}: capacity --serve --fleet sizes the fleet, and a trace replays fixed servers: give traffic.rate_per_s and a popularity law, shares or rates instead of traffic.trace`,
    );
  const run: ServeRun = {
    ...header,
    settings,
    ceiling: [],
    groups: fleet?.groups ?? plannedGroups(settings),
    ...(fleet === null ? {} : { fleet: fleet.record }),
    daemons: [],
    host: { cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? null },
    warnings: busy.map((b) => `the GPU was busy before the run: ${b}`),
  };
  const short =
    settings.measure === 'capacity' && fleet === null
      ? shortStepWarning(Math.min(...run.groups.map((g) => g.copies)), settings.windowMs, settings.maxStepMs)
      : null;
  if (short !== null) {
    run.warnings.push(short);
    deps.err(`gpushare capacity --serve: ${short}\n`);
  }
  if (fleet?.fleet.inProcess != null && settings.measure === 'capacity') {
    const line = `${settings.fleet}: its in_process arm is not measured: capacity sizes fleets of processes (bench --serve --fleet measures it)`;
    run.warnings.push(line);
    deps.err(`gpushare capacity --serve: ${line}\n`);
  }
  return run;
}

async function serveRun(session: Session<ServeRun>, { json }: ServeOptions, deps: AppDeps): Promise<number> {
  const run = session.record;
  const gpuUuid = visibleDevice(run.fingerprint, run.gpuIndex);
  // The generator (this process and its workers) on the cores the servers are kept off; a new run and a
  // resumed one alike (a run before the workers: the one core it named).
  const generatorCpus =
    run.settings.generatorCpus ?? (run.settings.generatorCpu === null ? null : String(run.settings.generatorCpu));
  if (generatorCpus != null) {
    const pinned = await deps.runner.exec(['taskset', '-pc', generatorCpus, String(process.pid)]);
    if (pinned.status !== 'exited' || pinned.exitCode !== 0)
      run.warnings.push(
        `could not pin the load generator to CPUs ${generatorCpus} (taskset -pc): it shares cores with the servers`,
      );
  }
  // A run before the workers (resumed) sends with one, as the harness alone did.
  const pool = new LoadPool(deps.runner, run.settings.loadWorkers ?? 1, generatorCpus, session.reaper);
  const loop = async () => {
    // Workers up before any start time is set (a cold one sends late); one that cannot start fails the windows it would send.
    const cold = await pool.start();
    if (cold !== null) run.warnings.push(cold);
    deps.err(
      `gpushare ${run.settings.measure} --serve ${run.id}: ${run.groups.length} groups, ${termText(run.settings.serve)}\n`,
    );
    const driver: Parameters<typeof measureServe>[1] = {
      runner: deps.runner,
      clock: deps.clock,
      reaper: session.reaper,
      abort: session.abort,
      interrupted: () => session.interrupted(),
      save: () => session.save(),
      startMps: (label) =>
        session.startMps(
          (daemon) => run.daemons.push(daemon),
          gpuUuid,
          `mps/${String(run.daemons.length + 1).padStart(2, '0')}-${label}`,
        ),
      gpuUuid,
      gpuMemoryMiB: gpuAt(run.fingerprint, run.gpuIndex)?.memoryTotalMiB ?? null,
      progress: (line) => deps.err(`${termText(line)}\n`),
      generator: pool,
      requests: new RequestsLog(session.dir),
    };
    const fleet = run.fleet === undefined ? null : await fleetStart(run.fleet.file, run.settings, session.dir);
    const measured =
      fleet === null
        ? measureServe(run, driver)
        : run.settings.measure === 'capacity'
          ? measureFleetCapacity(run, driver, fleet.fleet, fleet.schedule)
          : measureFleet(run, driver, fleet.fleet, fleet.schedule);
    await measured.finally(() => pool.stop());
  };
  const report = async () => {
    const fleet = fleetRunReport(run);
    if (fleet !== null) return fleetReport(session, run, fleet, json, deps);
    const analysis = analyzeServe(run);
    const file = session.reportFile();
    await writeOutputFile(file, serveMarkdown(run, analysis, VERSION));
    const code = analysis.groups.every((g) => g.status === 'measured') ? 0 : 3;
    deps.out(
      json
        ? runJson(session, file, { exitCode: code, analysis })
        : `${serveSummary(run, analysis)}${whereLines(session.dir, file)}`,
    );
    return code;
  };
  return runAndReport(session, loop, report);
}

/** A fleet's servers and its pre-check against this host, for --dry-run. */
async function fleetDryRun(options: ServeOptions, deps: AppDeps): Promise<string> {
  const cores = availableParallelism();
  const s = options.settings;
  const each =
    s.measure === 'bench'
      ? `each kind's first server alone (the baseline), then per mode every server, a warm-up until steady and ${s.rounds} windows of ${s.windowMs / 1000} s`
      : `per mode a search over the fleet's size, each step a warm-up and ${s.rounds} windows of ${s.windowMs / 1000} s`;
  const header = `gpushare ${s.measure} --serve --fleet --dry-run: nothing is started or measured\nmodes ${s.modes.join(', ')}: ${each}\n`;
  return (
    header +
    (await fleetDryRunText(
      options.settings.fleet as string,
      options.settings.modes,
      {
        runner: deps.runner,
        gpuIndex: options.gpuIndex,
        cores,
        loadWorkers: options.settings.loadWorkers ?? defaultLoadWorkers(cores, null),
      },
      s.measure,
      s,
    ))
  );
}

/** A fleet run's report: the markdown, and its summary or JSON; 0 when every mode was measured. */
async function fleetReport(
  session: Session<ServeRun>,
  run: ServeRun,
  { markdown, analysis, search }: NonNullable<ReturnType<typeof fleetRunReport>>,
  json: boolean,
  deps: AppDeps,
): Promise<number> {
  const file = session.reportFile();
  await writeOutputFile(file, markdown);
  const code = run.groups.every((g) => g.status === 'measured') ? 0 : 3;
  deps.out(
    json
      ? runJson(session, file, { exitCode: code, analysis, ...(search === null ? {} : { search }) })
      : `${search === null ? fleetSummary(run, analysis) : fleetCapacitySummary(run, search)}${whereLines(session.dir, file)}`,
  );
  return code;
}
