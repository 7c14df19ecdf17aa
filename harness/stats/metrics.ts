/**
 * Ratios per comparison, computed per round from paired trials (each treatment arm against the
 * baseline arm of the same round) and summarized by their median.
 */
import { max, mean, median, min } from 'simple-statistics';
import type { ClientResult, Comparison, ModeName, Run, Trial } from '../run/schema.js';
import { throughputPerS } from './measures.js';

/** A ratio measured in each round; `value` is the median over rounds (null when no round was usable). */
export interface Metric {
  id: string;
  comparisonId: string;
  mode: ModeName;
  workload: string;
  name: string;
  /** What the number means, with its direction. */
  description: string;
  /** Headline metrics (each comparison's primary ratio) get verdicts and drive adaptive rounds. */
  headline: boolean;
  /** Which way is better: a speedup should be high, a slowdown low. */
  better: 'higher' | 'lower';
  perRound: number[];
  value: number | null;
}

type OkTrial = Extract<Trial, { status: 'ok' }>;

function okTrials(trials: readonly Trial[], comparisonId: string): Map<string, OkTrial> {
  const byKey = new Map<string, OkTrial>();
  for (const t of trials) if (t.comparisonId === comparisonId && t.status === 'ok') byKey.set(`${t.round}/${t.arm}`, t);
  return byKey;
}

const HIGHER_IS_BETTER = /speedup|gain|aggregate-throughput/;

function metric(c: Comparison, name: string, description: string, headline: boolean, perRound: number[]): Metric {
  return {
    better: HIGHER_IS_BETTER.test(name) ? 'higher' : 'lower',
    id: `${c.id}/${name}`,
    comparisonId: c.id,
    mode: c.mode,
    workload: c.workload.name,
    name,
    description,
    headline,
    perRound,
    value: perRound.length > 0 ? median(perRound) : null,
  };
}

function rounds(c: Comparison): number[] {
  return Array.from({ length: c.rounds }, (_, r) => r);
}

/** The first client's GPU time of a fixed-work trial. */
function gpuMs(trial: OkTrial | undefined): number | null {
  const ms = trial?.clients[0]?.gpuMs;
  return ms !== undefined && ms > 0 ? ms : null;
}

function streamsMetrics(c: Comparison, ok: Map<string, OkTrial>): Metric[] {
  const prefixes = [...new Set(c.arms.map((a) => a.id.replace(/s\d+$/, '')))];
  const ks = [...new Set(c.arms.map((a) => Number(/s(\d+)$/.exec(a.id)?.[1])))].filter((k) => k > 1);
  const ratio = (r: number, num: string, den: string) => {
    const a = gpuMs(ok.get(`${r}/${num}`));
    const b = gpuMs(ok.get(`${r}/${den}`));
    return a !== null && b !== null ? a / b : null;
  };
  const perRound = (num: string, den: string) => rounds(c).flatMap((r) => ratio(r, num, den) ?? []);
  const metrics: Metric[] = [];
  for (const prefix of prefixes) {
    const memory = prefix ? ` with ${prefix.slice(0, -1)} host memory` : '';
    for (const k of ks) {
      metrics.push(
        metric(c, `${prefix}speedup-k${k}`, `time of the work on 1 stream ÷ on ${k} streams${memory} (higher is better)`, prefix !== 'pageable-', perRound(`${prefix}s1`, `${prefix}s${k}`)),
      );
    }
  }
  if (prefixes.includes('pinned-') && prefixes.includes('pageable-')) {
    for (const k of [1, ...ks]) {
      metrics.push(metric(c, `pinned-gain-s${k}`, `time with pageable ÷ with pinned host memory, ${k} stream(s) (higher: pinned helps)`, false, perRound(`pageable-s${k}`, `pinned-s${k}`)));
    }
  }
  return metrics;
}

interface ContentionRound {
  solo: ClientResult[];
  contended: ClientResult[];
}

function contentionRounds(c: Comparison, ok: Map<string, OkTrial>): ContentionRound[] {
  const clients = c.clientEnv.map((_, i) => i);
  return rounds(c).flatMap((r) => {
    const contended = ok.get(`${r}/contended`)?.clients;
    const solo = clients.map((i) => ok.get(`${r}/solo-c${i}`)?.clients[0]);
    if (!contended || contended.length !== clients.length || solo.some((s) => s === undefined)) return [];
    return [{ solo: solo as ClientResult[], contended: [...contended].sort((a, b) => a.client - b.client) }];
  });
}

