/**
 * The calibration's markdown, for calibrate-gate.ts: a set's introduction, each scenario's table, the goal
 * (with 10 or more baselines: at most 1% A/A and a 5% slowdown caught in 95%, on every headline, or why
 * not) and the floors beside what the set's runs give.
 */
import type { Analysis } from '../bench/analysis/types.js';
import { BETWEEN_RUN_LEVEL, floorFor, logToRelative, worseChange } from '../bench/gate/bands.js';
import type { Run } from '../bench/record/schema.js';
import { predictionHalfWidthLog, runSpread } from '../stats/between-runs.js';
import { normalQuantile, POWER } from '../stats/power.js';
import { gpuAt } from '../system/nvidia/schema.js';
import { PLANTED, type ScenarioResult, summary, type Tally } from './gate-calibration.js';

/** The A/A rate the goal allows, and the planted slowdown it must catch in POWER (95%) of cases. */
const SPURIOUS_TARGET = 0.01;
const GOAL_PLANTED = 0.05;

const pct = (x: number, digits = 1) => `${(x * 100).toFixed(digits)}%`;
/** A ratio's change as the gate prints it: signed, + where it rose. */
const signed = (x: number) => `${x >= 0 ? '+' : ''}${pct(x)}`;
const count = (n: number, of: number, digits = 1) => `${n} of ${of} (${pct(n / of, digits)})`;
const plantedText = (fraction: number) => `planted ${pct(fraction, 0)} slowdown`;

/** What the runs of a set share, and what the tables measure. */
export function setIntro(runs: readonly Run[], noiseBand: number): string {
  const first = runs[0] as Run;
  const dates = [...new Set(runs.map((r) => r.createdAt.slice(0, 10)))].join(', ');
  const gpus = new Set(runs.map((r) => gpuAt(r.fingerprint, r.config.gpuIndex)?.uuid)).size;
  return `${runs.length} default-suite runs (${gpuAt(first.fingerprint, first.config.gpuIndex)?.name}, ${gpus} GPUs, measured ${dates}); between-run band: ${pct(BETWEEN_RUN_LEVEL)} prediction interval; noise band ${pct(noiseBand, 0)} (the narrowest band). A/A: a run against others, nothing changed. Planted: the candidate's shared arm (contended clients, K-stream work) ${PLANTED.map((p) => pct(p, 0)).join(' or ')} slower, re-analysed by bench's analysis: a slowdown ratio rises ${PLANTED.map((p) => pct(1 / (1 - p) - 1)).join(' or ')}, a speedup falls ${PLANTED.map((p) => pct(p, 0)).join(' or ')}. A change caught is the ratio's, the worse way (+ for a slowdown, − for a speedup): measured, the change caught in 95% of the cases; stated, what the gate printed as "catches" (its median over the cases, and how often a change of that size, case by case, was caught: 95% when the statement holds).`;
}

/** Which runs the A/A calls of a headline came from, when it called more than the target. */
function spuriousRuns(t: Tally, runs: readonly Run[]): string {
  const top = [...t.spuriousBy].sort((a, b) => b[1] - a[1]).slice(0, 3);
  return top.map(([i, n]) => `\`${(runs[i] as Run).id}\` (${n})`).join(', ');
}

/** A scenario as a markdown table and its summary lines. */
export function scenarioTable(title: string, result: ScenarioResult, runs: readonly Run[]): string[] {
  const lines = [
    `#### ${title}`,
    '',
    `| headline | band used | band, median | A/A: called changed | ${PLANTED.map((p) => `${plantedText(p)} caught`).join(' | ')} | change caught in ${pct(POWER, 0)}: measured | stated, median | a change of the stated size caught |`,
    `|---|---|---|---|${PLANTED.map(() => '---|').join('')}---|---|---|`,
  ];
  let spurious = 0;
  let decisions = 0;
  let moved = 0;
  const odd: string[] = [];
  for (const [id, t] of result.tallies) {
    const s = summary(t);
    spurious += t.spurious;
    decisions += t.cases;
    moved += t.bandMoved;
    if (s.spuriousRate > SPURIOUS_TARGET) odd.push(`\`${id}\` ${pct(s.spuriousRate)}: ${spuriousRuns(t, runs)}`);
    const caught = t.caught.map((n) => count(n, t.cases));
    const measured = Number.isFinite(s.measuredLog) ? signed(worseChange(s.measuredLog, t.better)) : 'n/a';
    lines.push(
      `| \`${id}\` | ${[...t.sources].join(', ')} | ±${pct(s.band)} | ${count(t.spurious, t.cases, 2)} | ${caught.join(' | ')} | ${measured} | ${signed(worseChange(s.statedLog, t.better))} | ${pct(s.statedCaughtRate)} |`,
    );
  }
  lines.push(
    '',
    `All headlines: ${spurious} of ${decisions} A/A decisions called a change (${pct(spurious / decisions, 2)}); ${count(result.withAny, result.cases)} cases had a headline called changed. Planted copies whose band moved: ${moved}.`,
    '',
  );
  if (odd.length > 0)
    lines.push(`A/A calls above ${pct(SPURIOUS_TARGET, 0)}, and the runs in them: ${odd.join('; ')}.`, '');
  return lines;
}

