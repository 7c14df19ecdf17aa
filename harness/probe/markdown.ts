/** The probe report: what breaks, the claims ledger, and each probe's measurements. A pure function of the probe run. */
import { median } from 'simple-statistics';
import { mdText } from '../core/escape/markdown.js';
import { simulatedMarkdown } from '../record/simulated.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { type Claim, claimsLedger, latencySummary, perClientMib } from './claims.js';
import type { LatencySeries, ProbeOutcome, ProbeRun } from './record.js';

const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

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

function latencyRow(label: string, s: LatencySeries): string {
  const l = latencySummary(s);
  return `| ${label} | ${l.requests} | ${f(l.p50Ms, 3)} | ${f(l.p90Ms, 3)} | ${f(l.p99Ms, 3)} | ${f(l.maxMs, 3)} | ${l.lateRequests} | ${l.valid ? 'yes' : `no: over 1% sent over a ${s.periodMs} ms period late`} |`;
}

const LATENCY_HEAD = [
  '| run | requests | p50 ms | p90 ms | p99 ms | max ms | sent late | valid |',
  '|---|---|---|---|---|---|---|---|',
];

function section(o: ProbeOutcome): string[] {
  const title = `### ${mdText(o.probe)}${'mode' in o ? ` (${mdText(o.mode)}${o.probe === 'memory' && o.limitMib !== null ? `, limit ${o.limitMib} MiB` : ''})` : ''}`;
  if (o.status !== 'measured') return [title, '', `${mdText(o.status)}: ${mdText(o.reason)}`];
  switch (o.probe) {
    case 'memory':
      return [
        title,
        '',
        '| step | allocation | result |',
        '|---|---|---|',
        `| victim alone | ${o.victimBefore.mib} MiB | ${o.victimBefore.ok ? 'ok' : mdText(o.victimBefore.error ?? '')} |`,
        ...o.hogTries.map((t) => `| hog tries | ${t.mib} MiB | ${t.ok ? 'ok' : mdText(t.error ?? '')} |`),
        `| hog fills until OOM | ${(o.hogHeldMib / 1024).toFixed(2)} GiB held | ${mdText(o.hogError ?? 'no error')} |`,
        `| victim while the hog holds it | ${o.victimDuring.mib} MiB | ${o.victimDuring.ok ? 'ok' : mdText(o.victimDuring.error ?? '')}; its kernels ${o.victimKeptRunning ? 'kept running' : 'stopped'} |`,
        `| victim after the hog exits | ${o.victimAfter.mib} MiB | ${o.victimAfter.ok ? 'ok' : mdText(o.victimAfter.error ?? '')} |`,
      ];
    case 'sm-cap': {
      const full = o.points.find((p) => p.threadPercentage === 100)?.tflops ?? Number.NaN;
      return [
        title,
        '',
        '| active thread % | SMs seen | fp16 GEMM TFLOP/s | of 100% |',
        '|---|---|---|---|',
        ...o.points.map(
          (p) =>
            `| ${p.threadPercentage} | ${p.sms} of ${o.totalSms} | ${f(p.tflops, 0)} | ${f((100 * p.tflops) / full, 0)}% |`,
        ),
      ];
    }
    case 'fault':
      return [
        title,
        '',
        `Faulting client: ${mdText(o.faulterError ?? 'no error')}.`,
        '',
        '| client | survived | error |',
        '|---|---|---|',
        ...o.victims.map(
          (v, i) => `| other client ${i + 1} | ${v.survived ? 'yes' : 'no'} | ${mdText(v.error ?? '—')} |`,
        ),
        '',
        `MPS server status after the fault: ${mdText(o.serverAfterFault ?? '—')}; after recovery: ${mdText(o.serverAfterRecovery ?? '—')}. New client ${o.recovery.accepted ? `accepted ${f(o.recovery.afterMs / 1000, 2)} s after the fault, attempt ${o.recovery.attempts}` : `not accepted within ${f(o.recovery.afterMs / 1000, 1)} s: ${mdText(o.recovery.lastError ?? '')}`}.`,
      ];
    case 'fault-in-process':
      return [
        title,
        '',
        `One process, ${o.victims.length} tenants (a thread and a stream each); another thread of it made an illegal address: ${mdText(o.faulterError ?? 'no error')}.`,
        '',
        '| tenant | survived | error |',
        '|---|---|---|',
        ...o.victims.map((v, i) => `| tenant ${i + 1} | ${v.survived ? 'yes' : 'no'} | ${mdText(v.error ?? '—')} |`),
      ];
    case 'client-limit':
      return [
        title,
        '',
        `${o.accepted} clients accepted of ${o.tried} tried${o.firstError !== null ? `; client ${o.accepted + 1} failed: ${mdText(o.firstError)}` : ''}.`,
      ];
    case 'context':
      return [
        title,
        '',
        `${o.createMs.length} contexts, one process after another: cuInit median ${f(median(o.initMs), 0)} ms, then the context (primary context, made current, a first 1 MiB allocation) median ${f(median(o.createMs), 0)} ms (${o.createMs.map((v) => v.toFixed(0)).join(', ')} ms); free device memory ${o.freeMib.map((v) => v.toFixed(0)).join(' → ')} MiB of ${o.totalMib.toFixed(0)}: ${f(perClientMib(o.freeMib) ?? Number.NaN, 0)} MiB per added context.`,
      ];
    case 'slice':
      return [
        title,
        '',
        'A ~µs request every period, latency counted from its scheduled time, behind k busy co-tenants (1 ms spin kernels).',
        '',
        ...LATENCY_HEAD,
        ...o.points.map((p) => latencyRow(`${p.cotenants} co-tenant(s)`, p)),
      ];
    case 'default-stream':
      return [
        title,
        '',
        `Concurrency = kernel time done ÷ wall time, ${o.spinUs} µs kernels of 8 blocks; the stray op is a synchronous 4 KiB host-to-device copy on the default stream each round.`,
        '',
        '| streams | kind | stray copy | concurrency |',
        '|---|---|---|---|',
        ...o.runs.map(
          (r) => `| ${r.streams} | ${mdText(r.streamKind)} | ${r.strayCopy ? 'yes' : 'no'} | ${f(r.concurrency)}× |`,
        ),
      ];
    case 'priority':
      return [
        title,
        '',
        'Short requests beside a background stream that fills every SM (300 µs spin blocks, 3 kernels in flight), in one process: its Python thread feeding the background also delays the request generator ("sent late").',
        '',
        ...LATENCY_HEAD,
        ...o.runs.map((r) =>
          latencyRow(`${mdText(r.priority)} priority (background ${f(r.backgroundBlockUsPerS / 1e6, 1)} block-s/s)`, r),
        ),
      ];
    case 'green-context':
      return [
        title,
        '',
        `${o.criticalSms} of ${o.totalSms} SMs kept from the background: in one process with plain streams, with the background in a green context of ${o.totalSms - o.criticalSms} SMs, and as two MPS clients (background at ${Math.round((100 * (o.totalSms - o.criticalSms)) / o.totalSms)}% active threads). The in-process arms feed the background from a second Python thread, which also delays the request generator ("sent late"); the MPS arm has a process of its own for each.${o.mpsArm ? ` MPS arm: ${mdText(o.mpsArm)}.` : ''}`,
        '',
        ...LATENCY_HEAD,
        ...o.runs.map((r) =>
          latencyRow(
            `${mdText(r.arm)} (background ${r.backgroundSms} SMs, ${f(r.backgroundBlockUsPerS / 1e6, 1)} block-s/s)`,
            r,
          ),
        ),
      ];
  }
}
