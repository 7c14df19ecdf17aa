/** `gpushare doctor`: the fingerprint, shown to a person or as JSON, with what blocks a run. */
import path from 'node:path';
import { type ArgsOf, defineCommand } from '../core/command.js';
import type { AppDeps } from '../core/deps.js';
import { ExitCode } from '../core/errors.js';
import { WORKLOADS_DIR } from '../core/paths.js';
import { benchBlockers } from '../session/readiness.js';
import { collectFingerprint } from '../system/nvidia/fingerprint.js';
import type { Fingerprint } from '../system/nvidia/schema.js';
import { DEFAULT_PYTHON } from '../workload/registry.js';

const DOCTOR_FLAGS = {
  json: { type: 'boolean', describe: 'print the fingerprint as JSON' },
  python: { type: 'string', describe: 'Python interpreter to probe', defaultDescription: DEFAULT_PYTHON },
} as const;

/** `gpushare doctor`: flags, options, run. */
export const doctorCommand = defineCommand({ flags: DOCTOR_FLAGS, resolve: (args) => args, run: doctor });

async function doctor(args: ArgsOf<typeof DOCTOR_FLAGS>, deps: AppDeps): Promise<number> {
  const fingerprint = await collectFingerprint(deps.runner, {
    python: args.python ?? DEFAULT_PYTHON,
    probeScript: path.join(WORKLOADS_DIR, 'probe.py'),
    clock: deps.clock,
  });
  const blockers = benchBlockers(fingerprint, 0);
  if (args.json) deps.out(`${JSON.stringify({ ...fingerprint, ready: blockers.length === 0, blockers }, null, 2)}\n`);
  else deps.out(doctorText(fingerprint, blockers));
  return blockers.length === 0 ? ExitCode.ok : ExitCode.usage;
}

function doctorText(f: Fingerprint, blockers: string[]): string {
  const lines: string[] = [];
  const row = (label: string, text: string) => lines.push(`${label.padEnd(12)} ${text}`);
  row(
    'nvidia-smi',
    f.nvidiaSmi.error ?? `${f.nvidiaSmi.path}  driver ${f.driverVersion ?? '?'}  CUDA ${f.cudaVersion ?? '?'}`,
  );
  for (const g of f.gpus) {
    row(
      `GPU ${g.index}`,
      `${g.name}  ${g.uuid}  ${g.memoryTotalMiB} MiB  compute mode ${g.computeMode}  persistence ${g.persistenceMode}`,
    );
    row('', `utilization ${g.utilGpuPct ?? '?'}%, memory used ${g.memoryUsedMiB ?? '?'} MiB`);
    row(
      '',
      `MIG ${g.migModeCurrent ?? 'n/a'} (pending ${g.migModePending ?? 'n/a'}), ${g.migDevices.length} MIG devices${g.migDevices.map((d) => ` ${d.profile}:${d.uuid}`).join('')}`,
    );
    if (g.migProfiles.length > 0) {
      const starts = (id: number) => g.migPlacements.find((p) => p.profileId === id)?.starts.join(',') ?? '?';
      row(
        '',
        `MIG profiles: ${g.migProfiles.map((p) => `${p.name} (id ${p.profileId}, ${p.smCount} SMs, ${p.memoryGiB} GiB, ${p.instancesFree}/${p.instancesTotal} free, slots ${starts(p.profileId)})`).join('; ')}`,
      );
    }
  }
  row('MPS', `control ${f.mps.controlPath ?? 'not on PATH'}, server ${f.mps.serverPath ?? 'not on PATH'}`);
  row(
    '',
    f.mps.runningPids.length > 0 || f.mps.defaultDaemonSocket
      ? `a daemon not started by gpushare is running (PIDs ${f.mps.runningPids.join(', ') || '?'}, pipe ${f.mps.defaultPipeDirectory}); gpushare leaves it alone`
      : `no daemon running (pipe directory ${f.mps.defaultPipeDirectory})`,
  );
  row(
    'processes',
    f.computeApps.length > 0
      ? f.computeApps.map((a) => `${a.pid} ${a.name} ${a.usedMemoryMiB} MiB`).join('; ')
      : 'no other compute processes listed (some VMs hide them: check utilization above)',
  );
  const p = f.python;
  row(
    'python',
    p.status === 'error'
      ? `${p.executable}: ${p.error}`
      : `${p.executable} ${p.version}, torch ${p.torch ?? 'missing'} (CUDA ${p.torchCuda ?? '-'}), ${p.cudaAvailable ? `sees ${p.deviceName} with ${p.smCount} SMs` : 'no CUDA device'}, triton ${p.triton ?? 'missing'}`,
  );
  lines.push(
    blockers.length === 0 ? 'ready to bench' : `not ready to bench:\n${blockers.map((b) => `  - ${b}`).join('\n')}`,
  );
  return `${lines.join('\n')}\n`;
}