/**
 * The largest between-run standard deviation (log scale) of a headline's runs under which some band calls at
 * most SPURIOUS_TARGET of A/A cases changed and catches GOAL_PLANTED in POWER of them, against `baselines`
 * runs, with a normal spread: the change to catch ÷ (z(1 − target/2) + z(power)) ÷ √(1 + 1/baselines).
 */
export function largestSpreadForGoal(baselines: number): number {
  const change = -Math.log(1 - GOAL_PLANTED);
  const z = normalQuantile(1 - SPURIOUS_TARGET / 2) + normalQuantile(POWER);
  return change / z / Math.sqrt(1 + 1 / baselines);
}

type GoalScenario = { baselines: number; result: ScenarioResult; noNoiseBand: ScenarioResult };
type GoalOutcome = 'met' | 'spread' | 'noise band' | 'missed';

const goalRate = (t: Tally) => {
  const s = summary(t);
  return { ...s, spurious: s.spuriousRate, caught: s.caughtRates[PLANTED.indexOf(GOAL_PLANTED)] ?? 0 };
};
const meets = (t: Tally | undefined) => {
  if (!t) return false;
  const r = goalRate(t);
  return r.spurious <= SPURIOUS_TARGET && r.caught >= POWER;
};

/** One headline against the goal: its rows (one per scenario), what held it back, and its figures. */
function goalOf(id: string, scenarios: readonly GoalScenario[], sd: number | undefined, limit: number) {
  const sdText = sd === undefined ? 'n/a' : pct(logToRelative(sd), 2);
  const rows = scenarios.map((g) => {
    const t = g.result.tallies.get(id) as Tally;
    const [r, r0] = [goalRate(t), goalRate(g.noNoiseBand.tallies.get(id) as Tally)];
    return `| \`${id}\` | ${g.baselines} | ${pct(r.spurious, 2)} | ${pct(r.caught)} | ${signed(worseChange(r.measuredLog, t.better))} | ${pct(r0.spurious, 2)} | ${pct(r0.caught)} | ${sdText} | ${meets(t) ? 'met' : 'missed'} |`;
  });
  const last = scenarios.at(-1) as GoalScenario;
  const t = last.result.tallies.get(id) as Tally;
  const [r, r0] = [goalRate(t), goalRate(last.noNoiseBand.tallies.get(id) as Tally)];
  const outcome: GoalOutcome = scenarios.every((g) => meets(g.result.tallies.get(id)))
    ? 'met'
    : sd !== undefined && sd > limit
      ? 'spread'
      : scenarios.every((g) => meets(g.noNoiseBand.tallies.get(id)))
        ? 'noise band'
        : 'missed';
  const against = `against ${last.baselines} baselines`;
  const figures =
    outcome === 'spread'
      ? `runs' SD ${sdText}; ${pct(r.spurious, 2)} A/A, ${pct(r.caught)} of ${pct(GOAL_PLANTED, 0)} slowdowns caught ${against}, a ${signed(worseChange(r.measuredLog, t.better))} change caught in ${pct(POWER, 0)}`
      : `runs' SD ${sdText}; with noise band 0, ${pct(r0.spurious, 2)} A/A and ${pct(r0.caught)} of ${pct(GOAL_PLANTED, 0)} slowdowns caught ${against}`;
  return { rows, outcome, figures };
}

/**
 * The goal over the scenarios of `minimum` or more baselines: per headline, met or not, and why not: the
 * spread of the set's runs (no band could), the noise band (met without it), or neither.
 */
