/**
 * The calibration's cases and tallies, for calibrate-gate.ts: which runs are the candidate, its baselines
 * and its history in each scenario, every case gated through the gate's own function (`gradedChanges`) as
 * A/A and with each planted slowdown, and the tally per headline: spurious calls, planted slowdowns
 * caught, the smallest change caught in 95% of cases, and what the gate stated it would catch.
 */
import type { Analysis } from '../bench/analysis/types.js';
import { logToRelative, sourceText } from '../bench/gate/bands.js';
import { gradedChanges } from '../bench/gate/gate.js';
import type { Change } from '../bench/gate/verdicts.js';
import { POWER } from '../stats/power.js';

/** The planted slowdowns of the shared arm (0.05: 5% less work per second). */
export const PLANTED = [0.05, 0.1] as const;

/** One gating: the candidate run, its baseline runs and the runs its band is learned from (indices). */
export interface Case {
  candidate: number;
  baselines: number[];
  history: number[];
}

/** A set's runs analysed as recorded and with each planted slowdown (`planted[i]` for PLANTED[i]). */
export interface Analysed {
  analyses: Analysis[];
  planted: Analysis[][];
}

export interface Tally {
  better: 'higher' | 'lower';
  cases: number;
  spurious: number;
  /** Per planted slowdown (PLANTED's order): cases whose planted copy was called a regression. */
  caught: number[];
  /** Per case: how far (log scale) the ratio must move the worse way before it lies outside its band. */
  needed: number[];
  /** Per case: the smallest change the gate stated its band catches in 95% of runs (log scale). */
  stated: number[];
  /** Cases in which a change of the size the gate stated would have been caught. */
  statedCaught: number;
  bands: number[];
  sources: Set<string>;
  /** Cases whose planted copy's band differed from the A/A one's (should be none). */
  bandMoved: number;
  /** How often each run took part in an A/A case called changed (as the candidate, or the one baseline). */
  spuriousBy: Map<number, number>;
}

export interface ScenarioResult {
  tallies: Map<string, Tally>;
  /** Cases with any headline called changed, A/A. */
  withAny: number;
  cases: number;
}

/** One baseline run: every pair, the earlier run the baseline, no history (the default floors), as `gate <run> --baseline <run>`. */
export function pairCases(runs: number): Case[] {
  const cases: Case[] = [];
  for (let j = 0; j < runs; j++) for (let i = 0; i < j; i++) cases.push({ candidate: j, baselines: [i], history: [] });
  return cases;
}

/** `perRun` random sets of `size` other runs per candidate, the band learned from them, as `gate <run> --baseline <dir>`. */
export function setCases(runs: number, size: number, perRun: number, random: () => number): Case[] {
  const all = Array.from({ length: runs }, (_, i) => i);
  return all.flatMap((j) =>
    Array.from({ length: perRun }, () => {
      const others = all.filter((h) => h !== j);
      for (let x = others.length - 1; x > 0; x--) {
        const y = Math.floor(random() * (x + 1));
        [others[x], others[y]] = [others[y] as number, others[x] as number];
      }
      const chosen = others.slice(0, size);
      return { candidate: j, baselines: chosen, history: chosen };
    }),
  );
}

const called = (c: Change | undefined) => c?.status === 'regression' || c?.status === 'improvement';
/** The worse-direction log change: positive when the ratio moved the worse way. */
const worseLog = (c: Change) => (c.better === 'higher' ? -Math.log(c.change) : Math.log(c.change));

/** Gates every case as A/A and with each planted copy of its candidate; one tally per headline. */
export function runScenario(cases: readonly Case[], set: Analysed, noiseBand: number): ScenarioResult {
  const tallies = new Map<string, Tally>();
  let withAny = 0;
  for (const k of cases) {
    const baselines = k.baselines.map((i) => set.analyses[i] as Analysis);
    const history = k.history.map((i) => set.analyses[i] as Analysis);
    const gateOf = (a: Analysis) => gradedChanges(a, baselines, history, noiseBand);
    const aa = gateOf(set.analyses[k.candidate] as Analysis);
    const planted = set.planted.map((p) => new Map(gateOf(p[k.candidate] as Analysis).map((c) => [c.metricId, c])));
    if (aa.some(called)) withAny++;
    for (const c of aa) tally(tallies, c, k, planted);
  }
  return { tallies, withAny, cases: cases.length };
}

function tally(tallies: Map<string, Tally>, c: Change, k: Case, planted: ReadonlyArray<Map<string, Change>>): void {
  let t = tallies.get(c.metricId);
  if (!t) {
    t = {
      better: c.better,
      cases: 0,
      spurious: 0,
      caught: PLANTED.map(() => 0),
      needed: [],
      stated: [],
      statedCaught: 0,
      bands: [],
      sources: new Set(),
      bandMoved: 0,
      spuriousBy: new Map(),
    };
    tallies.set(c.metricId, t);
  }
  t.cases++;
  if (called(c)) {
    t.spurious++;
    // With one baseline either run of the pair may be the odd one.
    for (const i of k.baselines.length === 1 ? [k.candidate, ...k.baselines] : [k.candidate])
      t.spuriousBy.set(i, (t.spuriousBy.get(i) ?? 0) + 1);
  }
  for (const [i, p] of planted.entries()) {
    const slowed = p.get(c.metricId);
    if (slowed?.status === 'regression') t.caught[i] = (t.caught[i] ?? 0) + 1;
    if (c.band && (!slowed?.band || Math.abs(slowed.band.halfWidthLog - c.band.halfWidthLog) > 1e-9)) t.bandMoved++;
  }
  if (!c.band) {
    t.needed.push(Number.POSITIVE_INFINITY);
    return;
  }
  const needed = c.band.halfWidthLog - worseLog(c);
  t.needed.push(needed);
  t.stated.push(c.band.caughtLog);
  // A planted change moves the change by exactly its size and leaves the band (bandMoved): one of the
  // size the gate stated is caught when it exceeds this case's margin.
  if (c.band.caughtLog > needed) t.statedCaught++;
  t.bands.push(c.band.halfWidthLog);
  t.sources.add(sourceText(c.band.source));
}

const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
const quantile = (xs: readonly number[], q: number) => {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? Number.NaN;
};
const median = (xs: readonly number[]) => sorted(xs)[xs.length >> 1] ?? Number.NaN;

/** What a headline's tally says: rates, and the smallest change caught in 95% of cases, measured and as the gate stated it. */
export function summary(t: Tally) {
  return {
    spuriousRate: t.spurious / t.cases,
    caughtRates: t.caught.map((n) => n / t.cases),
    /** A change of d (log) the worse way is caught in a case when d exceeds its `needed`: the 95th percentile. */
    measuredLog: quantile(t.needed, POWER),
    statedLog: median(t.stated),
    statedCaughtRate: t.statedCaught / t.stated.length,
    band: logToRelative(median(t.bands)),
  };
}
