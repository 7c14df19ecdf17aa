/** A client sweep in the report: one row per mode, workload and client count, and its charts. Pure functions of the analysis. */
import { mdText } from '../../core/escape/markdown.js';
import type { Analysis } from '../analysis/types.js';
import { fixedWorkStreams } from '../record/schema.js';

/** One point of a sweep: the ratios of one comparison, with their CI half-widths. */
export interface ScalingPoint {
  mode: string;
  workload: string;
  clients: number;
  slowdown: number | null;
  slowdownHalfWidth: number | null;
  aggregate: number | null;
  fairness: number | null;
  p99Ratio: number | null;
  memoryPerClientMiB: number | null;
  /** Memory by cause, per process, MiB (null where the workload did not report its reservation). */
  reservedPerProcessMiB: number | null;
  overheadPerProcessMiB: number | null;
  /** Host time per request alone and contended, µs (null where not reported). */
  stepHostSoloUs: number | null;
  stepHostContendedUs: number | null;
  rounds: number;
  /** Why the point measured nothing (a client that never became ready: the MPS client limit, memory). */
  failure: string | null;
}

export function scalingPoints(analysis: Analysis): ScalingPoint[] {
  return analysis.comparisons
    .filter((c) => !fixedWorkStreams(c.comparison))
    .map((c) => {
      const m = (name: string) => c.metrics.find((x) => x.metric.name === name);
      return {
        mode: c.comparison.mode,
        workload: c.comparison.workload.name,
        clients: c.comparison.clientEnv.length,
        slowdown: m('slowdown')?.stats.value ?? null,
        slowdownHalfWidth: m('slowdown')?.stats.halfWidth ?? null,
        aggregate: m('aggregate-throughput')?.stats.value ?? null,
        fairness: m('fairness')?.stats.value ?? null,
        p99Ratio: m('p99-latency-ratio')?.stats.value ?? null,
        memoryPerClientMiB: c.memoryPerClientMiB,
        reservedPerProcessMiB: c.memory?.reservedPerProcessMiB ?? null,
        overheadPerProcessMiB: c.memory?.overheadPerProcessMiB ?? null,
        stepHostSoloUs: c.stepHost.soloUs,
        stepHostContendedUs: c.stepHost.contendedUs,
        rounds: c.completeRounds,
        failure:
          c.stop?.reason === 'unsupported'
            ? `skipped: ${c.stop.detail ?? 'unsupported here'}`
            : c.completeRounds === 0
              ? (c.failure ?? 'no round completed')
              : null,
      };
    });
}

const x = (v: number | null, digits = 2) => (v === null ? '—' : `${v.toFixed(digits)}×`);

export function scalingTable(points: readonly ScalingPoint[]): string[] {
  // Columns of protocol 3 (memory by cause, host time per request) only where some point has them:
  // older runs' tables stay as they were.
  const causes = points.some((p) => p.reservedPerProcessMiB !== null);
  const host = points.some((p) => p.stepHostContendedUs !== null);
  const extraHead = `${causes ? ' reserved per process | overhead per process |' : ''}${host ? ' host µs per request, alone → contended |' : ''}`;
  const extraRule = `${causes ? '---|---|' : ''}${host ? '---|' : ''}`;
  const mib = (v: number | null) => (v === null ? '—' : `${v.toFixed(0)} MiB`);
  const us = (v: number | null) => (v === null ? '—' : v.toFixed(1));
  const extra = (p: ScalingPoint) =>
    `${causes ? ` ${mib(p.reservedPerProcessMiB)} | ${mib(p.overheadPerProcessMiB)} |` : ''}${host ? ` ${us(p.stepHostSoloUs)} → ${us(p.stepHostContendedUs)} |` : ''}`;
  const blank = `${causes ? ' | |' : ''}${host ? ' |' : ''}`;
  return [
    `| mode | workload | clients | per-client slowdown | aggregate throughput | fairness | p99 latency ratio | memory per client |${extraHead} rounds |`,
    `|---|---|---|---|---|---|---|---|${extraRule}---|`,
    ...points.map((p) =>
      p.failure !== null
        ? `| ${p.mode} | ${mdText(p.workload)} | ${p.clients} | not measured: ${mdText(p.failure.slice(0, 300))} | | | | |${blank} ${p.rounds} |`
        : `| ${p.mode} | ${mdText(p.workload)} | ${p.clients} | ${x(p.slowdown)}${p.slowdownHalfWidth !== null ? ` ±${(p.slowdownHalfWidth * 100).toFixed(1)}%` : ''} | ${x(p.aggregate)} | ${x(p.fairness)} | ${x(p.p99Ratio)} | ${p.memoryPerClientMiB === null ? '—' : `${p.memoryPerClientMiB.toFixed(0)} MiB`} |${extra(p)} ${p.rounds} |`,
    ),
  ];
}
