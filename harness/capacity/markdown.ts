/** The capacity report: mode × clients → capacity at the p99 target, and every step of each search. A pure function of the run. */

import { mdCode, mdText } from '../core/escape/markdown.js';
import { simulatedMarkdown } from '../record/simulated.js';
import { timeAccountText } from '../session/time-account.js';
import { P99_CONFIDENCE } from '../stats/p99.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { DEFAULT_MIN_OVERLAP } from '../workload/result-validity.js';
import { workloadText } from '../workload/spec.js';
import { maxScheduleLagMs } from '../workload/verdicts.js';
import type { CapacityRun } from './record.js';
import { LATENCIES_A_WINDOW } from './step-window.js';
import { capacityTable, capacityText } from './table.js';

const ms = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(2));

/** Said of runs whose steps went through bench's result checks (those recorded before did not). */
const CHECKS = ` A step is also invalid when a client's window does not start at the release time or ends after its answer came, claims more than a GPU can do, or the clients' arrival windows overlap less than ${DEFAULT_MIN_OVERLAP * 100}% (bench's checks); where only invalid rates lie above the highest passing one, or none was tried, the capacity is a lower bound (≥).`;

const checked = (run: CapacityRun) => run.points.some((p) => p.steps.some((s) => s.invalid !== undefined));

/** Steps shortened for the latencies a client reports, said only where there were any (older runs read as they did). */
function shortened(run: CapacityRun): string {
  const steps = run.points.flatMap((p) => p.steps);
  const short = steps.filter((step) => step.windowS * 1000 < run.settings.windowMs).length;
  return short > 0
    ? `, shorter where a client would serve more requests than the ${LATENCIES_A_WINDOW} latencies it reports a window (${short} of ${steps.length} steps)`
    : '';
}

export function capacityMarkdown(run: CapacityRun, version: string): string {
  const gpu = gpuAt(run.fingerprint, run.gpuIndex);
  const s = run.settings;
  const rows = capacityTable(run);
  const lines = [
    ...simulatedMarkdown(run.fingerprint),
    `# gpushare capacity ${mdText(run.id)}`,
    '',
    `${mdText(gpu?.name ?? 'GPU ?')} (GPU ${run.gpuIndex}), driver ${mdText(run.fingerprint.driverVersion ?? '?')}, CUDA ${mdText(run.fingerprint.cudaVersion ?? '?')}; ${mdText(run.createdAt.slice(0, 10))}; status ${mdText(run.status)}; gpushare ${version}.`,
    '',
    `Target: p99 ≤ ${s.sloP99Ms} ms. Workload ${mdCode(workloadText(s.workload))}, one worker per client process serving ${s.load} arrivals made inside the process, the total rate split evenly over the clients; latency counts from each request's scheduled time. Each step is a window of at least ${s.windowMs / 1000} s, longer (up to 20 s) where needed for 640 requests at its rate${shortened(run)}; the latencies of every client are merged as one HdrHistogram. A step passes when "p99 ≤ target" holds at ${P99_CONFIDENCE * 100}% confidence (a one-sided binomial test, as MLPerf's early stopping: with no request over the target that takes 299 requests), and is invalid when a generator's p99 lag, issuing requests while its worker was idle, exceeds ${maxScheduleLagMs(s.sloP99Ms)} ms (a fifth of the target, at least 1 ms). The search doubles from ${s.startQps} req/s per client while steps pass, then bisects until the first failing rate is within ${(s.tolerance * 100).toFixed(0)}% of the highest passing one (at most ${s.maxSteps} steps).${checked(run) ? CHECKS : ''}`,
    '',
    ...(run.timeAccount ? [mdText(timeAccountText(run.timeAccount)), ''] : []),
    '## Capacity',
    '',
    '| mode | clients | capacity (req/s, total) | p50 / p99 / p99.9 ms at capacity | requests behind the p99 | over target | goodput (req/s) | fairness (max/min client p99) | steps |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${mdText(r.mode)} | ${r.clients} | ${mdText(capacityText(r, ''))} | ${r.at ? `${ms(r.at.p50Ms)} / ${ms(r.at.p99Ms)} / ${ms(r.at.p999Ms)}` : '—'} | ${r.at?.requests ?? '—'} | ${r.at?.overTarget ?? '—'} | ${r.at ? r.at.goodputQps.toFixed(0) : '—'} | ${r.at ? r.at.fairness.toFixed(2) : '—'} | ${r.steps.length} |`,
    ),
    '',
    '## Steps',
    '',
    '| mode | clients | rate (req/s) | requests | p50 ms | p99 ms | p99.9 ms | over target | generator lag p99 ms | verdict |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.flatMap((r) =>
      r.steps.map(
        (st) =>
          `| ${mdText(r.mode)} | ${r.clients} | ${st.totalQps.toFixed(0)} | ${st.requests} | ${ms(st.p50Ms)} | ${ms(st.p99Ms)} | ${ms(st.p999Ms)} | ${st.overTarget} | ${st.maxLagMs.toFixed(2)} | ${st.verdict}: ${mdText(st.reason)} |`,
      ),
    ),
    ...(run.warnings.length > 0 ? ['', '## Warnings', '', ...run.warnings.map((w) => `- ${mdText(w)}`)] : []),
    '',
  ];
  return lines.join('\n');
}
