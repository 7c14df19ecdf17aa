/**
 * Ratios per comparison, computed per round from paired trials (each treatment arm against the
 * baseline arm of the same round) over every complete round, and summarized by their median.
 */
import { max, mean, median, min } from 'simple-statistics';
import {
  ALONE_ARM,
  type ClientResult,
  type Comparison,
  fixedWorkStreams,
  type ModeName,
  measuresPlainAlone,
  SLICE_SOLO_ARM,
} from '../record/schema.js';
import { throughputPerS } from './measures.js';
import { isComplete, okTrial, type Round } from './rounds.js';

/** A ratio measured in each round; `value` is the median over rounds (null when no round was usable). */
export interface Metric {
  id: string;
  comparisonId: string;
  mode: ModeName;
  workload: string;
  name: string;
  /** What the number means, with its direction. */
  description: string;
  /** Headline metrics (each comparison's primary ratio) get verdicts and a CI target of their own. */
  headline: boolean;
  /** Which way is better: a speedup should be high, a slowdown low. */
  better: 'higher' | 'lower';
  /** The paired per-round values, one per complete round, in round order. */
  perRound: number[];
  /** The round index of each value of `perRound`. */
  rounds: number[];
  /**
   * Set for a ratio of two independent samples (two modes' rounds are not paired): value is
   * median(numerator) ÷ median(denominator), and its CI a bootstrap of that ratio.
   */
  parts: { numerator: number[]; denominator: number[] } | null;
  value: number | null;
}

const HIGHER_IS_BETTER = /speedup|gain|aggregate-throughput/;

/** The one ratio of a cross-GPU check: a client's throughput with the other GPUs idle ÷ loaded. */
export const CROSS_GPU_METRIC = 'cross-gpu-slowdown';

function metric(
  c: Comparison,
  name: string,
  description: string,
  headline: boolean,
  values: Array<{ round: number; value: number }>,
): Metric {
  const perRound = values.map((v) => v.value);
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
    rounds: values.map((v) => v.round),
    parts: null,
    value: perRound.length > 0 ? median(perRound) : null,
  };
}

/** The first client's GPU time of a fixed-work trial. */
function gpuMs(round: Round, arm: string): number {
  return okTrial(round, arm)?.clients[0]?.gpuMs ?? Number.NaN;
}

/** One value per round, dropping rounds where it is not a finite number (e.g. a zero GPU time). */
function perRound<R extends { index: number }>(
  rounds: readonly R[],
  value: (r: R) => number,
): Array<{ round: number; value: number }> {
  return rounds.flatMap((r) => {
    const v = value(r);
    return Number.isFinite(v) ? [{ round: r.index, value: v }] : [];
  });
}

function streamsMetrics(c: Comparison, rounds: readonly Round[]): Metric[] {
  const prefixes = [...new Set(c.arms.map((a) => a.id.replace(/s\d+$/, '')))];
  const ks = [...new Set(c.arms.map((a) => Number(/s(\d+)$/.exec(a.id)?.[1])))].filter((k) => k > 1);
  const ratio = (num: string, den: string) => perRound(rounds, (r) => gpuMs(r, num) / gpuMs(r, den));
  const metrics: Metric[] = [];
  for (const prefix of prefixes) {
    const memory = prefix ? ` with ${prefix.slice(0, -1)} host memory` : '';
    for (const k of ks) {
      metrics.push(
        metric(
          c,
          `${prefix}speedup-k${k}`,
          `time of the work on 1 stream ÷ on ${k} streams${memory} (higher is better)`,
          prefix !== 'pageable-',
          ratio(`${prefix}s1`, `${prefix}s${k}`),
        ),
      );
    }
  }
  if (prefixes.includes('pinned-') && prefixes.includes('pageable-')) {
    for (const k of [1, ...ks]) {
      metrics.push(
        metric(
          c,
          `pinned-gain-s${k}`,
          `time with pageable ÷ with pinned host memory, ${k} stream(s) (higher: pinned helps)`,
          false,
          ratio(`pageable-s${k}`, `pinned-s${k}`),
        ),
      );
    }
  }
  return metrics;
}

