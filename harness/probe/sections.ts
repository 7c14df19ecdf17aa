/** Each probe's measurements as a section of the probe report: its title, then what it measured or why it has nothing. */
import { median } from 'simple-statistics';
import { mdText } from '../core/escape/markdown.js';
import { perClientMib } from './claims.js';
import { latencySummary } from './latency.js';
import type { LatencySeries, ProbeOutcome } from './record.js';

const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

type Measured = Extract<ProbeOutcome, { status: 'measured' }>;

function latencyRow(label: string, s: LatencySeries): string {
  const l = latencySummary(s);
  return `| ${label} | ${l.requests} | ${f(l.p50Ms, 3)} | ${f(l.p90Ms, 3)} | ${f(l.p99Ms, 3)} | ${f(l.maxMs, 3)} | ${l.lateRequests} | ${l.valid ? 'yes' : `no: over 1% sent over a ${s.periodMs} ms period late`} |`;
}

const LATENCY_HEAD = [
  '| run | requests | p50 ms | p90 ms | p99 ms | max ms | sent late | valid |',
  '|---|---|---|---|---|---|---|---|',
];

export function section(o: ProbeOutcome): string[] {
  const title = `### ${mdText(o.probe)}${'mode' in o ? ` (${mdText(o.mode)}${o.probe === 'memory' && o.limitMib !== null ? `, limit ${o.limitMib} MiB` : ''})` : ''}`;
  if (o.status !== 'measured') return [title, '', `${mdText(o.status)}: ${mdText(o.reason)}`];
  return [title, '', ...(MEASUREMENTS[o.probe] as (measured: Measured) => string[])(o)];
}

/** What each probe measured, below its title. */
const MEASUREMENTS: { [P in Measured['probe']]: (o: Extract<Measured, { probe: P }>) => string[] } = {
  memory: (o) => [
    '| step | allocation | result |',
    '|---|---|---|',
    `| victim alone | ${o.victimBefore.mib} MiB | ${o.victimBefore.ok ? 'ok' : mdText(o.victimBefore.error ?? '')} |`,
    ...o.hogTries.map((t) => `| hog tries | ${t.mib} MiB | ${t.ok ? 'ok' : mdText(t.error ?? '')} |`),
    `| hog fills until OOM | ${(o.hogHeldMib / 1024).toFixed(2)} GiB held | ${mdText(o.hogError ?? 'no error')} |`,
    `| victim while the hog holds it | ${o.victimDuring.mib} MiB | ${o.victimDuring.ok ? 'ok' : mdText(o.victimDuring.error ?? '')}; its kernels ${o.victimKeptRunning ? 'kept running' : 'stopped'} |`,
    `| victim after the hog exits | ${o.victimAfter.mib} MiB | ${o.victimAfter.ok ? 'ok' : mdText(o.victimAfter.error ?? '')} |`,
  ],
  'sm-cap': (o) => {
    const full = o.points.find((p) => p.threadPercentage === 100)?.tflops ?? Number.NaN;
    return [
      '| active thread % | SMs seen | fp16 GEMM TFLOP/s | of 100% |',
      '|---|---|---|---|',
      ...o.points.map(
        (p) =>
          `| ${p.threadPercentage} | ${p.sms} of ${o.totalSms} | ${f(p.tflops, 0)} | ${f((100 * p.tflops) / full, 0)}% |`,
      ),
    ];
  },
  fault: (o) => [
    `Faulting client: ${mdText(o.faulterError ?? 'no error')}.`,
    '',
    '| client | survived | error |',
    '|---|---|---|',
    ...o.victims.map((v, i) => `| other client ${i + 1} | ${v.survived ? 'yes' : 'no'} | ${mdText(v.error ?? '—')} |`),
    '',
    `MPS server status after the fault: ${mdText(o.serverAfterFault ?? '—')}; after recovery: ${mdText(o.serverAfterRecovery ?? '—')}. New client ${o.recovery.accepted ? `accepted ${f(o.recovery.afterMs / 1000, 2)} s after the fault, attempt ${o.recovery.attempts}` : `not accepted within ${f(o.recovery.afterMs / 1000, 1)} s: ${mdText(o.recovery.lastError ?? '')}`}.`,
  ],
  'fault-in-process': (o) => [
    `One process, ${o.victims.length} tenants (a thread and a stream each); another thread of it made an illegal address: ${mdText(o.faulterError ?? 'no error')}.`,
    '',
    '| tenant | survived | error |',
    '|---|---|---|',
    ...o.victims.map((v, i) => `| tenant ${i + 1} | ${v.survived ? 'yes' : 'no'} | ${mdText(v.error ?? '—')} |`),
  ],
  'client-limit': (o) => [
    `${o.accepted} clients accepted of ${o.tried} tried${o.firstError !== null ? `; client ${o.accepted + 1} failed: ${mdText(o.firstError)}` : ''}.`,
  ],
  context: (o) => [
    `${o.createMs.length} contexts, one process after another: cuInit median ${f(median(o.initMs), 0)} ms, then the context (primary context, made current, a first 1 MiB allocation) median ${f(median(o.createMs), 0)} ms (${o.createMs.map((v) => v.toFixed(0)).join(', ')} ms); free device memory ${o.freeMib.map((v) => v.toFixed(0)).join(' → ')} MiB of ${o.totalMib.toFixed(0)}: ${f(perClientMib(o.freeMib) ?? Number.NaN, 0)} MiB per added context.`,
  ],
  slice: (o) => [
    'A ~µs request every period, latency counted from its scheduled time, behind k busy co-tenants (1 ms spin kernels).',
    '',
    ...LATENCY_HEAD,
    ...o.points.map((p) => latencyRow(`${p.cotenants} co-tenant(s)`, p)),
  ],
  'default-stream': (o) => [
    `Concurrency = kernel time done ÷ wall time, ${o.spinUs} µs kernels of 8 blocks; the stray op is a synchronous 4 KiB host-to-device copy on the default stream each round.`,
    '',
    '| streams | kind | stray copy | concurrency |',
    '|---|---|---|---|',
    ...o.runs.map(
      (r) => `| ${r.streams} | ${mdText(r.streamKind)} | ${r.strayCopy ? 'yes' : 'no'} | ${f(r.concurrency)}× |`,
    ),
  ],
  priority: (o) => [
    'Short requests beside a background stream that fills every SM (300 µs spin blocks, 3 kernels in flight), in one process: its Python thread feeding the background also delays the request generator ("sent late").',
    '',
    ...LATENCY_HEAD,
    ...o.runs.map((r) =>
      latencyRow(`${mdText(r.priority)} priority (background ${f(r.backgroundBlockUsPerS / 1e6, 1)} block-s/s)`, r),
    ),
  ],
  'green-context': (o) => [
    `${o.criticalSms} of ${o.totalSms} SMs kept from the background: in one process with plain streams, with the background in a green context of ${o.totalSms - o.criticalSms} SMs, and as two MPS clients (background at ${Math.round((100 * (o.totalSms - o.criticalSms)) / o.totalSms)}% active threads). The in-process arms feed the background from a second Python thread, which also delays the request generator ("sent late"); the MPS arm has a process of its own for each.${o.mpsArm ? ` MPS arm: ${mdText(o.mpsArm)}.` : ''}`,
    '',
    ...LATENCY_HEAD,
    ...o.runs.map((r) =>
      latencyRow(
        `${mdText(r.arm)} (background ${r.backgroundSms} SMs, ${f(r.backgroundBlockUsPerS / 1e6, 1)} block-s/s)`,
        r,
      ),
    ),
  ],
};
