/**
 * The history of many runs: runs grouped like with like (what the gate refuses to compare across —
 * GPU model, driver, MIG and compute mode, settings, protocol loop — and also the comparisons, the
 * release lead and the gpushare version, since a harness generation moves launch-bound headlines by
 * 1–1.5%), each group in order of creation, and for each headline ratio the runs where its series
 * changed (stats/change-points.ts), kept only at p below the level and at least the headline's
 * between-run floor. A pure function of the runs and their analyses: every output reads this.
 */
import type { MetricAnalysis } from '../../bench/analysis/types.js';
import { floorFor } from '../../bench/gate/bands.js';
import { measuredOtherwise } from '../../bench/gate/gate.js';
import { measuredLoop, type Run } from '../../bench/record/schema.js';
import { seedOf } from '../../stats/bootstrap.js';
import { type ChangePoint, findChangePoints, MIN_SEGMENT_RUNS } from '../../stats/change-points.js';
import { gpuAt } from '../../system/nvidia/schema.js';
import type { FleetMember, NotCompared } from '../report/analyze.js';
import { classes } from '../report/differences.js';

/** The fewest runs in a series before a change can be tested: MIN_SEGMENT_RUNS either side. */
export const MIN_RUNS_TO_TEST = 2 * MIN_SEGMENT_RUNS;

/** One run of a group, in the group's order. */
export interface HistoryRun {
  /** 1-based position in the group's order (by createdAt). */
  number: number;
  id: string;
  /** Where it lies under the directory read. */
  path: string;
  createdAt: string;
  gpuUuid: string | null;
}

/** A run's value of one headline: the median of its rounds and its within-run 95% CI. */
export interface SeriesPoint {
  /** The run's number in its group. */
  run: number;
  value: number;
  ci: [number, number] | null;
}

/** A change kept: where, how large, how sure. */
export interface HeadlineChange extends ChangePoint {
  /** The first run after the change: its number in the group and its id. */
  run: number;
  runId: string;
  /** Whether the change is good or bad news, by the ratio's direction. */
  direction: 'worse' | 'better';
}

/** A candidate the merge removed, with the run it would have named. */
export interface RemovedChange {
  run: number;
  runId: string;
  /** median after ÷ median before, when it was removed. */
  ratio: number;
  p: number;
  /** `p`: p not below the level; `floor`: smaller than the headline's floor. */
  failed: 'p' | 'floor';
}

/** One headline ratio over a group's runs. */
export interface HeadlineHistory {
  metricId: string;
  better: 'higher' | 'lower';
  /** The least change reported, relative (0.05 = 5%): the gate's between-run floor of this headline. */
  floor: number;
  points: SeriesPoint[];
  /** Runs of the group whose value is not a point of the series, and why. */
  leftOut: Array<{ run: number; runId: string; reason: string }>;
  /** False when the series has fewer than MIN_RUNS_TO_TEST points. */
  tested: boolean;
  changes: HeadlineChange[];
  removed: RemovedChange[];
}

/** Runs measured alike. */
export interface HistoryGroup {
  id: string;
  gpuModel: string;
  driver: string;
  protocolLoop: 1 | 2;
  releaseLeadMs: number;
  gpushare: string;
  /** The comparisons, windows and clients, in a few words. */
  settings: string;
  runs: HistoryRun[];
  headlines: HeadlineHistory[];
}

export interface HistoryAnalysis {
  /** A change is kept when its p is below this. */
  level: number;
  minSegmentRuns: number;
  groups: HistoryGroup[];
  /** Runs not in any series (unfinished), and records that are not bench runs or cannot be read. */
  notCompared: NotCompared[];
  /** How many changes were kept, over every group and headline. */
  changes: number;
  /** How many headline series had enough runs to test. */
  testedSeries: number;
}

/**
 * Why two runs are not one series: how they were measured as the gate compares it, and the comparisons,
 * release lead and gpushare version. A run's own validity (unfinished, contaminated) is judged per run.
 */
function historyDifferences(now: Run, before: Run): string[] {
  const ids = (run: Run) =>
    run.plan
      .map((c) => c.id)
      .sort()
      .join(', ');
  const differ = (what: string, old: string, current: string) =>
    old === current ? [] : [`${what}: ${old} before vs ${current} now`];
  return [
    ...measuredOtherwise(now, before),
    ...differ('comparisons', ids(before), ids(now)),
    ...differ('release lead', `${before.config.releaseLeadMs} ms`, `${now.config.releaseLeadMs} ms`),
    ...differ('gpushare', before.tool.version, now.tool.version),
  ];
}

const gpuOf = (run: Run) => gpuAt(run.fingerprint, run.config.gpuIndex);

/** In order of creation; runs made at the same instant by id, so the order never depends on the walk. */
function byCreation(a: FleetMember, b: FleetMember): number {
  const t = Date.parse(a.run.createdAt) - Date.parse(b.run.createdAt);
  if (t !== 0 && !Number.isNaN(t)) return t;
  return a.run.id < b.run.id ? -1 : a.run.id > b.run.id ? 1 : 0;
}

