/** A client sweep in the report: one row per mode, workload and client count, and its charts. Pure functions of the analysis. */
import { mdText } from '../../core/escape/markdown.js';
import type { Analysis } from '../analysis/types.js';

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
  rounds: number;
  /** Why the point measured nothing (a client that never became ready: the MPS client limit, memory). */
  failure: string | null;
}

export function scalingPoints(analysis: Analysis): ScalingPoint[] {
  return analysis.comparisons
    .filter((c) => c.comparison.mode !== 'streams')
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
        rounds: c.completeRounds,
        failure: c.completeRounds === 0 ? (c.failure ?? 'no round completed') : null,
      };
    });
}

const x = (v: number | null, digits = 2) => (v === null ? '—' : `${v.toFixed(digits)}×`);

export function scalingTable(points: readonly ScalingPoint[]): string[] {
  return [
    '| mode | workload | clients | per-client slowdown | aggregate throughput | fairness | p99 latency ratio | memory per client | rounds |',
    '|---|---|---|---|---|---|---|---|---|',
    ...points.map((p) =>
      p.failure !== null
        ? `| ${p.mode} | ${mdText(p.workload)} | ${p.clients} | not measured: ${mdText(p.failure.slice(0, 300))} | | | | | 0 |`
        : `| ${p.mode} | ${mdText(p.workload)} | ${p.clients} | ${x(p.slowdown)}${p.slowdownHalfWidth !== null ? ` ±${(p.slowdownHalfWidth * 100).toFixed(1)}%` : ''} | ${x(p.aggregate)} | ${x(p.fairness)} | ${x(p.p99Ratio)} | ${p.memoryPerClientMiB === null ? '—' : `${p.memoryPerClientMiB.toFixed(0)} MiB`} | ${p.rounds} |`,
    ),
  ];
}
