/**
 * The analysis of a fleet: many runs, each already analysed by `analyze`, grouped so that like is
 * compared with like (one GPU model, the same settings), each headline ratio's distribution across
 * the group's nodes, the outlier rule, and every node's checks: contamination, throttling, software
 * that differs from its group's majority, incomplete runs and the run's own verdicts. A pure function
 * of the runs and their analyses: the markdown, JUnit, console text and JSON read this, never a run.
 */
import { median } from 'simple-statistics';
import type { Analysis, MetricAnalysis, Verdict } from '../../bench/analysis/types.js';
import type { Run } from '../../bench/record/schema.js';
import { shortList } from '../../core/wrap.js';
import {
  classes,
  commonSoftware,
  comparisonIds,
  gpuKey,
  gpuOf,
  majority,
  modelOf,
  planDifferences,
  reword,
  settingsText,
  softwareDifferences,
  softwareOf,
} from './differences.js';
import {
  type Band,
  FLEET_FLOOR,
  FLEET_K,
  MIN_RUNS_FOR_OUTLIERS,
  nodeFlags,
  OUTLIER_RULE,
  type OutlierSide,
  outlierSide,
  robustBand,
  untestedReason,
} from './verdicts.js';

/**
 * How two runs differ, passed in: the gate's fingerprintMismatches (GPU model, driver, MIG mode,
 * compute mode) and settingMismatches (window, clients, CPU pinning, MPS limits, each shared
 * comparison's workload). Each returns lines "<field>: <before's> before vs <now's> now".
 */
export interface FleetRules {
  machineDifferences(now: Run, before: Run): string[];
  settingDifferences(now: Run, before: Run): string[];
}

/** One bench run found under the fleet directory, analysed. */
export interface FleetMember {
  /** The run directory relative to the fleet directory (e.g. "node-a/gpu0"). */
  path: string;
  /** The host's name: the fingerprint's, else one a host.json above the run names; null when neither does. */
  host: string | null;
  run: Run;
  analysis: Analysis;
}

/** Something under the fleet directory that is not compared: a probe or capacity record, an unreadable or superseded run. */
export interface NotCompared {
  path: string;
  reason: string;
  /** An unreadable run.json fails the fleet; a probe or capacity record does not. */
  fails: boolean;
}

/** One ratio of one node, with the run's own verdict. */
export interface NodeRatio {
  metricId: string;
  better: 'higher' | 'lower';
  /** Median over the run's rounds, ×. */
  value: number | null;
  ci: [number, number] | null;
  /** CI half-width as a fraction of the value. */
  halfWidth: number | null;
  rounds: number;
  /** The run's verdict (analyze's): pass, fail, inconclusive, invalid or none. */
  verdict: Verdict;
  threshold: string | null;
  reasons: string[];
  /** Outside its group's band (only in groups that test outliers). */
  outlier: OutlierSide;
  /** "worse" or "better" than the group, by the ratio's direction; null when not an outlier. */
  direction: 'worse' | 'better' | null;
}

/** Why a node fails, other than an outlier ratio. */
export interface NodeFlag {
  kind: 'contaminated' | 'throttled' | 'fingerprint' | 'settings' | 'incomplete' | 'invalid' | 'fail';
  text: string;
}

/** The software a run measured with (null: not recorded, or in a group's summary, not agreed on). */
export interface Software {
  driver: string | null;
  cuda: string | null;
  torch: string | null;
  gpushare: string | null;
  computeMode: string | null;
  mig: string | null;
}

