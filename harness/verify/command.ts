/**
 * `gpushare verify <artifacts dir>`: what the generated files declare → fingerprint and preflight →
 * a run directory (verify.json, the lifecycle's lock, interrupts, private MPS daemons recorded before
 * they start) → one row per declared limit, then the named cases asked for → report → the gate's exit
 * codes (0 every limit held, 1 one did not, 2 cannot run, 3 one could not be measured).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { argText, termJson, termText } from '../core/escape/terminal.js';
import { integer, list, oneOf } from '../core/flags.js';
import { VERSION } from '../core/version.js';
import { simulatedJson, simulatedLine } from '../record/simulated.js';
import { readRegularFile, writeOutputFile } from '../record/store.js';
import { jsonBinding, newSession, type RecordBinding, runAndReport } from '../session/lifecycle.js';
import { newRun } from '../session/preflight.js';
import { gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { CASE_NAMES, type CaseName, runCase } from './cases.js';
import { verifyRows } from './checks.js';
import { DECLARING_FILES, otherGpu, parseDeclared } from './declared.js';
import { verifyMarkdown } from './markdown.js';
import type { VerifyNode } from './node.js';
import { VERIFY_SCHEMA_ID, type VerifyRun } from './record.js';
import { verifySummary } from './summary.js';
import { verifyExitCode } from './verdicts.js';

const VERIFY_POSITIONALS = {
  artifacts: {
    type: 'string',
    demandOption: true,
    describe: 'directory of files gpushare artifacts or gpushare plan --out wrote',
  },
} as const;

export const VERIFY_FLAGS = {
  cases: {
    type: 'string',
    describe: `also run the known silent failures, comma-separated, or all: ${CASE_NAMES.join(', ')}`,
  },
  gpu: { type: 'number', describe: 'index of the GPU', defaultDescription: '0' },
  out: { type: 'string', describe: 'run directory', defaultDescription: 'runs/results/<date>-<gpu>-verify-<id>' },
  python: { type: 'string', describe: 'Python interpreter with PyTorch', defaultDescription: DEFAULT_PYTHON },
  'allow-busy': { type: 'boolean', describe: 'measure even if another process uses the GPU' },
  json: { type: 'boolean', describe: 'print the rows and cases as JSON' },
} as const;
type VerifyArgs = ArgsOf<typeof VERIFY_FLAGS> & ArgsOf<typeof VERIFY_POSITIONALS>;

export interface VerifyOptions {
  artifacts: string;
  cases: CaseName[];
  gpuIndex: number;
  out: string | null;
  python: string;
  allowBusy: boolean;
  json: boolean;
}

export function resolveVerifyOptions(args: VerifyArgs): VerifyOptions {
  const cases =
    args.cases === undefined
      ? []
      : args.cases.trim() === 'all'
        ? [...CASE_NAMES]
        : list(args.cases, '--cases', []).map((c) => oneOf(c, CASE_NAMES, '--cases', 'case'));
  return {
    artifacts: args.artifacts,
    cases: CASE_NAMES.filter((c) => cases.includes(c)),
    gpuIndex: integer(args.gpu, '--gpu', 0, 0, 63),
    out: args.out ?? null,
    python: args.python ?? DEFAULT_PYTHON,
    allowBusy: args.allowBusy ?? false,
    json: args.json ?? false,
  };
}

/** `gpushare verify`: flags, options, run. */
export const verifyCommand = defineCommand({
  flags: VERIFY_FLAGS,
  positionals: VERIFY_POSITIONALS,
  resolve: resolveVerifyOptions,
  run: verify,
});

/** The files gpushare generates are a few KiB: one larger than this is none of them. */
const MAX_DECLARING_BYTES = 1024 * 1024;