export function goalSection(
  scenarios: readonly GoalScenario[],
  analyses: readonly Analysis[],
  noiseBand: number,
  minimum: number,
): string[] {
  const title = `#### Goal: ${minimum} or more baseline runs`;
  if (scenarios.length === 0)
    return [
      title,
      '',
      `Not tested: the set has ${analyses.length} runs, too few for ${minimum} baselines and a candidate.`,
      '',
    ];
  const most = Math.max(...scenarios.map((g) => g.baselines));
  const limit = largestSpreadForGoal(most);
  const lines = [
    title,
    '',
    `Target: with ${minimum} or more baseline runs of this set, at most ${pct(SPURIOUS_TARGET, 0)} of A/A cases called changed and a ${pct(GOAL_PLANTED, 0)} slowdown caught in at least ${pct(POWER, 0)}, on every headline. "Noise band 0": the same cases gated with \`noiseBand: 0\` in a thresholds file; the default ±${pct(noiseBand)} lies just inside a ${pct(GOAL_PLANTED, 0)} slowdown's change (${signed(-GOAL_PLANTED)} to ${signed(1 / (1 - GOAL_PLANTED) - 1)}), so for a headline of small spread the noise band alone decides. Runs' SD: the standard deviation of the set's runs' log medians; with a normal spread no band calls at most ${pct(SPURIOUS_TARGET, 0)} of A/A cases changed and catches a ${pct(GOAL_PLANTED, 0)} slowdown in ${pct(POWER, 0)} of them against ${most} baselines unless it is at most ${pct(limit, 2)} (the change ÷ (z(0.995) + z(0.95)) ÷ √(1 + 1/${most})).`,
    '',
    `| headline | baseline runs | A/A: called changed | ${pct(GOAL_PLANTED, 0)} slowdown caught | change caught in ${pct(POWER, 0)} | noise band 0: A/A | noise band 0: ${pct(GOAL_PLANTED, 0)} caught | runs' SD | goal |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const by = new Map<GoalOutcome, string[]>();
  for (const id of (scenarios[0] as GoalScenario).result.tallies.keys()) {
    const sd = runSpread(analyses.flatMap((a) => a.metrics.find((m) => m.metric.id === id)?.stats.value ?? []))?.sdLog;
    const goal = goalOf(id, scenarios, sd, limit);
    lines.push(...goal.rows);
    by.set(goal.outcome, [
      ...(by.get(goal.outcome) ?? []),
      goal.outcome === 'met' ? `\`${id}\`` : `\`${id}\` (${goal.figures})`,
    ]);
  }
  const list = (outcome: GoalOutcome) => by.get(outcome)?.join(', ') ?? 'none';
  lines.push(
    '',
    `- **Met** in every scenario of ${minimum} or more baselines: ${list('met')}.`,
    `- **Impossible for the spread** (runs' SD above ${pct(limit, 2)}): ${list('spread')}.`,
    `- **Missed for the noise band alone** (met with noise band 0): ${list('noise band')}.`,
    `- **Missed, though the spread allows it**: ${list('missed')}.`,
    '',
  );
  return lines;
}

/** The floor in force beside what this set's runs give for one run against one. */
export function floorsTable(analyses: readonly Analysis[]): string[] {
  const lines = [
    '#### Default floors',
    '',
    `The ${pct(BETWEEN_RUN_LEVEL)} between-run half-width of one run against one other, learned from all ${analyses.length} runs, beside the floor in force (\`harness/bench/gate/bands.ts\`):`,
    '',
    '| headline | learned from all runs | floor in force |',
    '|---|---|---|',
  ];
  for (const m of (analyses[0] as Analysis).verdicts) {
    const spread = runSpread(
      analyses.flatMap((a) => a.metrics.find((x) => x.metric.id === m.metric.id)?.stats.value ?? []),
    );
    const learned = spread ? logToRelative(predictionHalfWidthLog(spread, 1, BETWEEN_RUN_LEVEL)) : null;
    lines.push(
      `| \`${m.metric.id}\` | ${learned === null ? 'n/a' : `±${pct(learned, 2)}`} | ±${pct(floorFor(m.metric.id))} |`,
    );
  }
  lines.push('', `Every other ratio: ±${pct(floorFor('any/other/ratio'))}.`);
  return lines;
}