/** A complete contention round: each client alone, and all of them at once (sorted by client). */
export interface ContentionRound {
  index: number;
  /** Each client alone in its mode: its own process (an MPS client, a tenant of the process, green's twin). */
  solo: ClientResult[];
  contended: ClientResult[];
  /** The plain process alone (ALONE_ARM), every mode's denominator; null in a run that did not measure it. */
  alone: ClientResult | null;
}

/**
 * Each complete round's solo and contended results. `slice`: the green mode's second baseline, tenant 0
 * alone in its own SM slice (SLICE_SOLO_ARM), in place of alone on the whole GPU.
 */
export function contentionRounds(c: Comparison, rounds: readonly Round[], slice = false): ContentionRound[] {
  // Identical clients share one solo arm (see comparisons.ts): client 0's solo stands for each of them.
  const soloArm = (i: number) =>
    slice ? SLICE_SOLO_ARM : c.arms.some((a) => a.id === `solo-c${i}`) ? `solo-c${i}` : 'solo-c0';
  return rounds.map((r) => {
    const contended = [...(okTrial(r, 'contended')?.clients ?? [])].sort((a, b) => a.client - b.client);
    const solo = c.clientEnv.map((_, i) => okTrial(r, soloArm(i))?.clients[0] as ClientResult);
    const alone = (!slice && okTrial(r, ALONE_ARM)?.clients[0]) || null;
    return { index: r.index, solo, contended, alone };
  });
}

/**
 * Each client's alone throughput, the denominator of its ratios: the plain process alone where the run
 * measured it (the same process for every mode), else the client's own alone in its mode.
 */
function aloneThroughputs(round: ContentionRound): number[] {
  const plain = round.alone;
  return round.solo.map((s) => throughputPerS(plain ?? s));
}

function slowdowns(round: ContentionRound): number[] {
  return aloneThroughputs(round).map((a, i) => a / throughputPerS(round.contended[i] as ClientResult));
}

function aggregate(round: ContentionRound): number {
  return round.contended.reduce((s, x) => s + throughputPerS(x), 0) / mean(aloneThroughputs(round));
}

/** The plain alone, as the ratios of a comparison that measured it say. */
const PLAIN_ALONE = 'a plain process alone on the whole GPU, the same process for every mode';

/**
 * What each mode's own solo arm is: one client (tenant) alone on the whole GPU, except under MIG, where a
 * process sees only its slice while MIG is on (no whole-GPU alone can be measured). The denominator of a
 * run measured before the plain alone (2026-12-06); since, what `solo-overhead` divides the plain alone by.
 */
const ALONE: Record<ModeName, string> = {
  streams: 'one tenant alone on the whole GPU',
  green: 'one tenant alone on the whole GPU, outside any green context',
  timeslice: 'one client alone on the whole GPU',
  mps: 'one client alone on the whole GPU, under MPS',
  mig: 'one client alone on its own MIG slice: with MIG on, no process can use the whole GPU',
};

/** A green comparison recorded before 2026-11-27: its solo-c0 was tenant 0 alone in its own slice, and no arm ran it on the whole GPU. */
export function legacyGreen(c: Comparison): boolean {
  return c.mode === 'green' && !c.arms.some((a) => a.id === SLICE_SOLO_ARM);
}

/** The green mode's in-slice ratios: what sharing costs within each tenant's slice, and what the slice costs a tenant alone. */
function inSliceMetrics(c: Comparison, rounds: readonly Round[], whole: readonly ContentionRound[]): Metric[] {
  const n = c.clientEnv.length;
  const slice = contentionRounds(c, rounds, true);
  return [
    metric(
      c,
      'in-slice-slowdown',
      `throughput alone in its own SM slice ÷ with ${n} tenants at once, mean over tenants: what sharing costs within a slice (not comparable with other modes' slowdown)`,
      false,
      perRound(slice, (r) => mean(slowdowns(r))),
    ),
    metric(
      c,
      'slice-cost',
      'throughput alone on the whole GPU ÷ alone in its own SM slice: what confining a lone tenant to its slice costs',
      false,
      perRound(whole, (r) => {
        const inSlice = slice.find((x) => x.index === r.index)?.solo[0];
        return inSlice ? throughputPerS(r.solo[0] as ClientResult) / throughputPerS(inSlice) : Number.NaN;
      }),
    ),
  ];
}

