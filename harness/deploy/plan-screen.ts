/**
 * plan's answer on one screen (80×24): the option, why, the runner-up, what breaks and the binding
 * limit. The arithmetic behind each line is adviceText's, printed with --explain.
 */

import type { Measured, MeasuredMode } from '../bench/analysis/which-mode.js';
import { termText } from '../core/escape/terminal.js';
import { TERMINAL_COLUMNS, wrapLine } from '../core/wrap.js';
import {
  gib,
  MODE_TEXT,
  type ModeAssessment,
  type PlanAdvice,
  type PlanRequest,
  type ShareMode,
} from './plan-types.js';

/** Lines of the screen the answer must fit, with the shell's prompt below it. */
export const SCREEN_LINES = 23;

const inProcess = (mode: ShareMode) => mode === 'streams' || mode === 'green';

/** What breaks, in a line each: the shortest form of the assessment's risks, with the run's numbers where it has them. */
function breaksOf(a: ModeAssessment, m: MeasuredMode | null | undefined, models: number): string[] {
  const gil =
    m?.stepHostSoloUs != null && m.stepHostContendedUs != null
      ? `one GIL: host time per request ${m.stepHostSoloUs.toFixed(1)} µs alone, ${m.stepHostContendedUs.toFixed(1)} µs with ${m.clients} tenants`
      : 'one GIL: host time per request grows with the models';
  const oneProcess = [
    `one fault domain: a fault or out-of-memory in one model ends all ${models}`,
    gil,
    'one deployment: a model is updated or restarted with all the others',
  ];
  // The plan's own warnings about this request (an MPS cap below the share asked), kept whole.
  const capped = a.breaks.filter((b) => b.startsWith('each client'));
  switch (a.mode) {
    case 'streams':
      return [...oneProcess, 'no SM or memory limits between models: a busy one slows the others'];
    case 'green':
      return [...oneProcess, 'SMs isolated, memory and faults not; an idle SM group stays idle'];
    case 'timeslice':
      return [
        'latency: each request waits while other processes hold the GPU',
        'no memory isolation or limits: one process can take what others need',
      ];
    case 'mps':
      return [
        ...capped,
        'no fault isolation: a client that faults can take the others down',
        'one daemon per GPU: if it dies, every client loses the GPU',
      ];
    case 'mig':
      return [
        'fixed shapes: what a model does not use of its slice is stranded',
        'a new geometry needs the GPU drained and reset (minutes)',
      ];
  }
}