function slowdowns(round: ContentionRound): number[] {
  return round.solo.map((s, i) => throughputPerS(s) / throughputPerS(round.contended[i] as ClientResult));
}

function contentionMetrics(c: Comparison, ok: Map<string, OkTrial>): Metric[] {
  const usable = contentionRounds(c, ok);
  const n = c.clientEnv.length;
  const metrics = [
    metric(c, 'slowdown', `throughput alone ÷ throughput with ${n} clients at once, mean over clients (1 = no cost)`, true, usable.map((r) => mean(slowdowns(r)))),
    metric(c, 'fairness', 'largest ÷ smallest per-client slowdown (1 = fair)', false, usable.map((r) => max(slowdowns(r)) / min(slowdowns(r)))),
    metric(c, 'aggregate-throughput', `sum of the ${n} clients' contended throughput ÷ mean solo throughput (how many GPUs' worth of work)`, false, usable.map((r) => r.contended.reduce((s, x) => s + throughputPerS(x), 0) / mean(r.solo.map(throughputPerS)))),
    ...Array.from({ length: n }, (_, i) => metric(c, `slowdown-c${i}`, `client ${i}: throughput alone ÷ contended`, false, usable.map((r) => slowdowns(r)[i] as number))),
  ];
  const perRequest = usable.filter((r) => [...r.solo, ...r.contended].every((x) => x.chunkIterations === 1 && x.latency !== null));
  if (perRequest.length > 0) {
    const p99 = (x: ClientResult) => x.latency?.p99Ms ?? Number.NaN;
    metrics.push(metric(c, 'p99-latency-ratio', 'p99 request latency contended ÷ alone, mean over clients (1 = no cost)', false, perRequest.map((r) => mean(r.solo.map((s, i) => p99(r.contended[i] as ClientResult) / p99(s))))));
  }
  return metrics;
}

/** Every metric of a comparison from the trials so far. */
export function comparisonMetrics(c: Comparison, trials: readonly Trial[]): Metric[] {
  const ok = okTrials(trials, c.id);
  return c.mode === 'streams' ? streamsMetrics(c, ok) : contentionMetrics(c, ok);
}

/** Every metric of a run, with what MPS buys over time-slicing where both modes measured a workload. */
export function runMetrics(run: Run): Metric[] {
  const metrics = run.plan.flatMap((c) => comparisonMetrics(c, run.trials));
  for (const mps of run.plan.filter((c) => c.mode === 'mps')) {
    const plain = run.plan.find((c) => c.mode === 'timeslice' && c.workload.name === mps.workload.name);
    if (!plain) continue;
    const plainSolo = contentionRounds(plain, okTrials(run.trials, plain.id));
    const mpsRounds = contentionRounds(mps, okTrials(run.trials, mps.id));
    if (plainSolo.length > 0) {
      const soloTput = mps.clientEnv.map((_, i) => median(plainSolo.map((r) => throughputPerS(r.solo[i] as ClientResult))));
      const vsPlain = mpsRounds.map((r) => mean(r.contended.map((x, i) => (soloTput[i] as number) / throughputPerS(x))));
      metrics.push(metric(mps, 'slowdown-vs-plain-solo', 'throughput alone without MPS (median of the timeslice rounds) ÷ contended under MPS', false, vsPlain));
      const soloOverhead = mpsRounds.map((r) => mean(r.solo.map((x, i) => (soloTput[i] as number) / throughputPerS(x))));
      metrics.push(metric(mps, 'solo-overhead', 'throughput alone without MPS ÷ alone under MPS (above 1: MPS costs a lone client)', false, soloOverhead));
    }
    const ts = metrics.find((m) => m.id === `${plain.id}/slowdown`)?.value ?? null;
    const ms = metrics.find((m) => m.id === `${mps.id}/slowdown`)?.value ?? null;
    if (ts !== null && ms !== null) {
      metrics.push({ ...metric(mps, 'gain-over-timeslice', 'time-slicing slowdown ÷ MPS slowdown, medians (above 1: MPS shares better)', false, []), value: ts / ms });
    }
  }
  return metrics;
}