/**
 * A legacy green comparison (see legacyGreen): only its in-slice ratios can be computed. It has no
 * `slowdown` or `aggregate-throughput`, which mean "against one alone on the whole GPU" in every mode.
 */
function legacyGreenMetrics(c: Comparison, usable: readonly ContentionRound[]): Metric[] {
  const n = c.clientEnv.length;
  const each = (value: (r: ContentionRound) => number) => perRound(usable, value);
  const before = 'recorded before whole-GPU alone arms (2026-11-27): not comparable with other modes';
  return [
    metric(
      c,
      'in-slice-slowdown',
      `throughput alone in its own SM slice ÷ with ${n} tenants at once, mean over tenants (${before})`,
      true,
      each((r) => mean(slowdowns(r))),
    ),
    metric(
      c,
      'in-slice-aggregate-throughput',
      `sum of the ${n} tenants' contended throughput ÷ one tenant's alone in its own slice (${before})`,
      false,
      each(aggregate),
    ),
    fairness(c, usable, 'tenant'),
  ];
}

/** Largest ÷ smallest per-client (per-tenant) slowdown of each round. */
function fairness(c: Comparison, usable: readonly ContentionRound[], who: 'client' | 'tenant'): Metric {
  return metric(
    c,
    'fairness',
    `largest ÷ smallest per-${who} slowdown (1 = fair)`,
    false,
    perRound(usable, (r) => max(slowdowns(r)) / min(slowdowns(r))),
  );
}

function contentionMetrics(c: Comparison, rounds: readonly Round[]): Metric[] {
  const usable = contentionRounds(c, rounds);
  const n = c.clientEnv.length;
  const each = (value: (r: ContentionRound) => number) => perRound(usable, value);
  if (c.crossGpu) {
    // The loaders run on other GPUs: only client 0's ratio means anything.
    const { victimGpu, loadedGpus, loadersPerGpu } = c.crossGpu;
    const description = `GPU ${victimGpu}'s client alone ÷ while ${loadersPerGpu} time-sliced clients load GPU ${loadedGpus.join(', ')} (1 = the GPUs do not interfere)`;
    return [
      metric(
        c,
        CROSS_GPU_METRIC,
        description,
        true,
        each((r) => slowdowns(r)[0] as number),
      ),
    ];
  }
  if (legacyGreen(c)) return legacyGreenMetrics(c, usable);
  const plain = measuresPlainAlone(c);
  const alone = plain ? PLAIN_ALONE : ALONE[c.mode];
  const metrics = [
    metric(
      c,
      'slowdown',
      `throughput alone (${alone}) ÷ throughput with ${n} clients at once, mean over clients (1 = no cost)`,
      true,
      each((r) => mean(slowdowns(r))),
    ),
    fairness(c, usable, 'client'),
    metric(
      c,
      'aggregate-throughput',
      `sum of the ${n} clients' contended throughput ÷ one client's alone (${alone}): how many of it the GPU did at once`,
      false,
      each(aggregate),
    ),
    // Per-client ratios up to 4 clients; beyond, fairness says how far apart they are.
    ...Array.from({ length: n <= 4 ? n : 0 }, (_, i) =>
      metric(
        c,
        `slowdown-c${i}`,
        `client ${i}: throughput alone ÷ contended`,
        false,
        each((r) => slowdowns(r)[i] as number),
      ),
    ),
  ];
  if (plain)
    metrics.push(
      metric(
        c,
        'solo-overhead',
        `throughput of the plain process alone ÷ of ${ALONE[c.mode]}: what the mode costs a client with nobody beside it (1 = nothing; above 1: it costs)`,
        false,
        each((r) => throughputPerS(r.alone as ClientResult) / throughputPerS(r.solo[0] as ClientResult)),
      ),
    );
  if (c.mode === 'green') metrics.push(...inSliceMetrics(c, rounds, usable));
  const perRequest = usable.every((r) =>
    [...r.solo, ...r.contended, ...(r.alone ? [r.alone] : [])].every(
      (x) => x.chunkIterations === 1 && x.latency !== null,
    ),
  );
  if (usable.length > 0 && perRequest) {
    const p99 = (x: ClientResult) => x.latency?.p99Ms ?? Number.NaN;
    metrics.push(
      metric(
        c,
        'p99-latency-ratio',
        `p99 request latency contended ÷ alone${plain ? ` (${PLAIN_ALONE})` : ''}, mean over clients (1 = no cost)`,
        false,
        each((r) => mean(r.solo.map((s, i) => p99(r.contended[i] as ClientResult) / p99(r.alone ?? s)))),
      ),
    );
  }
  return metrics;
}

