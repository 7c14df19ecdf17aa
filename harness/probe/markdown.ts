/** The probe report: what breaks, the claims ledger, and each probe's measurements. A pure function of the probe run. */
import { mdText } from '../core/escape/markdown.js';
import { simulatedMarkdown } from '../record/simulated.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { claimsLedger } from './claims.js';
import type { Claim } from './ledger.js';
import type { ProbeRun } from './record.js';
import { section } from './sections.js';

export function probeMarkdown(run: ProbeRun, version: string): string {
  const gpu = gpuAt(run.fingerprint, run.gpuIndex);
  const ledger = claimsLedger(run);
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare probe ${mdText(run.id)}`,
    '',
    `${mdText(gpu?.name ?? 'GPU ?')} (GPU ${run.gpuIndex}), driver ${mdText(run.fingerprint.driverVersion ?? '?')}, CUDA ${mdText(run.fingerprint.cudaVersion ?? '?')}, PyTorch ${mdText(run.fingerprint.python.status === 'ok' ? (run.fingerprint.python.torch ?? '?') : '?')}; ${mdText(run.createdAt.slice(0, 10))}; status ${mdText(run.status)}; gpushare ${version}.`,
    '',
    '## What breaks',
    '',
    ...whatBreaks(run, ledger),
    '',
    '## Claims ledger',
    '',
    'Each claim as its source makes it, whether it was so on this GPU, what this GPU showed, and the rule that decides.',
    '',
    '| claim | so here? | what this GPU showed | rule | source |',
    '|---|---|---|---|---|',
    ...ledger.map(
      (c) =>
        `| ${mdText(c.claim)} | **${FINDING[c.verdict]}** | ${mdText(c.measured)} | ${mdText(c.rule)} | ${mdText(c.source)} |`,
    ),
    '',
    '## Measurements',
    '',
    ...run.probes.flatMap((o) => [...section(o), '']),
    '## Clean-up',
    '',
    'Every probe stops its processes (stop command, then SIGKILL of the process group) and its MPS daemon (`quit`, then by PID); "left running" lists any PID still alive afterwards.',
    '',
    '| probe | mode | MPS daemon | left running |',
    '|---|---|---|---|',
    ...run.cleanup.map(
      (c) =>
        `| ${mdText(c.probe)} | ${mdText(c.mode)} | ${mdText(c.daemon ?? '—')} | ${c.leftPids.length > 0 ? c.leftPids.join(', ') : 'none'} |`,
    ),
    ...(run.warnings.length > 0 ? ['', '## Warnings', '', ...run.warnings.map((w) => `- ${mdText(w)}`)] : []),
    '',
  ];
  return lines.join('\n');
}

/** A verdict as a finding about the claim: "not so here" reads plainly where "does not hold" of a hazard was a double negative. */
const FINDING: Record<Claim['verdict'], string> = {
  holds: 'so here',
  'partly holds': 'partly so here',
  'does not hold': 'not so here',
  'not measured': 'not measured',
};

/** The claims that did not hold, and the hazards that did: what a team sharing this GPU must plan for. */
function whatBreaks(run: ProbeRun, ledger: Claim[]): string[] {
  const hazards = new Set([
    'mps-memory-isolation',
    'timeslice-memory-isolation',
    'mps-fault-reported-to-all',
    'timeslice-fault-isolation',
    'in-process-fault-domain',
    'mps-client-limit',
    'timeslice-10ms',
    'default-stream-trap',
  ]);
  const breaks = ledger.filter(
    (c) =>
      (hazards.has(c.id) && (c.verdict === 'holds' || c.verdict === 'partly holds')) ||
      (!hazards.has(c.id) && c.verdict === 'does not hold'),
  );
  if (run.probes.length === 0) return ['No probe ran.'];
  if (breaks.length === 0) return ['No claim that matters for sharing failed here, and no hazard showed.'];
  return breaks.map((c) => `- **${mdText(c.claim)}** — ${FINDING[c.verdict]}: ${mdText(c.measured)}.`);
}