/** The binding limit's name, without its arithmetic: "memory", "the MPS client limit", "SM groups". */
function limitName(a: ModeAssessment): string {
  if (a.mode === 'mig') return 'MIG slices';
  const line = a.reasons.find((r) => r.startsWith('binding limit: ')) ?? '';
  const name = line.slice('binding limit: '.length).replace(/ \(.*$|, at \d+ models.*$/, '');
  return name.startsWith('SMs of its own') ? 'SM groups' : name;
}

/** The recommendation's binding limit: its name, where it binds, and the soft throughput limit when it comes first. */
function bindingText(a: ModeAssessment, request: PlanRequest): string {
  const smPct = request.smPct;
  const line = a.reasons.find((r) => r.startsWith('binding limit: ')) ?? '';
  const busy = Math.floor(100 / smPct);
  const throughput =
    a.mode !== 'mig' && busy < a.mostModels
      ? `; before it, throughput: with all busy, only ${busy} get their ${smPct}% of the SMs`
      : '';
  const memory = a.reasons.find((r) => r.startsWith('memory: '));
  const need = memory ? /= ([\d.]+ GiB) of ([\d.]+ GiB) usable/.exec(memory) : null;
  const used = need && limitName(a) === 'memory' ? ` (${request.models} need ${need[1]} of ${need[2]} usable)` : '';
  if (a.mode === 'mig' || !line) return `binding limit: ${limitName(a)}, at ${a.mostModels} models${throughput}`;
  return `binding limit: ${limitName(a)}, at ${a.mostModels} models${used}${throughput}`;
}

/** Where the costs come from, and whether they were measured at fewer clients than asked. */
function costsText(measured: Measured | null, a: PlanAdvice): string {
  if (!measured) return 'costs: not measured (no --run): options ranked by isolation';
  const run = termText(measured.source.replace(/ \(.*\)$/, ''));
  const m = a.recommendation && a.recommendation !== 'mig' ? measured[a.recommendation] : null;
  if (!m) return `costs: ${run}`;
  const who = inProcess(a.recommendation as ShareMode) ? 'tenants' : 'clients';
  return `costs: ${run}, at ${m.clients} ${who}${m.extrapolated ? ` (fewer than the ${a.request.models} asked: more cost more)` : ''}`;
}

/** Why, with the slowdown's 95% interval where the run has one and the reason does not quote it. */
function whyText(a: PlanAdvice, measured: Measured | null): string {
  const mode = a.recommendation;
  const m = mode && mode !== 'mig' ? measured?.[mode] : null;
  const why = a.why.replace(/^fits, and /, '').replace(/^fits; /, '');
  if (!m?.slowdownCi || why.includes('[')) return `why: ${why}`;
  const [lo, hi] = m.slowdownCi;
  return `why: ${why} (95% interval [${lo.toFixed(3)}, ${hi.toFixed(3)}])`;
}

/** The runner-up, or why there is none: each other option's most models and what limits it. */
function runnerUpText(a: PlanAdvice): string {
  if (a.runnerUp) {
    const strip = (why: string) => why.replace(/^fits, and /, '').replace(/^fits; /, '');
    const why = strip(a.runnerUp.why);
    // Ranked by isolation for the reason the recommendation was: said once, on the why line.
    const same = a.recommendation !== null && why === strip(a.why);
    return `runner-up: ${MODE_TEXT[a.runnerUp.mode]}: ${same ? `fits; ranked after ${MODE_TEXT[a.recommendation as ShareMode]} for the same reason` : why}`;
  }
  const others = a.assessments
    .filter((x) => x.mode !== a.recommendation)
    .map((x) => `${MODE_TEXT[x.mode]} ${x.mostModels} (${limitName(x)})`);
  return `runner-up: none; the most models each other option fits: ${others.join(', ')}`;
}

/** plan's answer, each line at most `width` columns. */
export function planScreen(a: PlanAdvice, measured: Measured | null, width = TERMINAL_COLUMNS): string {
  const r = a.request;
  const best = a.assessments.find((x) => x.mode === a.recommendation) ?? null;
  const lines = [
    `plan: ${r.models} models × ${gib(r.memGiB)}, ${r.smPct}% of the SMs each${r.sloP99Ms !== null ? `, p99 ≤ ${r.sloP99Ms} ms` : ''}, on one ${a.gpu.name}`,
    costsText(measured, a),
    '',
  ];
  if (best) {
    const m = best.mode === 'mig' ? null : measured?.[best.mode];
    lines.push(
      `use: ${MODE_TEXT[best.mode]}`,
      whyText(a, measured),
      runnerUpText(a),
      'what breaks:',
      ...breaksOf(best, m, r.models).map((b) => `  - ${b}`),
      bindingText(best, r),
      // The latency target as --explain says it, where it limits nothing or binds later than the limit above.
      ...(r.sloP99Ms !== null && best.slo ? [`p99 ≤ ${r.sloP99Ms} ms: ${best.slo.text}`] : []),
    );
  } else {
    lines.push(`use: none fits: ${a.why}`);
  }
  lines.push('', best ? 'the arithmetic: --explain; the files to deploy it: --out <dir>' : 'the arithmetic: --explain');
  const folded = lines.flatMap((l) => wrapLine(l, width));
  // One screen whatever the reasons' length: the blank lines go first.
  return `${(folded.length > SCREEN_LINES ? folded.filter((l) => l !== '') : folded).join('\n')}\n`;
}

/** The full arithmetic (adviceText), folded to the terminal's width. */
export function explainText(text: string, width = TERMINAL_COLUMNS): string {
  return `${text
    .replace(/\n$/, '')
    .split('\n')
    .flatMap((l) => wrapLine(l, width))
    .join('\n')}\n`;
}
