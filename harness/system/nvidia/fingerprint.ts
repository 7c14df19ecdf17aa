import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProcessRunner } from '../../core/process.js';
import { type CpuAllowance, readCpuAllowance } from '../cpus.js';
import { findProcesses } from '../proc/process-table.js';
import { isSimulator } from '../simulator.js';
import { type Fingerprint, type Gpu, type PythonProbe, PythonProbeSchema } from './schema.js';
import { COMPUTE_APP_FIELDS, GPU_FIELDS, parseCsvRows, queryArg } from './smi-csv.js';
import { parseGpuList, parseMigPlacements, parseMigProfiles, parseVersions } from './smi-text.js';

export interface FingerprintOptions {
  python: string;
  /** workloads/probe.py: prints one JSON line about Python, PyTorch and the GPU it sees. */
  probeScript: string;
  env?: NodeJS.ProcessEnv;
  clock: { nowIso(): string };
  /** The CPUs this process may use (tests pass one; else read from /proc and the cgroup). */
  cpus?: CpuAllowance;
}

const SMI_TIMEOUT_MS = 30_000;

/** The allowance as the fingerprint's host records it: no allowedCpus where they are unknown. */
function cpuFields(cpus: CpuAllowance): { allowedCpus?: number[]; cpuQuota: number | null } {
  return { ...(cpus.allowedCpus === null ? {} : { allowedCpus: cpus.allowedCpus }), cpuQuota: cpus.cpuQuota };
}

/**
 * Reads everything the harness relies on through nvidia-smi, /proc and the Python probe, in two steps:
 * `system`, what nvidia-smi, /proc and the MPS binaries say (a fraction of a second; its python is a
 * placeholder, not probed), and `complete`, with the Python probe, which imports PyTorch (seconds) and
 * runs meanwhile.
 */
export function startFingerprint(
  runner: ProcessRunner,
  options: FingerprintOptions,
): { system: Promise<Fingerprint>; complete: Promise<Fingerprint> } {
  const env = options.env ?? process.env;
  const python = probePython(runner, options.python, options.probeScript);
  const system = (async (): Promise<Fingerprint> => {
    const smiPath = await runner.which('nvidia-smi');
    const [smi, mps] = await Promise.all([
      smiPath ? readSmi(runner) : Promise.resolve(noSmi('nvidia-smi not found on PATH')),
      readMps(runner, env),
    ]);
    return {
      collectedAt: options.clock.nowIso(),
      host: {
        platform: os.platform(),
        kernel: os.release(),
        arch: os.arch(),
        cpus: os.cpus().length,
        ...cpuFields(options.cpus ?? readCpuAllowance()),
        nodeVersion: process.version,
        hostname: os.hostname(),
      },
      nvidiaSmi: { path: smiPath, error: smi.error },
      driverVersion: smi.driverVersion,
      cudaVersion: smi.cudaVersion,
      gpus: smi.gpus,
      computeApps: smi.computeApps,
      mps,
      python: { status: 'error', executable: options.python, error: 'not probed yet' },
      simulated: smiPath !== null && isSimulator(smiPath),
    };
  })();
  const complete = Promise.all([system, python]).then(([fingerprint, probed]) => ({ ...fingerprint, python: probed }));
  complete.catch(() => undefined); // a caller that stops at a failed `system` has that error already
  return { system, complete };
}

type SmiPart = Pick<Fingerprint, 'driverVersion' | 'cudaVersion' | 'gpus' | 'computeApps'> & { error: string | null };

function noSmi(error: string): SmiPart {
  return { error, driverVersion: null, cudaVersion: null, gpus: [], computeApps: [] };
}

export async function smiText(
  runner: ProcessRunner,
  args: string[],
): Promise<{ ok: true; text: string } | { ok: false; error: string }> {
  const result = await runner.exec(['nvidia-smi', ...args], { timeoutMs: SMI_TIMEOUT_MS });
  const command = `nvidia-smi ${args.join(' ')}`;
  switch (result.status) {
    case 'exited':
      return result.exitCode === 0
        ? { ok: true, text: result.stdout }
        : {
            ok: false,
            error: `${command} exited with ${result.exitCode}: ${firstLine(result.stderr || result.stdout)}`,
          };
    case 'not-found':
      return { ok: false, error: 'nvidia-smi not found on PATH' };
    case 'timeout':
      return { ok: false, error: `${command} did not answer within ${SMI_TIMEOUT_MS / 1000} s` };
    case 'error':
      return { ok: false, error: `${command}: ${result.message}` };
  }
}