/** A declaring file's text: a FIFO, a device (a link to /dev/zero) or an outsized file is refused in one line. */
async function readDeclaring(file: string): Promise<string> {
  try {
    return await readRegularFile(
      file,
      'verify reads the files gpushare artifacts or plan --out wrote',
      MAX_DECLARING_BYTES,
    );
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError(`cannot read ${argText(file)} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/** The declaring files in `dir`, by name; a directory with none of them is refused. */
async function readArtifacts(dir: string): Promise<Record<string, string>> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory())
    throw new UserError(
      `${argText(dir)} is not a directory: give the directory gpushare artifacts --out or gpushare plan --out wrote`,
    );
  const names = new Set(await readdir(dir));
  const files: Record<string, string> = {};
  for (const name of DECLARING_FILES) if (names.has(name)) files[name] = await readDeclaring(path.join(dir, name));
  if (Object.keys(files).length === 0)
    throw new UserError(
      `${argText(dir)} holds none of ${DECLARING_FILES.join(', ')}: give the directory gpushare artifacts --out or gpushare plan --out wrote`,
    );
  return files;
}

function binding(dir: string): RecordBinding<VerifyRun> {
  return jsonBinding<VerifyRun>(dir, 'verify', 2, {
    daemons: (run) => run.daemons,
    done: (run) => run.rows.length + run.cases.length,
    windDown: 'stopping after the check under way',
    resumable: false,
  });
}

async function verify(options: VerifyOptions, deps: AppDeps): Promise<number> {
  const declared = parseDeclared(await readArtifacts(options.artifacts));
  const { fingerprint, busy, createdAt, id, dir } = await newRun(deps, options, 'verify', 'verify');
  const gpu = gpuAt(fingerprint, options.gpuIndex);
  if (!gpu) throw new UserError(`--gpu ${options.gpuIndex}: this node has no such GPU`);
  const run: VerifyRun = {
    schema: VERIFY_SCHEMA_ID,
    id,
    status: 'running',
    createdAt,
    finishedAt: null,
    fingerprint,
    gpuIndex: options.gpuIndex,
    artifacts: options.artifacts,
    declared,
    requestedCases: options.cases,
    rows: [],
    cases: [],
    daemons: [],
    leftPids: [],
    warnings: busy.map((b) => `the GPU was busy before verify: ${b}`),
  };
  const other = otherGpu(declared.source, gpu.name);
  if (other !== null) run.warnings.push(other);
  const session = await newSession(binding(dir), dir, run, deps);
  const visible = visibleDevice(fingerprint, options.gpuIndex);
  const node: VerifyNode = {
    runner: deps.runner,
    python: options.python,
    visibleDevices: visible,
    gpu,
    gpuIndices: fingerprint.gpus.map((g) => g.index).filter((i): i is number => i !== null),
    visibleAll: fingerprint.gpus.map((_, i) => visibleDevice(fingerprint, i)).join(','),
    startMps: (label, paths, visibleDevices = visible) =>
      session.startMps(
        (daemon) => run.daemons.push(daemon),
        visibleDevices,
        `mps/${String(run.daemons.length + 1).padStart(2, '0')}-${label}`,
        paths,
      ),
    onForcedExit: (kill) => session.reaper.add(kill),
    leftPids: run.leftPids,
  };
  const loop = async () => {
    deps.err(
      `gpushare verify ${run.id}: ${declared.files.join(', ')} on ${termText(gpu.name ?? `GPU ${options.gpuIndex}`)}\n`,
    );
    run.rows = await verifyRows(declared, node);
    for (const r of run.rows) deps.err(`  ${r.id}: ${r.verdict}\n`);
    await session.save();
    for (const name of options.cases) {
      if (session.abort.aborted) throw session.interrupted();
      const outcome = await runCase(name, {
        node,
        declared,
        hostEnv: process.env,
        defaultDaemon: fingerprint.mps.defaultDaemonSocket,
      });
      run.cases.push(outcome);
      deps.err(`  case ${name}: ${outcome.outcome}\n`);
      await session.save();
    }
    if (run.leftPids.length > 0) run.warnings.push(`clients left running: PIDs ${run.leftPids.join(', ')}`);
  };
  const report = async () => {
    const file = session.reportFile();
    await writeOutputFile(file, verifyMarkdown(run, VERSION));
    const code = verifyExitCode(run.rows);
    if (options.json)
      deps.out(
        termJson({
          ...simulatedJson(run.fingerprint),
          runId: run.id,
          dir: session.dir,
          report: file,
          exitCode: code,
          rows: run.rows,
          cases: run.cases,
        }),
      );
    else deps.out(verifyText(run, session.dir, file, code));
    return code;
  };
  return runAndReport(session, loop, report);
}

function verifyText(run: VerifyRun, dir: string, report: string, code: number): string {
  const other = otherGpu(run.declared.source, gpuAt(run.fingerprint, run.gpuIndex)?.name ?? null);
  const tail = [
    ...(other !== null ? [`warning: ${other}`] : []),
    `verify: exit ${code}`,
    `run: ${dir}`,
    `report: ${report}`,
  ].map((l) => termText(l));
  return `${simulatedLine(run.fingerprint)}${verifySummary(run)}\n${tail.join('\n')}\n`;
}
