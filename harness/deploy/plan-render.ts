/** plan's answer rendered for each output: the terminal (one screen, or --explain's arithmetic) and --json. */

import { termJson } from '../core/escape/terminal.js';
import { wrapLine } from '../core/wrap.js';
import { SIMULATED_TEXT, simulatedJson } from '../record/simulated.js';
import { serveSummary } from '../serve/markdown.js';
import { adviceText } from './advice-text.js';
import { explainText, planScreen } from './plan-screen.js';
import type { ModelFacts, ServerFacts } from './plan-sources.js';
import type { PlanAdvice } from './plan-types.js';

/** The full arithmetic (--explain, and the README of --out), under the simulator's notice where the run was simulated. */
export function planText(advice: PlanAdvice, facts: ModelFacts): string {
  return `${facts.simulated ? `${SIMULATED_TEXT}\n\n` : ''}${adviceText(advice)}`;
}

/** The terminal's answer, `width` columns wide: the one screen, or with --explain the arithmetic. */
export function planTerminal(advice: PlanAdvice, facts: ModelFacts, width: number, explain: boolean): string {
  if (explain) return explainText(planText(advice, facts), width);
  return `${facts.simulated ? `${wrapLine(SIMULATED_TEXT, width).join('\n')}\n` : ''}${planScreen(advice, facts.measured, width)}`;
}

/** --json: the advice, marked where the run was simulated. */
export function planJson(advice: PlanAdvice, facts: ModelFacts): string {
  return termJson(facts.simulated ? { simulated: facts.simulated, ...advice } : advice);
}

/** A server run's answer: its JSON (--json), or the summary serve prints. */
export function serverOutput(facts: ServerFacts, json: boolean): string {
  const { run, analysis, answer } = facts;
  return json ? termJson({ ...simulatedJson(run.fingerprint), runId: run.id, ...answer }) : serveSummary(run, analysis);
}