function settingsText(run: Run): string {
  const c = run.config;
  const clients = c.clientCounts ?? [c.clients];
  return `${run.plan.length} comparison(s), ${clients.join(', ')} client(s), ${c.windowMs} ms windows`;
}

/** Why a run's value of a headline is not a point of its series; null when it is one. */
function leftOutReason(v: MetricAnalysis | undefined): string | null {
  if (v === undefined) return 'the run has no such ratio';
  if (v.stats.value === null || !(v.stats.value > 0)) return 'not measured';
  if (v.verdict === 'invalid') return `invalid: ${v.reasons[0] ?? 'a validity check failed'}`;
  return null;
}

function headlineOf(
  metricId: string,
  members: readonly FleetMember[],
  runs: readonly HistoryRun[],
  level: number,
  seedText: string,
): HeadlineHistory {
  const points: SeriesPoint[] = [];
  const leftOut: HeadlineHistory['leftOut'] = [];
  const values = members.map((m) => m.analysis.verdicts.find((x) => x.metric.id === metricId));
  for (const [i, v] of values.entries()) {
    const run = runs[i] as HistoryRun;
    const reason = leftOutReason(v);
    if (reason === null && v) points.push({ run: run.number, value: v.stats.value as number, ci: v.stats.ci });
    else leftOut.push({ run: run.number, runId: run.id, reason: reason ?? '' });
  }
  const better = values.find((v) => v !== undefined)?.metric.better ?? 'lower';
  const floor = floorFor(metricId);
  const tested = points.length >= MIN_RUNS_TO_TEST;
  const search = tested
    ? findChangePoints(
        points.map((p) => p.value),
        { level, minLogMagnitude: Math.log1p(floor), minSize: MIN_SEGMENT_RUNS, seed: seedOf(seedText) },
      )
    : { changes: [], removed: [] };
  const runAt = (index: number) => runs[(points[index] as SeriesPoint).run - 1] as HistoryRun;
  return {
    metricId,
    better,
    floor,
    points,
    leftOut,
    tested,
    changes: search.changes.map((c) => ({
      ...c,
      run: runAt(c.index).number,
      runId: runAt(c.index).id,
      direction: c.ratio > 1 === (better === 'higher') ? 'better' : 'worse',
    })),
    removed: search.removed.map((r) => ({
      run: runAt(r.index).number,
      runId: runAt(r.index).id,
      ratio: r.ratio,
      p: r.p,
      failed: r.failed === 'p' ? 'p' : 'floor',
    })),
  };
}

/** One group from its runs, already in order of creation. */
function groupOf(id: string, members: readonly FleetMember[], level: number): HistoryGroup {
  const first = (members[0] as FleetMember).run;
  const runs = members.map(
    (m, i): HistoryRun => ({
      number: i + 1,
      id: m.run.id,
      path: m.path,
      createdAt: m.run.createdAt,
      gpuUuid: gpuOf(m.run)?.uuid ?? null,
    }),
  );
  const metricIds = [...new Set(members.flatMap((m) => m.analysis.verdicts.map((v) => v.metric.id)))];
  return {
    id,
    gpuModel: gpuOf(first)?.name ?? 'unknown GPU',
    driver: first.fingerprint.driverVersion ?? 'not recorded',
    protocolLoop: measuredLoop(first),
    releaseLeadMs: first.config.releaseLeadMs,
    gpushare: first.tool.version,
    settings: settingsText(first),
    runs,
    headlines: metricIds.map((metricId) => headlineOf(metricId, members, runs, level, `${first.id}/${metricId}`)),
  };
}

/** The history of `all` runs: groups of like runs, each headline's series and its changes. */
export function analyzeHistory(
  all: readonly FleetMember[],
  unread: readonly NotCompared[],
  level: number,
): HistoryAnalysis {
  const complete = all.filter((m) => m.run.status === 'complete');
  const unfinished = all
    .filter((m) => m.run.status !== 'complete')
    .map((m) => ({
      path: m.path,
      reason: `the run is ${m.run.status}, not complete: not a point of any series`,
      fails: false,
    }));
  const cohorts = classes(complete, (a, b) => historyDifferences(a.run, b.run).length === 0)
    .map((c) => [...c].sort(byCreation))
    .sort((a, b) => byCreation(a[0] as FleetMember, b[0] as FleetMember));
  const groups = cohorts.map((c, i) => groupOf(`g${i + 1}`, c, level));
  const headlines = groups.flatMap((g) => g.headlines);
  return {
    level,
    minSegmentRuns: MIN_SEGMENT_RUNS,
    groups,
    notCompared: [...unread, ...unfinished],
    changes: headlines.reduce((n, h) => n + h.changes.length, 0),
    testedSeries: headlines.filter((h) => h.tested).length,
  };
}

/**
 * `fleet history`'s exit code, for CI: 1 when any series changed; else 3 when no series had enough runs
 * to test (nothing was checked) or a run could not be read (a series may lack it); else 0.
 */
export function historyExitCode(history: HistoryAnalysis): 0 | 1 | 3 {
  if (history.changes > 0) return 1;
  return history.testedSeries === 0 || history.notCompared.some((x) => x.fails) ? 3 : 0;
}
