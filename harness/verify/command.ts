/**
 * `gpushare verify <artifacts dir>`: what the generated files declare → fingerprint and preflight →
 * a run directory (verify.json, the lifecycle's lock, interrupts, private MPS daemons recorded before
 * they start) → one row per declared limit, then the named cases asked for → report → the gate's exit
 * codes (0 every limit held, 1 one did not, 2 cannot run, 3 one could not be measured).
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ArgsOf } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { UserError } from '../core/errors.js';
import { argText, termText } from '../core/escape/terminal.js';
import { integer, list, oneOf } from '../core/flags.js';
import { VERSION } from '../core/version.js';
import { simulatedLine } from '../record/simulated.js';
import { readRegularFile, writeOutputFile } from '../record/store.js';
import { jsonBinding, runAndReport, type Session } from '../session/lifecycle.js';
import { defineRunCommand, runJson, whereLines } from '../session/run-command.js';
import { type Fingerprint, type Gpu, gpuAt, visibleDevice } from '../system/nvidia/schema.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';
import { CASE_NAMES, type CaseName, runCase } from './cases.js';
import { DECLARING_FILES, type Declared, otherGpu, parseDeclared } from './declared.js';
import { verifyRows } from './enforced.js';
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

/** What verify runs with: its options, and what the files in the artifacts directory declare. */
type VerifyCommandOptions = VerifyOptions & { declared: Declared };

/** `gpushare verify`: flags, options (the declaring files read and parsed), run; no --resume (run it again). */
export const verifyCommand = defineRunCommand({
  flags: VERIFY_FLAGS,
  positionals: VERIFY_POSITIONALS,
  kind: 'verify',
  schema: VERIFY_SCHEMA_ID,
  verb: 'verify',
  resolve: async (args): Promise<VerifyCommandOptions> => {
    const options = resolveVerifyOptions(args);
    return { ...options, declared: parseDeclared(await readArtifacts(options.artifacts)) };
  },
  binding: (dir) =>
    jsonBinding<VerifyRun>(dir, 'verify', 2, {
      daemons: (run) => run.daemons,
      done: (run) => run.rows.length + run.cases.length,
      windDown: 'stopping after the check under way',
      resumable: false,
    }),
  create: (header, options, { busy }): VerifyRun => {
    const gpu = gpuOf(header.fingerprint, options.gpuIndex);
    const run: VerifyRun = {
      ...header,
      artifacts: options.artifacts,
      declared: options.declared,
      requestedCases: options.cases,
      rows: [],
      cases: [],
      daemons: [],
      leftPids: [],
      warnings: busy.map((b) => `the GPU was busy before verify: ${b}`),
    };
    const other = otherGpu(options.declared.source, gpu.name);
    if (other !== null) run.warnings.push(other);
    return run;
  },
  measure: verify,
});

/** GPU `gpuIndex` of `fingerprint`: a --gpu this node does not have is refused. */
function gpuOf(fingerprint: Fingerprint, gpuIndex: number): Gpu {
  const gpu = gpuAt(fingerprint, gpuIndex);
  if (!gpu) throw new UserError(`--gpu ${gpuIndex}: this node has no such GPU`);
  return gpu;
}

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

async function verify(session: Session<VerifyRun>, options: VerifyCommandOptions, deps: AppDeps): Promise<number> {
  const run = session.record;
  const { fingerprint, declared } = run;
  const gpu = gpuOf(fingerprint, options.gpuIndex);
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
    deps.out(
      options.json
        ? runJson(session, file, { exitCode: code, rows: run.rows, cases: run.cases })
        : verifyText(run, session.dir, file, code),
    );
    return code;
  };
  return runAndReport(session, loop, report);
}

function verifyText(run: VerifyRun, dir: string, report: string, code: number): string {
  const other = otherGpu(run.declared.source, gpuAt(run.fingerprint, run.gpuIndex)?.name ?? null);
  const tail = [...(other !== null ? [`warning: ${other}`] : []), `verify: exit ${code}`].map((l) => termText(l));
  return `${simulatedLine(run.fingerprint)}${verifySummary(run)}\n${tail.join('\n')}\n${whereLines(dir, report)}`;
}