/** Every metric of a comparison from its complete rounds (every arm measured). */
export function comparisonMetrics(c: Comparison, rounds: readonly Round[]): Metric[] {
  const complete = rounds.filter((r) => isComplete(c, r));
  return fixedWorkStreams(c) ? streamsMetrics(c, complete) : contentionMetrics(c, complete);
}

/**
 * What MPS buys over time-slicing for one workload measured in both modes. The two comparisons'
 * rounds are not paired, so the gain is a ratio of medians; the others pair each MPS round with
 * the plain solo throughput (median over the timeslice rounds).
 */
export function crossModeMetrics(
  mps: Comparison,
  mpsRounds: readonly Round[],
  plain: Comparison,
  plainRounds: readonly Round[],
  mpsSlowdown: Metric,
  plainSlowdown: Metric,
): Metric[] {
  const metrics: Metric[] = [];
  const plainSolo = contentionRounds(
    plain,
    plainRounds.filter((r) => isComplete(plain, r)),
  );
  const mpsComplete = contentionRounds(
    mps,
    mpsRounds.filter((r) => isComplete(mps, r)),
  );
  // A comparison that measured the plain alone has its slowdown and solo-overhead against it already.
  if (plainSolo.length > 0 && mps.clientEnv.length === plain.clientEnv.length && !measuresPlainAlone(mps)) {
    const soloTput = mps.clientEnv.map((_, i) =>
      median(plainSolo.map((r) => throughputPerS(r.solo[i] as ClientResult))),
    );
    const vs = (pick: (r: ContentionRound) => ClientResult[]) =>
      mpsComplete.map((r) => ({
        round: r.index,
        value: mean(pick(r).map((x, i) => (soloTput[i] as number) / throughputPerS(x))),
      }));
    metrics.push(
      metric(
        mps,
        'slowdown-vs-plain-solo',
        'throughput alone without MPS (median of the timeslice rounds) ÷ contended under MPS',
        false,
        vs((r) => r.contended),
      ),
    );
    metrics.push(
      metric(
        mps,
        'solo-overhead',
        'throughput alone without MPS ÷ alone under MPS (above 1: MPS costs a lone client)',
        false,
        vs((r) => r.solo),
      ),
    );
  }
  if (plainSlowdown.value !== null && mpsSlowdown.value !== null) {
    metrics.push({
      ...metric(
        mps,
        'gain-over-timeslice',
        'time-slicing slowdown ÷ MPS slowdown, ratio of the medians (above 1: MPS shares better)',
        false,
        [],
      ),
      parts: { numerator: plainSlowdown.perRound, denominator: mpsSlowdown.perRound },
      value: plainSlowdown.value / mpsSlowdown.value,
    });
  }
  return metrics;
}

/** Every metric id a plan can produce (before anything ran): thresholds patterns are checked against these. */
export function possibleMetricIds(plan: readonly Comparison[]): string[] {
  const ids = plan.flatMap((c) => [
    ...comparisonMetrics(c, []).map((m) => m.id),
    ...(fixedWorkStreams(c) || c.crossGpu ? [] : [`${c.id}/p99-latency-ratio`]),
  ]);
  for (const mps of plan.filter((c) => c.mode === 'mps')) {
    if (
      plan.some(
        (c) =>
          c.mode === 'timeslice' &&
          c.workload.name === mps.workload.name &&
          c.clientEnv.length === mps.clientEnv.length,
      )
    ) {
      const vsPlain = measuresPlainAlone(mps) ? [] : ['slowdown-vs-plain-solo', 'solo-overhead'];
      ids.push(...[...vsPlain, 'gain-over-timeslice'].map((name) => `${mps.id}/${name}`));
    }
  }
  return ids;
}
