/**
 * `npm run bench:self`: tinybench timings of the harness's own hot paths, so a slow parser or an
 * expensive bootstrap shows up as a number rather than as a slow run.
 */
import os from 'node:os';
import { Bench } from 'tinybench';
import { summarizeLatencies } from '../bench/analysis/measures.js';
import { metricStats } from '../stats/statistics.js';
import { parseCsvRow, SAMPLE_FIELDS } from '../system/nvidia/smi-csv.js';
import { parseWorkloadLine } from '../workload/protocol.js';

const sampleLine = '2026/11/21 07:13:38.063, 0, 100, 38, 1011, 548.20, 1980, 3201, 55, P0, 0x0000000000000000';
const latencies = Array.from({ length: 10_000 }, (_, i) => 0.05 + (i % 97) / 10_000);
const resultLine = JSON.stringify({
  event: 'result',
  trial: 'timeslice/infer#r0/contended',
  windowStartUs: 1,
  windowEndUs: 500_001,
  iterations: 10_000,
  gpuMs: 500,
  latenciesMs: latencies,
  chunkIterations: 1,
});
const rounds = Array.from({ length: 40 }, (_, i) => 2 + Math.sin(i) / 50);

const bench = new Bench({ time: 500 });
bench
  .add('parse one nvidia-smi sample line', () => {
    parseCsvRow(sampleLine, SAMPLE_FIELDS);
  })
  .add('parse a result line with 10,000 latencies', () => {
    parseWorkloadLine(resultLine);
  })
  .add('summarize 10,000 latencies', () => {
    summarizeLatencies(latencies);
  })
  .add('statistics of a 40-round metric (order-statistic CI)', () => {
    metricStats({ id: 'timeslice/gemm/slowdown', perRound: rounds });
  })
  .add('statistics of a ratio of two 40-round medians (10,000 bootstrap resamples)', () => {
    metricStats({
      id: 'mps/gemm/gain-over-timeslice',
      perRound: [],
      parts: { numerator: rounds, denominator: rounds },
      value: 1,
    });
  });

await bench.run();
console.log(
  `gpushare bench:self on ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}`,
);
console.table(bench.table());