/** One node: one run on one GPU. */
export interface FleetNode {
  /** The run's directory under the fleet directory (a fleet job's <node>/gpu<i>): unique. */
  name: string;
  path: string;
  /** The host's name as the run recorded it (fingerprint) or a host.json above it names it; null when neither does. */
  host: string | null;
  runId: string;
  runStatus: Run['status'];
  gpuIndex: number;
  gpuUuid: string | null;
  gpuName: string;
  software: Software;
  /** The id of its group. */
  group: string;
  ratios: NodeRatio[];
  flags: NodeFlag[];
  /** Metric ids of its outlier ratios. */
  outliers: string[];
  /** No outlier ratio and no flag. */
  pass: boolean;
  /**
   * A measurement of its own, not a node of a fleet: no other run has its settings, and its GPU model's
   * runs share none most of them ran (a directory of experiments). Listed with its checks; it decides nothing.
   */
  apart: boolean;
}

/** One node's value of a ratio in the distribution. */
export interface RatioPoint {
  node: string;
  value: number;
  ci: [number, number] | null;
  outlier: OutlierSide;
}

/** A ratio across a group's nodes. */
export interface RatioDistribution {
  metricId: string;
  better: 'higher' | 'lower';
  /** Nodes with a value. */
  n: number;
  median: number;
  min: number;
  max: number;
  /** (max − min) ÷ median: how far apart the nodes are, a fraction. */
  spread: number;
  /** Null when the group does not test outliers (fewer than MIN_RUNS_FOR_OUTLIERS runs). */
  band: Band | null;
  points: RatioPoint[];
}

/** Runs on one GPU model with the same settings: the only runs compared with each other. */
export interface FleetGroup {
  id: string;
  gpuModel: string;
  /** The settings in words: clients, window, pinning, MPS limits, comparisons. */
  settings: string;
  nodes: string[];
  /** Distinct GPUs (by UUID) among its runs. */
  gpus: number;
  /** The software most of its GPUs ran; a field is null where no value has a majority. */
  software: Software;
  /** Why outliers are not tested in it, or null when they are. */
  untested: string | null;
  /** Set when the group is a single run: it is set aside, with why no other run compares. */
  setAside: string | null;
  ratios: RatioDistribution[];
}

export interface FleetAnalysis {
  rule: { k: number; floor: number; minRuns: number; text: string };
  groups: FleetGroup[];
  nodes: FleetNode[];
  notCompared: NotCompared[];
  gpuModels: string[];
  /** Distinct GPUs (by UUID) among all runs. */
  gpus: number;
  /** Nodes with at least one outlier ratio. */
  outlierNodes: string[];
  /** Nodes that fail for any reason (outliers included). */
  failingNodes: string[];
  /** No node fails and every run could be read. */
  pass: boolean;
}

function nodeRatio(v: MetricAnalysis): NodeRatio {
  return {
    metricId: v.metric.id,
    better: v.metric.better,
    value: v.stats.value,
    ci: v.stats.ci,
    halfWidth: v.stats.halfWidth,
    rounds: v.stats.n,
    verdict: v.verdict,
    threshold: v.threshold?.text ?? null,
    reasons: v.reasons,
    outlier: null,
    direction: null,
  };
}

/**
 * Runs that another run replaced: an unfinished run of a GPU (by UUID) with a complete run of the same
 * GPU made after it, as a fleet job's retry after a pod was evicted leaves them.
 */
function superseded(members: readonly FleetMember[]): Map<FleetMember, FleetMember> {
  const out = new Map<FleetMember, FleetMember>();
  for (const m of members.filter((x) => x.run.status !== 'complete')) {
    const uuid = gpuOf(m.run)?.uuid;
    const later = members.find(
      (x) =>
        x !== m &&
        x.run.status === 'complete' &&
        uuid &&
        gpuOf(x.run)?.uuid === uuid &&
        x.run.createdAt > m.run.createdAt,
    );
    if (later) out.set(m, later);
  }
  return out;
}

