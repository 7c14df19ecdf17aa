/**
 * A fleet search's answer per mode (`capacity --serve --fleet`): each step's row (size, each kind's
 * count, the rate sent and its check against the generator's ceiling, the worst, hot and cold servers'
 * attainment, the verdict, an early stop), and the largest fleet at the SLO with its interval.
 * `largestFleet` is the answer alone, for plan.
 */
import type { Ceiling } from '../analysis.js';
import type { ServeRun } from '../record.js';
import { fleetCeiling, hotServers, totalsCheck } from './fleet-analysis.js';
import type { FleetSearchMode, FleetStep } from './fleet-capacity-record.js';
import { countedSteps, type LargestFleet, largestOf, stepAttainments } from './fleet-search.js';

export interface FleetStepRow {
  servers: number;
  why: FleetStep['why'];
  counts: FleetStep['counts'];
  ratePerS: number;
  /** The fleet's requests sent per second, mean over the kept windows; null without one. */
  sentPerS: number | null;
  /** The sent rate against the generator's ceiling: over, within, or unverified (no ceiling, or no window). */
  ceiling: 'within' | 'over' | 'unverified';
  /** The lowest attainment of all servers, of the hot ones, of the cold tail (over the step's windows, an unclear step's first measurement pooled in). */
  worst: number | null;
  hot: number | null;
  cold: number | null;
  verdict: FleetStep['verdict'];
  earlyStop: string | null;
  started: number;
  stopped: number;
  kept: number;
}

export interface FleetAnswer extends LargestFleet {
  mode: string;
  /** A step at the answer's size sent over the generator's ceiling (or had none to check by): not a measured capacity. */
  unverified: boolean;
}

export interface FleetCapacityMode {
  mode: string;
  status: string;
  reason: string | null;
  top: FleetSearchMode['top'];
  steps: FleetStepRow[];
  answer: FleetAnswer;
}

export interface FleetCapacityAnalysis {
  ceiling: Ceiling;
  modes: FleetCapacityMode[];
}

const mean = (values: readonly number[]) =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
const least = (values: ReadonlyArray<number | null>) => {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : Math.min(...known);
};

function stepRow(step: FleetStep, steps: readonly FleetStep[], ceiling: Ceiling): FleetStepRow {
  const windows = [...(step.again === null ? [] : (steps[step.again]?.windows ?? [])), ...step.windows];
  const servers = step.fleet.map((x, i) => ({ index: i + 1, ratePerS: x.ratePerS }));
  const hot = new Set(hotServers(servers));
  const got = stepAttainments(servers, windows).map((a, i) => ({ hot: hot.has(i + 1), attainment: a.attainment }));
  const sentPerS = mean(step.totals.map((t) => t.sentPerS));
  const check =
    sentPerS === null
      ? 'unverified'
      : totalsCheck(
          {
            sentPerS,
            completedPerS: mean(step.totals.map((t) => t.completedPerS)) ?? 0,
            outputTokensPerS: mean(step.totals.map((t) => t.outputTokensPerS)) ?? 0,
          },
          ceiling,
        );
  return {
    servers: step.servers,
    why: step.why,
    counts: step.counts,
    ratePerS: step.ratePerS,
    sentPerS,
    ceiling: check,
    worst: least(got.map((x) => x.attainment)),
    hot: least(got.filter((x) => x.hot).map((x) => x.attainment)),
    cold: least(got.filter((x) => !x.hot).map((x) => x.attainment)),
    verdict: step.verdict,
    earlyStop: step.earlyStop,
    started: step.started,
    stopped: step.stopped,
    kept: step.kept,
  };
}

function answerOf(m: FleetSearchMode, rows: readonly FleetStepRow[]): FleetAnswer {
  const largest = largestOf(m.steps, m.top);
  const counted = new Set(countedSteps(m.steps));
  const at = rows.filter((r, i) => r.servers === largest.servers && counted.has(m.steps[i] as FleetStep));
  return { mode: m.mode, ...largest, unverified: at.some((r) => r.ceiling !== 'within') };
}

export function analyzeFleetCapacity(run: ServeRun): FleetCapacityAnalysis | null {
  const search = run.fleet?.search;
  if (search === undefined) return null;
  const ceiling = fleetCeiling(run);
  const modes = run.groups.map((g): FleetCapacityMode => {
    const m = search.modes.find((x) => x.mode === g.mode) ?? {
      mode: g.mode,
      top: { servers: 0, limitedBy: 'size limit' as const, text: 'not searched' },
      steps: [],
    };
    const steps = m.steps.map((x) => stepRow(x, m.steps, ceiling));
    return { mode: g.mode, status: g.status, reason: g.reason, top: m.top, steps, answer: answerOf(m, steps) };
  });
  return { ceiling, modes };
}

/** The largest fleet at the SLO per mode, with its interval and what limited it (plan's input); [] for a run without a search. */
export function largestFleet(run: ServeRun): FleetAnswer[] {
  return analyzeFleetCapacity(run)?.modes.map((m) => m.answer) ?? [];
}