async function readSmi(runner: ProcessRunner): Promise<SmiPart> {
  const gpuQuery = await smiText(runner, [`--query-gpu=${queryArg(GPU_FIELDS)}`, '--format=csv,noheader,nounits']);
  if (!gpuQuery.ok) return noSmi(gpuQuery.error);
  const rows = parseCsvRows(gpuQuery.text, GPU_FIELDS);
  if (!rows.ok) return noSmi(`nvidia-smi --query-gpu printed an unreadable line: ${rows.error}`);
  const [list, q, lgip, lgipp, apps] = await Promise.all([
    smiText(runner, ['-L']),
    smiText(runner, ['-q', '-d', 'COMPUTE']),
    smiText(runner, ['mig', '-lgip']),
    smiText(runner, ['mig', '-lgipp']),
    smiText(runner, [`--query-compute-apps=${queryArg(COMPUTE_APP_FIELDS)}`, '--format=csv,noheader,nounits']),
  ]);
  const listed = list.ok ? parseGpuList(list.text) : [];
  const profiles = lgip.ok ? parseMigProfiles(lgip.text) : [];
  const placements = lgipp.ok ? parseMigPlacements(lgipp.text) : [];
  const versions = q.ok ? parseVersions(q.text) : { driverVersion: null, cudaVersion: null };
  const appRows = apps.ok ? parseCsvRows(apps.text, COMPUTE_APP_FIELDS) : null;
  const gpus: Gpu[] = rows.rows.map((row) => ({
    ...row,
    migDevices: listed.find((g) => g.index === row.index)?.migDevices ?? [],
    migProfiles: profiles.filter((p) => p.gpuIndex === row.index),
    migPlacements: placements.filter((p) => p.gpuIndex === row.index),
  }));
  return {
    error: null,
    driverVersion: versions.driverVersion ?? gpus[0]?.driverVersion ?? null,
    cudaVersion: versions.cudaVersion,
    gpus,
    computeApps: appRows?.ok ? appRows.rows : [],
  };
}

async function probePython(runner: ProcessRunner, python: string, script: string): Promise<PythonProbe> {
  const result = await runner.exec([python, script], { timeoutMs: 120_000 });
  if (result.status === 'not-found')
    return { status: 'error', executable: python, error: `${python} not found on PATH` };
  if (result.status !== 'exited')
    return { status: 'error', executable: python, error: `${python} ${script}: ${result.status}` };
  const line = result.stdout.split('\n').find((l) => l.startsWith('{'));
  if (result.exitCode !== 0 || !line) {
    return {
      status: 'error',
      executable: python,
      error: firstLine(result.stderr || result.stdout) || `exit ${result.exitCode}`,
    };
  }
  const parsed = PythonProbeSchema.safeParse({ ...(JSON.parse(line) as object), status: 'ok', executable: python });
  return parsed.success
    ? parsed.data
    : { status: 'error', executable: python, error: `unexpected probe output: ${line.slice(0, 200)}` };
}

async function readMps(runner: ProcessRunner, env: NodeJS.ProcessEnv): Promise<Fingerprint['mps']> {
  const defaultPipeDirectory = env.CUDA_MPS_PIPE_DIRECTORY ?? '/tmp/nvidia-mps';
  const [controlPath, serverPath, running] = await Promise.all([
    runner.which('nvidia-cuda-mps-control'),
    runner.which('nvidia-cuda-mps-server'),
    // The kernel cuts command names to 15 characters: both binaries show as "nvidia-cuda-mps".
    findProcesses('nvidia-cuda-mps'),
  ]);
  return {
    controlPath,
    serverPath,
    defaultPipeDirectory,
    defaultDaemonSocket: existsSync(path.join(defaultPipeDirectory, 'control')),
    runningPids: running.map((p) => p.pid),
  };
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.slice(0, 300) ?? '';
}