/** The fleet analysis: groups, distributions, outliers and node checks. `members` in the order the report lists them. */
export function analyzeFleet(
  all: readonly FleetMember[],
  unread: readonly NotCompared[],
  rules: FleetRules,
): FleetAnalysis {
  const replaced = superseded(all);
  const members = all.filter((m) => !replaced.has(m));
  const notCompared = [
    ...unread,
    ...[...replaced].map(([m, by]) => ({
      path: m.path,
      reason: `superseded: ${m.run.status}, and ${by.path} is a complete run of the same GPU (${gpuOf(m.run)?.uuid}) made after it`,
      fails: false,
    })),
  ];
  // The run's path names the node: a fleet job writes <node>/gpu<i>, a multi-GPU host <run>/gpu<i>.
  const nameOf = new Map(members.map((m) => [m, m.path || m.run.id]));
  const nodes = new Map<FleetMember, FleetNode>();
  for (const m of members) {
    const gpu = gpuOf(m.run);
    const flags = nodeFlags(m);
    nodes.set(m, {
      name: nameOf.get(m) as string,
      path: m.path,
      host: m.host,
      runId: m.run.id,
      runStatus: m.run.status,
      gpuIndex: m.run.config.gpuIndex,
      gpuUuid: gpu?.uuid ?? null,
      gpuName: modelOf(m),
      software: softwareOf(m.run),
      group: '',
      ratios: m.analysis.verdicts.map(nodeRatio),
      flags,
      outliers: [],
      pass: false,
      apart: false,
    });
  }

  const sameSettings = (a: FleetMember, b: FleetMember) =>
    comparisonIds(a.run).join() === comparisonIds(b.run).join() &&
    rules.settingDifferences(a.run, b.run).length === 0 &&
    rules.settingDifferences(b.run, a.run).length === 0;
  /** How `a`'s settings differ from `b`'s, `b` named as `where`. */
  const settingLines = (a: FleetMember, b: FleetMember, where: string) => [
    ...planDifferences(a.run, b.run, where),
    ...rules.settingDifferences(a.run, b.run).map((l) => reword(l, where)),
  ];
  const machineLines = (a: FleetMember, b: FleetMember, where: string) =>
    [...rules.machineDifferences(a.run, b.run), ...softwareDifferences(a.run, b.run)].map((l) => reword(l, where));

  const groups: FleetGroup[] = [];
  const models = [...new Set(members.map(modelOf))];
  for (const model of models) {
    const ofModel = members.filter((m) => modelOf(m) === model);
    const cohorts = classes(ofModel, sameSettings).sort((a, b) => b.length - a.length);
    // Settings are chosen per run: only where most of the model's GPUs share one is a run with others misconfigured.
    const usual = cohorts.length > 1 ? majority(cohorts) : null;
    if (usual) {
      const ref = usual[0] as FleetMember;
      for (const m of ofModel.filter((x) => !usual.includes(x))) {
        nodes.get(m)?.flags.push({
          kind: 'settings',
          text: `settings differ from those most ${model} GPUs ran with (as ${nameOf.get(ref)}): ${shortList(settingLines(m, ref, 'it'), 4)}`,
        });
      }
    }
    for (const cohort of cohorts) {
      groups.push(groupOf(`g${groups.length + 1}`, model, cohort, ofModel, nameOf, nodes, settingLines, machineLines));
      // Without settings most of the model's runs share, a run alike no other is an experiment of its own (the
      // only run of a model is still that model's node of the fleet).
      const apart = usual === null && ofModel.length > 1 && cohort.length === 1;
      if (apart) (nodes.get(cohort[0] as FleetMember) as FleetNode).apart = true;
    }
  }

  const list = [...nodes.values()];
  for (const node of list) {
    node.outliers = node.ratios.filter((r) => r.outlier !== null).map((r) => r.metricId);
    node.pass = node.outliers.length === 0 && node.flags.length === 0;
  }
  const failingNodes = list.filter((n) => !n.pass && !n.apart).map((n) => n.name);
  return {
    rule: { k: FLEET_K, floor: FLEET_FLOOR, minRuns: MIN_RUNS_FOR_OUTLIERS, text: OUTLIER_RULE },
    groups,
    nodes: list,
    notCompared,
    gpuModels: models,
    gpus: new Set(members.map(gpuKey)).size,
    outlierNodes: list.filter((n) => n.outliers.length > 0).map((n) => n.name),
    failingNodes,
    pass: failingNodes.length === 0 && notCompared.every((x) => !x.fails),
  };
}

