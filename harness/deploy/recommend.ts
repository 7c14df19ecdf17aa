/**
 * The recommendation as the plan says it: the option verdicts.ts ranks first, the runner-up, and why,
 * in words; or, where none fits, why not and the fewest GPUs.
 */

import type { Measured, MeasuredMode } from '../bench/analysis/which-mode.js';
import { tieText } from '../bench/outputs/which-mode-text.js';
import { termText } from '../core/escape/terminal.js';
import type { ModeDecision } from '../stats/mode-decision.js';
import {
  ISOLATION_ORDER,
  MODE_TEXT,
  type ModeAssessment,
  type PlanAdvice,
  type PlanGpu,
  type PlanRequest,
  type ShareMode,
} from './plan-types.js';
import { fewestGpus, rankOptions, slowdownOf } from './verdicts.js';

/** The verb for one name or several. */
const names1 = (n: number, one: string, many: string) => (n === 1 ? one : many);

const interval = (m: MeasuredMode) =>
  m.slowdownCi ? ` [${m.slowdownCi[0].toFixed(3)}, ${m.slowdownCi[1].toFixed(3)}]` : '';

const byIsolation = () => ISOLATION_ORDER.map((x) => MODE_TEXT[x]).join(', ');

/** Why a measured option ranked where bench's mode decision put it; null where the decision says nothing of it. */
function decidedReason(
  a: ModeAssessment,
  first: boolean,
  measured: Measured | null,
  decision: ModeDecision | null,
): string | null {
  const s = slowdownOf(measured, a);
  const m = a.mode === 'mig' ? undefined : measured?.[a.mode];
  const at = m ? `at ${m.clients} ${a.mode === 'streams' || a.mode === 'green' ? 'tenants' : 'clients'}` : '';
  if (decision?.kind === 'same' && decision.tied.includes(a.mode as Exclude<ShareMode, 'mig'>))
    return a.mode === decision.mode
      ? `fits; ${termText(tieText(decision))
          .replace(/\.$/, '')
          .replace(/^[A-Z](?=[a-z])/, (x) => x.toLowerCase())}`
      : `fits, and measured the same as ${MODE_TEXT[decision.mode]} here (the 95% intervals of the slowdown overlap): ${s?.toFixed(2)}×${m ? `${interval(m)} ${at}` : ''}; isolation put ${MODE_TEXT[decision.mode]} first`;
  if (s === null) return null;
  const skipped = decision?.skipped.find((x) => x.mode === a.mode);
  if (decision && decision.kind !== 'none' && skipped)
    return `fits; its cost is not weighed against the others (${termText(skipped.reason)}), so it is ranked by isolation after them`;
  if (m && decision?.kind === 'cheaper' && a.mode === decision.mode)
    return `fits, and measured the lowest per-model slowdown of the options that fit, its 95% interval below every other's: ${s.toFixed(2)}×${interval(m)} ${at}`;
  if (decision?.kind === 'none')
    return `fits; its cost is not compared (${termText(decision.reason)}), so it is ranked by isolation (${byIsolation()})`;
  if (m)
    return `fits, and ${first ? 'measured the lowest' : 'measured the next lowest'} per-model slowdown of the options that fit: ${s.toFixed(2)}×${decision ? interval(m) : ''} ${at}`;
  return null;
}

/** Why an option ranks where it does: MIG's isolation, the mode decision, or isolation alone where nothing was measured. */
function reason(a: ModeAssessment, first: boolean, measured: Measured | null, decision: ModeDecision | null): string {
  if (a.mode === 'mig')
    return `every model gets its own ${Object.keys(a.geometry ?? {})[0]} slice: hardware isolation of memory, faults and bandwidth, and the count fits MIG's instance limit`;
  return (
    decidedReason(a, first, measured, decision) ??
    `fits; its cost was not measured, so it is ranked by isolation (${byIsolation()})`
  );
}

/** The better isolated options passed over for `best`, by what stopped each: not fitting, or the latency target. */
function passedOver(best: ModeAssessment, ok: ModeAssessment[], assessments: ModeAssessment[]): string[] {
  const better = ISOLATION_ORDER.slice(0, ISOLATION_ORDER.indexOf(best.mode))
    .map((mode) => assessments.find((a) => a.mode === mode))
    .filter((a): a is ModeAssessment => a !== undefined && !ok.includes(a));
  const group = (pick: (a: ModeAssessment) => boolean, what: string) => {
    const names = better.filter(pick).map((a) => MODE_TEXT[a.mode]);
    return names.length > 0 ? [`${names.join(', ')} ${what}`] : [];
  };
  return [
    ...group((a) => !a.fits, names1(better.filter((a) => !a.fits).length, 'does not fit', 'do not fit')),
    ...group(
      (a) => a.fits,
      names1(better.filter((a) => a.fits).length, 'misses the latency target', 'miss the latency target'),
    ),
  ];
}

/** Why no option is recommended: every fit misses the target, or none fits, and then the fewest GPUs. */
function noneFits(
  assessments: ModeAssessment[],
  request: PlanRequest,
  gpu: PlanGpu,
): Pick<PlanAdvice, 'recommendation' | 'why' | 'runnerUp'> {
  if (assessments.some((a) => a.fits))
    return { recommendation: null, why: 'every option that fits misses the latency target', runnerUp: null };
  const spread = fewestGpus(assessments, request.models);
  return {
    recommendation: null,
    why: spread
      ? `the ${request.models} models do not fit one ${gpu.name} in any mode: the fewest is ${spread.gpus} such GPUs, with ${MODE_TEXT[spread.a.mode]} (${spread.a.mostModels} models per GPU)`
      : `the ${request.models} models do not fit one ${gpu.name} in any mode, and no option fits even one model per GPU`,
    runnerUp: null,
  };
}

/** The recommendation over the assessments (rankOptions), the runner-up, and why each, in words. */
export function recommend(
  assessments: ModeAssessment[],
  measured: Measured | null,
  request: PlanRequest,
  gpu: PlanGpu,
): Pick<PlanAdvice, 'recommendation' | 'why' | 'runnerUp'> {
  const { ok, decision } = rankOptions(assessments, measured);
  const [best, second] = ok;
  if (!best) return noneFits(assessments, request, gpu);
  const missed = passedOver(best, ok, assessments);
  return {
    recommendation: best.mode,
    // Ranked by isolation (no measurement decided): say why the better isolated ones were passed over.
    why: `${reason(best, true, measured, decision)}${missed.length > 0 && slowdownOf(measured, best) === null ? `; the better isolated options cannot: ${missed.join('; ')}` : ''}`,
    runnerUp: second ? { mode: second.mode, why: reason(second, false, measured, decision) } : null,
  };
}