/** One cohort as a group: software majority, ratio distributions and outliers, marked on its nodes. */
function groupOf(
  id: string,
  model: string,
  cohort: FleetMember[],
  ofModel: FleetMember[],
  nameOf: Map<FleetMember, string>,
  nodes: Map<FleetMember, FleetNode>,
  settingLines: (a: FleetMember, b: FleetMember, where: string) => string[],
  machineLines: (a: FleetMember, b: FleetMember, where: string) => string[],
): FleetGroup {
  const nodeOf = (m: FleetMember) => nodes.get(m) as FleetNode;
  for (const m of cohort) nodeOf(m).group = id;

  // Software: runs with the same settings are compared only if they measured with the same software.
  const kinds = classes(cohort, (a, b) => machineLines(a, b, '').length === 0);
  const usual = majority(kinds);
  if (kinds.length > 1) {
    for (const m of cohort.filter((x) => !usual?.includes(x))) {
      const ref = (usual ?? kinds.find((k) => !k.includes(m)))?.[0] as FleetMember;
      const where = usual ? `${nameOf.get(ref)} and most of the group` : `${nameOf.get(ref)}`;
      const lines = machineLines(m, ref, where);
      nodeOf(m).flags.push({
        kind: 'fingerprint',
        text: `${usual ? "differs from the group's majority" : "the group's GPUs ran different software and none has a majority"}: ${lines.join('; ')}`,
      });
    }
  }
  const software = usual ? softwareOf((usual[0] as FleetMember).run) : commonSoftware(cohort.map((m) => m.run));

  // GPUs, not runs: repeat runs of one GPU are not a majority against another GPU.
  const gpus = new Set(cohort.map(gpuKey)).size;
  const untested = untestedReason(cohort.length, gpus);
  let setAside: string | null = null;
  if (cohort.length === 1) {
    const m = cohort[0] as FleetMember;
    const others = ofModel.filter((x) => x !== m);
    const nearest = others
      .map((x) => ({ x, lines: settingLines(m, x, 'it') }))
      .sort((a, b) => a.lines.length - b.lines.length)[0];
    setAside = nearest
      ? `no other ${model} run has its settings; the nearest, ${nameOf.get(nearest.x)}, differs: ${nearest.lines.join('; ')}`
      : `the only run on ${model}`;
  }

  const ids = [...new Set(cohort.flatMap((m) => nodeOf(m).ratios.map((r) => r.metricId)))];
  const ratios = ids.flatMap((metricId): RatioDistribution[] => {
    const held = cohort.flatMap((m) => {
      const r = nodeOf(m).ratios.find((x) => x.metricId === metricId);
      return r && r.value !== null ? [{ m, r: r as NodeRatio & { value: number } }] : [];
    });
    if (held.length === 0) return [];
    const values = held.map((h) => h.r.value);
    const band = untested === null ? robustBand(values) : null;
    const points = held.map(({ m, r }) => {
      const side = band ? outlierSide(r.ci, band) : null;
      r.outlier = side;
      r.direction = side === null ? null : (side === 'above') === (r.better === 'higher') ? 'better' : 'worse';
      return { node: nameOf.get(m) as string, value: r.value, ci: r.ci, outlier: side };
    });
    const mid = median(values);
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    return [
      {
        metricId,
        better: held[0]?.r.better ?? 'lower',
        n: held.length,
        median: mid,
        min: lo,
        max: hi,
        spread: mid === 0 ? 0 : (hi - lo) / Math.abs(mid),
        band,
        points,
      },
    ];
  });

  return {
    id,
    gpuModel: model,
    settings: settingsText((cohort[0] as FleetMember).run),
    nodes: cohort.map((m) => nameOf.get(m) as string),
    gpus,
    software,
    untested,
    setAside,
    ratios,
  };
}
